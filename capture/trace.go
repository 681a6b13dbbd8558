package capture

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"reef/units"
	"reef/wire"
)

// TraceOptions tune Trace.
type TraceOptions struct {
	// MPDUnit converts the 16-bit MPD field into time (0: print raw units).
	MPDUnit units.Time
	// ReefOnly skips frames that are not reef packets.
	ReefOnly bool
}

// Trace reads a pcapng (or pcap) stream and prints one line per packet: time since the
// first packet, addresses, and for reef packets the header fields and INT values
// (MPD, hop records). It returns the number of packets read.
func Trace(r io.Reader, w io.Writer, opt TraceOptions) (int, error) {
	src, err := openTrace(r)
	if err != nil {
		return 0, err
	}
	var (
		eth    layers.Ethernet
		ip     layers.IPv4
		udp    layers.UDP
		reef   Reef
		parser = gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip, &udp, &reef)
		types  []gopacket.LayerType
		first  time.Time
		n      int
	)
	parser.IgnoreUnsupported = true
	for {
		data, ci, err := src.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("capture: packet %d: %w", n+1, err)
		}
		n++
		if first.IsZero() {
			first = ci.Timestamp
		}
		_ = parser.DecodeLayers(data, &types)
		line := formatPacket(ci.Timestamp.Sub(first), types, &eth, &ip, &reef, len(data), opt)
		if line == "" {
			continue
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return n, err
		}
	}
}

func formatPacket(at time.Duration, types []gopacket.LayerType, eth *layers.Ethernet, ip *layers.IPv4, r *Reef, size int, opt TraceOptions) string {
	has := func(t gopacket.LayerType) bool {
		for _, x := range types {
			if x == t {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%12.6f ", at.Seconds()*1e3) // milliseconds
	switch {
	case has(LayerTypeReef):
		kind := map[uint8]string{wire.TypeData: "DATA", wire.TypeAck: "ACK", wire.TypeCNP: "CNP"}[r.Type]
		fmt.Fprintf(&b, "%s > %s %s flow=%d seq=%d", ip.SrcIP, ip.DstIP, kind, r.FlowID, r.Seq)
		if r.Type == wire.TypeAck {
			fmt.Fprintf(&b, " ack=%d", r.Ack)
		}
		fmt.Fprintf(&b, " len=%d ecn=%s mpd=%s", size, ecnName(ip.TOS&3), mpd(r.MPD, opt.MPDUnit))
		if r.Type == wire.TypeAck {
			fmt.Fprintf(&b, " echo_mpd=%s turnaround=%dns", mpd(r.EchoMPD, opt.MPDUnit), r.Turnaround)
			if r.Flags&wire.FlagECE != 0 {
				b.WriteString(" ECE")
			}
		}
		for i, s := range r.Sacks {
			fmt.Fprintf(&b, " sack%d=[%d,%d)", i, s.Start, s.End)
		}
		for i, h := range r.Hops {
			fmt.Fprintf(&b, " hop%d={ts=%d tx=%d q=%dB rate=%dkbps}", i, h.TS, h.TxBytes, h.QLen, h.RateKbps)
		}
	case has(layers.LayerTypeIPv4):
		if opt.ReefOnly {
			return ""
		}
		fmt.Fprintf(&b, "%s > %s %s len=%d ecn=%s ttl=%d", ip.SrcIP, ip.DstIP, ip.Protocol, size, ecnName(ip.TOS&3), ip.TTL)
	default:
		if opt.ReefOnly {
			return ""
		}
		if q, ok := wire.ParsePause(eth.Contents); ok || (len(types) > 0 && eth.EthernetType == wire.EtherTypeMACControl) {
			fmt.Fprintf(&b, "%s PFC pause quanta=%d", eth.SrcMAC, q)
		} else {
			fmt.Fprintf(&b, "%s > %s ethertype=%#04x len=%d", eth.SrcMAC, eth.DstMAC, uint16(eth.EthernetType), size)
		}
	}
	return b.String()
}

func ecnName(c uint8) string {
	return [...]string{"not-ect", "ect1", "ect0", "ce"}[c&3]
}

func mpd(v uint16, unit units.Time) string {
	if unit <= 0 {
		return fmt.Sprint(v)
	}
	return (units.Time(v) * unit).String()
}

type packetSource interface {
	ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

// openTrace accepts pcapng and classic pcap.
func openTrace(r io.Reader) (packetSource, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("capture: read trace: %w", err)
	}
	if string(magic) == "\x0a\x0d\x0d\x0a" {
		ng, err := pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("capture: pcapng: %w", err)
		}
		return ng, nil
	}
	pr, err := pcapgo.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("capture: not a pcapng or pcap file: %w", err)
	}
	return pr, nil
}
