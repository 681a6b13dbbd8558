package transport

import (
	"fmt"

	"reef/units"
	"reef/wire"
)

// Tuning holds the loss-recovery knobs shared by every flow of a host. Times are in
// emulator time: scale them with the experiment's time scale like any other time
// (cc.ScaleParams(&tuning, τ) does it).
type Tuning struct {
	// MinRTO is the least the retransmission timeout exceeds the smoothed RTT by, as
	// Linux's tcp_rto_min (default 100µs, htsim's Swift value); the margin is also at
	// least two base RTTs and srtt itself (see Sender.RTO). InitRTO is the timeout
	// before the first RTT sample (default 1ms, raised to three base RTTs when the
	// flow's base RTT is known); MaxRTO caps the exponential backoff (default 100ms).
	MinRTO  units.Time `yaml:"min_rto" json:"min_rto"`
	InitRTO units.Time `yaml:"init_rto" json:"init_rto"`
	MaxRTO  units.Time `yaml:"max_rto" json:"max_rto"`
	// ReorderFraction × srtt is the RACK reorder window (default 0.5); MinReorderWindow
	// bounds it from below (default 10µs).
	ReorderFraction  float64    `yaml:"reorder_fraction" json:"reorder_fraction"`
	MinReorderWindow units.Time `yaml:"min_reorder_window" json:"min_reorder_window"`
	// NoECT sends data packets Not-ECT (switches then cannot mark them). Default: ECT(0).
	NoECT bool `yaml:"no_ect" json:"no_ect"`
	// DupThresh, when > 0, adds classic hole detection beside RACK: a packet (first
	// transmission) is also lost once DupThresh packets numbered above it have been
	// acknowledged. 3 reproduces the Swift baseline of the MSwift paper (mswift.md §3.4:
	// spurious retransmissions under spraying); 0 (default) leaves only RACK.
	DupThresh int `yaml:"dup_thresh" json:"dup_thresh"`
}

// DefaultTuning returns the defaults documented on Tuning.
func DefaultTuning() Tuning {
	return Tuning{
		MinRTO:           100 * units.Microsecond,
		InitRTO:          units.Millisecond,
		MaxRTO:           100 * units.Millisecond,
		ReorderFraction:  0.5,
		MinReorderWindow: 10 * units.Microsecond,
	}
}

// Validate names the first bad field and its unit.
func (t Tuning) Validate() error {
	switch {
	case t.MinRTO <= 0:
		return fmt.Errorf("transport: min_rto must be > 0, got %v", t.MinRTO)
	case t.InitRTO < t.MinRTO:
		return fmt.Errorf("transport: init_rto must be ≥ min_rto (%v), got %v", t.MinRTO, t.InitRTO)
	case t.MaxRTO < t.InitRTO:
		return fmt.Errorf("transport: max_rto must be ≥ init_rto (%v), got %v", t.InitRTO, t.MaxRTO)
	case t.ReorderFraction < 0:
		return fmt.Errorf("transport: reorder_fraction must be ≥ 0 (fraction of srtt), got %g", t.ReorderFraction)
	case t.MinReorderWindow < 0:
		return fmt.Errorf("transport: min_reorder_window must be ≥ 0, got %v", t.MinReorderWindow)
	case t.DupThresh < 0:
		return fmt.Errorf("transport: dup_thresh must be ≥ 0 (packets; 0 = off), got %d", t.DupThresh)
	}
	return nil
}

// AckPolicy is how a receiver acknowledges a flow's data.
type AckPolicy struct {
	// Every acknowledges every Every-th packet (0 or 1: every packet).
	Every int `yaml:"every" json:"every"`
	// Delay is the longest an arrived packet waits for its ACK (0: no timer; with
	// Every > 1 a zero Delay means "only count").
	Delay units.Time `yaml:"delay" json:"delay"`
}

// Validate checks the policy fits its wire encoding.
func (p AckPolicy) Validate() error {
	if p.Every < 0 || p.Every > 0xffff {
		return fmt.Errorf("transport: ack every must be in [0, 65535] packets, got %d", p.Every)
	}
	if p.Delay < 0 || p.Delay > 0xffffffff {
		return fmt.Errorf("transport: ack delay must be in [0, 4.29s], got %v", p.Delay)
	}
	return nil
}

// MaxCNPInterval is the longest CNP interval the data packets can carry.
const MaxCNPInterval = 0xffff * units.Microsecond

// encodeRx packs what the receiver must know into a data packet's (otherwise unused)
// Ack field: bits 0-15 the ACK policy's Every, bits 16-47 its Delay in ns, bits 48-63
// the CNP interval in µs (0: no CNPs; a non-zero interval below 1µs is sent as 1µs).
func encodeRx(p AckPolicy, cnp units.Time) uint64 {
	us := uint64(0)
	if cnp > 0 {
		us = uint64(min(max((cnp+units.Microsecond-1)/units.Microsecond, 1), 0xffff))
	}
	return uint64(uint16(p.Every)) | uint64(uint32(p.Delay))<<16 | us<<48
}

func decodeRx(v uint64) (AckPolicy, units.Time) {
	return AckPolicy{Every: int(v & 0xffff), Delay: units.Time((v >> 16) & 0xffffffff)},
		units.Time(v>>48) * units.Microsecond
}

// MSS is the payload a data packet of a flow with hopCap INT slots carries when frames
// are at most mtu bytes of IP packet (Ethernet header excluded).
func MSS(mtu int, hopCap int) units.Bytes {
	return units.Bytes(mtu - wire.IPv4Len - wire.UDPLen - wire.HeaderLen - hopCap*wire.HopLen)
}

// DataFrameLen is the Ethernet frame length of a data packet with payload bytes.
func DataFrameLen(payload units.Bytes, hopCap int) int {
	return wire.Overhead + hopCap*wire.HopLen + int(payload)
}

// Transmit describes a frame PollTransmit wrote.
type Transmit struct {
	// Len is the frame length in bytes (on the wire: it may exceed the buffer of a frame
	// held truncated).
	Len int
	// ECN is the IPv4 ECN codepoint the frame carries; INT is true when it carries INT
	// hop slots for switches to fill.
	ECN uint8
	INT bool
	// Ack is true for ACKs, false for data; Seq is the data packet number (or the
	// acknowledged packet's), Retx true for a retransmission.
	Ack  bool
	Seq  uint64
	Retx bool
}
