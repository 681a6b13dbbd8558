// Package none registers "none": no congestion control. The flow keeps as much in flight
// as the transport allows and sends at the NIC's line rate (or at a fixed rate), so only
// the fabric (tail drop or PFC pauses) limits it. It is the "PFC only" baseline of
// TIMELY's Table 1 (RDMA over a lossless fabric with no end-to-end control), and with a
// rate the constant-rate UDP elephant of the MSwift scenarios.
//
// It reacts to nothing: ACKs, ECN echoes, RTTs, INT records, losses and timeouts leave
// it unchanged. Like every algorithm it never reads a clock and keeps no timers.
//
// # Parameters
//
// See Params: max_window (bytes, default 0 = no cap) and rate (bit/s, default 0 = the
// NIC's line rate); cc.ScaleParams divides a set rate by the time scale like any rate.
//
// # Departures from the paper
//
// None: it is a baseline, not a published algorithm. Window reports units.MaxBytes when
// max_window is 0, so only the transport's own limits apply.
package none

import (
	"fmt"

	"reef/cc"
	"reef/units"
)

// Params configure "none".
type Params struct {
	// MaxWindow caps the bytes in flight; 0 means no cap (the transport's own limits
	// apply). Default 0.
	MaxWindow units.Bytes `yaml:"max_window"`
	// Rate paces the flow at a constant rate (bit/s), like a UDP background flow; 0
	// means the NIC's line rate. Default 0.
	Rate units.Rate `yaml:"rate"`
}

// Validate names the first bad field.
func (p *Params) Validate() error {
	if p.MaxWindow < 0 {
		return fmt.Errorf("none: max_window must be ≥ 0 bytes (0 = no cap), got %v", p.MaxWindow)
	}
	if p.Rate < 0 {
		return fmt.Errorf("none: rate must be ≥ 0 bit/s (0 = line rate), got %v", p.Rate)
	}
	return nil
}

func init() {
	cc.Register(cc.SpecOf("none",
		"no congestion control: line rate, unlimited window (the PFC-only baseline)",
		func() *Params { return &Params{} },
		func(_ cc.Env, p *Params) (*None, error) { return &None{window: p.MaxWindow, rate: p.Rate}, nil }))
}

// None is the algorithm: it ignores every signal.
type None struct {
	cc.NoTimer // no timers

	window units.Bytes
	rate   units.Rate
}

// OnSend does nothing.
func (n *None) OnSend(units.Time, uint64, units.Bytes) {}

// OnFeedback does nothing.
func (n *None) OnFeedback(units.Time, *cc.Feedback) {}

// OnLoss does nothing.
func (n *None) OnLoss(units.Time, units.Bytes) {}

// OnTimeout does nothing.
func (n *None) OnTimeout(units.Time) {}

// Window is the configured cap, or unlimited.
func (n *None) Window() units.Bytes {
	if n.window > 0 {
		return n.window
	}
	return units.MaxBytes
}

// Rate is the configured constant rate, or 0 (paced only by the NIC).
func (n *None) Rate() units.Rate { return n.rate }
