// Package mycc is your congestion-control algorithm, my-dctcp. As handed out it is
// ECN-Reno: it halves its window once per round trip whenever an ACK echoes a CE mark.
// Task 3 turns it into DCTCP: keep α, a moving average of the fraction of marked
// bytes, update it once per window of ACKs, and cut the window by α/2 instead of 1/2.
//
// Build a reef that has it, and check your lab with that reef:
//
//	reef build --with ./mycc --src REEF_CHECKOUT -o bin/reef-mine
//	bin/reef-mine run mycc.yaml --backend sim
//	bin/reef-mine lab check incast-dctcp --answers .
//
// Like every reef algorithm it is a deterministic state machine (cc.Algorithm): it
// never reads a clock, sleeps or sends; the transport passes now to every call.
package mycc

import (
	"fmt"

	"reef/cc"
	"reef/units"
)

// Name is the algorithm's name in experiment files (cc: my-dctcp).
const Name = "my-dctcp"

// Params are my-dctcp's parameters.
type Params struct {
	// G is the weight of the newest window's marked fraction in α (DCTCP's g). Default
	// 1/16.
	G float64 `yaml:"g"`
	// InitWindow and MinWindow are in packets. Defaults 10 and 2.
	InitWindow float64 `yaml:"init_window"`
	MinWindow  float64 `yaml:"min_window"`
}

// DefaultParams returns the defaults documented on Params.
func DefaultParams() *Params { return &Params{G: 1.0 / 16, InitWindow: 10, MinWindow: 2} }

// Validate names the first bad field.
func (p *Params) Validate() error {
	switch {
	case !(p.G > 0 && p.G <= 1):
		return fmt.Errorf("%s: g must be in (0, 1], got %g", Name, p.G)
	case !(p.InitWindow > 0):
		return fmt.Errorf("%s: init_window must be > 0 packets, got %g", Name, p.InitWindow)
	case !(p.MinWindow > 0):
		return fmt.Errorf("%s: min_window must be > 0 packets, got %g", Name, p.MinWindow)
	}
	return nil
}

func init() {
	cc.Register(cc.SpecOf(Name, "your algorithm (lab incast-dctcp): ECN-Reno until you make it DCTCP", DefaultParams, New))
}

// MyCC is one flow's state.
type MyCC struct {
	cc.NoTimer

	p        Params
	mss      float64
	cwnd     float64 // bytes
	min      float64 // bytes
	sndNxt   uint64  // one past the highest packet number sent
	holdTill uint64  // no second cut until a packet sent after the last one is acked

	// TODO task 3: what DCTCP keeps besides the window: α, and the bytes acked and
	// the bytes acked with ECE in the current observation window (and where that
	// window ends).
}

// New builds my-dctcp for one flow.
func New(env cc.Env, p *Params) (*MyCC, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if env.MSS <= 0 {
		return nil, fmt.Errorf("%s: MSS must be > 0, got %v", Name, env.MSS)
	}
	mss := float64(env.MSS)
	return &MyCC{p: *p, mss: mss, cwnd: p.InitWindow * mss, min: p.MinWindow * mss}, nil
}

// OnSend notes the highest packet number sent.
func (a *MyCC) OnSend(_ units.Time, seq uint64, _ units.Bytes) {
	a.sndNxt = max(a.sndNxt, seq+1)
}

// OnFeedback grows the window by one packet per window of ACKs, and cuts it on an
// ECN-echo, once per round trip.
func (a *MyCC) OnFeedback(_ units.Time, fb *cc.Feedback) {
	// TODO task 3: count fb.AckedBytes, and the marked ones (fb.ECE); when an ACK
	// covers the end of the observation window, update α ← (1 − g)·α + g·F with F
	// the marked fraction, and start the next window at a.sndNxt.
	if fb.ECE {
		a.cut(fb.AckSeq)
		return
	}
	a.cwnd += a.mss * float64(fb.AckedBytes) / a.cwnd
}

// OnLoss cuts the window, once per round trip.
func (a *MyCC) OnLoss(_ units.Time, _ units.Bytes) { a.cut(a.holdTill) }

// OnTimeout drops the window to its minimum.
func (a *MyCC) OnTimeout(units.Time) { a.cwnd, a.holdTill = a.min, a.sndNxt }

func (a *MyCC) cut(ackSeq uint64) {
	if ackSeq < a.holdTill {
		return // this round trip's cut is done
	}
	a.cwnd = max(a.cwnd/2, a.min) // TODO task 3: cut by α/2, not by half
	a.holdTill = a.sndNxt
}

// Window is the congestion window in payload bytes.
func (a *MyCC) Window() units.Bytes { return units.Bytes(a.cwnd) }

// Rate is 0: the NIC paces the flow.
func (a *MyCC) Rate() units.Rate { return 0 }
