package main

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The reef header as docs/wire.md specifies it, written from the document alone: the
// fixed 56 bytes, SACK blocks (never sent here) and INT hop slots, big endian.
const (
	headerLen = 56
	sackLen   = 16
	hopLen    = 24
	maxHops   = 8
	reefPort  = 5140

	typeData = 1
	typeAck  = 2

	flagINT         = 0x02
	flagMPDSeen     = 0x10
	flagEchoMPDSeen = 0x20
)

// header is the part of the reef header this program uses.
type header struct {
	Type, Flags     uint8
	MPD             uint16
	FlowID          uint32
	Seq, Ack        uint64
	TS, EchoTS      int64
	EchoMPD         uint16
	NSack, HopCap   uint8
	PathHops        uint8
	Hops            []hop // the filled slots
	PayloadLen      uint16
	sackAndHopBytes int
}

// hop is one INT record a switch in hpcc mode wrote.
type hop struct {
	TS       int64
	TxBytes  uint64
	QLen     uint32
	RateKbps uint32
}

// encode writes h with HopCap slots (the first len(h.Hops) filled) and no payload.
func (h *header) encode() []byte {
	b := make([]byte, headerLen+int(h.HopCap)*hopLen)
	be := binary.BigEndian
	b[0], b[1] = h.Type, h.Flags
	be.PutUint16(b[2:], h.MPD)
	be.PutUint32(b[4:], h.FlowID)
	be.PutUint64(b[8:], h.Seq)
	be.PutUint64(b[16:], h.Ack)
	be.PutUint64(b[24:], uint64(h.TS))
	be.PutUint64(b[32:], uint64(h.EchoTS))
	be.PutUint16(b[48:], h.EchoMPD)
	b[51], b[52], b[53] = h.HopCap, uint8(len(h.Hops)), h.PathHops
	for i, hp := range h.Hops {
		o := headerLen + i*hopLen
		be.PutUint64(b[o:], uint64(hp.TS))
		be.PutUint64(b[o+8:], hp.TxBytes)
		be.PutUint32(b[o+16:], hp.QLen)
		be.PutUint32(b[o+20:], hp.RateKbps)
	}
	return b
}

// decode parses a reef header from a UDP payload.
func decode(b []byte) (*header, error) {
	if len(b) < headerLen {
		return nil, errors.New("shorter than a reef header")
	}
	be := binary.BigEndian
	h := &header{Type: b[0], Flags: b[1], MPD: be.Uint16(b[2:]), FlowID: be.Uint32(b[4:]),
		Seq: be.Uint64(b[8:]), Ack: be.Uint64(b[16:]), TS: int64(be.Uint64(b[24:])), EchoTS: int64(be.Uint64(b[32:])),
		EchoMPD: be.Uint16(b[48:]), NSack: b[50], HopCap: b[51], PathHops: b[53], PayloadLen: be.Uint16(b[54:])}
	nhops := int(b[52])
	if h.Type < typeData || h.Type > 3 || h.NSack > 4 || h.HopCap > maxHops || nhops > int(h.HopCap) {
		return nil, fmt.Errorf("not a reef header (type %d, %d SACK blocks, %d/%d hops)", h.Type, h.NSack, nhops, h.HopCap)
	}
	h.sackAndHopBytes = int(h.NSack)*sackLen + int(h.HopCap)*hopLen
	if len(b) < headerLen+h.sackAndHopBytes {
		return nil, errors.New("shorter than its SACK blocks and hop slots")
	}
	for i := range nhops {
		o := headerLen + int(h.NSack)*sackLen + i*hopLen
		h.Hops = append(h.Hops, hop{TS: int64(be.Uint64(b[o:])), TxBytes: be.Uint64(b[o+8:]),
			QLen: be.Uint32(b[o+16:]), RateKbps: be.Uint32(b[o+20:])})
	}
	return h, nil
}
