// Package capture is reef's trace tooling: a gopacket layer that decodes the reef header
// and its INT (so any gopacket program can read reef traces), a pcapng writer for frames
// captured from a lab or emitted by the sim backend, and the per-packet trace printer
// behind `reef trace`. The Wireshark dissector in dissector/reef.lua shows the same
// fields in Wireshark and tshark.
//
// This package is not on the forwarding path: switches and hosts hand-parse fixed offsets
// (package wire); gopacket is for tools and tests.
package capture

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"reef/wire"
)

// LayerTypeReef is the gopacket layer type of the reef header (UDP port wire.Port).
var LayerTypeReef = gopacket.RegisterLayerType(2140, gopacket.LayerTypeMetadata{
	Name: "Reef", Decoder: gopacket.DecodeFunc(decodeReef),
})

func init() {
	layers.RegisterUDPPortLayerType(layers.UDPPort(wire.Port), LayerTypeReef)
}

// Reef is the decoded reef header, SACK blocks and filled INT hop records.
type Reef struct {
	layers.BaseLayer
	wire.Header
}

// LayerType returns LayerTypeReef.
func (r *Reef) LayerType() gopacket.LayerType { return LayerTypeReef }

// CanDecode returns LayerTypeReef.
func (r *Reef) CanDecode() gopacket.LayerClass { return LayerTypeReef }

// NextLayerType is the payload.
func (r *Reef) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

// DecodeFromBytes decodes a reef header and everything after it up to the payload.
func (r *Reef) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := r.Header.DecodeTruncated(data); err != nil {
		df.SetTruncated()
		return err
	}
	n := r.Header.Len()
	end := n + int(r.PayloadLen)
	if end > len(data) {
		df.SetTruncated() // captured with its headers only (the sim's frames)
		end = len(data)
	}
	r.BaseLayer = layers.BaseLayer{Contents: data[:n], Payload: data[n:end]}
	return nil
}

func decodeReef(data []byte, p gopacket.PacketBuilder) error {
	r := &Reef{}
	if err := r.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(r)
	return p.NextDecoder(gopacket.LayerTypePayload)
}
