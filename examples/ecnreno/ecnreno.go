// Package ecnreno is an example of a congestion-control algorithm that lives outside
// reef, in its own module, and plugs into reef without a fork: a window AIMD that adds
// AI packets per round trip and multiplies the window by Beta on an ECN-echo or a loss,
// at most once per round trip (Reno's reaction, driven by ECN).
//
// It registers itself as "ecn-reno" when imported. Build a reef that has it with
//
//	reef build --with ./examples/ecnreno -o bin/reef-ecnreno
//	bin/reef-ecnreno algorithms ecn-reno
//	bin/reef-ecnreno run examples/ecnreno/experiment.yaml --backend sim
//
// Like every reef algorithm it is a deterministic state machine (cc.Algorithm): it never
// reads a clock, sleeps or sends; the transport passes now to every call.
package ecnreno

import (
	"fmt"
	"math"

	"reef/cc"
	"reef/units"
)

// Name is the algorithm's name in experiment files (cc: ecn-reno).
const Name = "ecn-reno"

// Params are ecn-reno's parameters.
type Params struct {
	// AI is the additive increase, packets per round trip (> 0). Default 1.
	AI float64 `yaml:"ai"`
	// Beta is the window's multiplier on an ECN-echo or a loss (in (0, 1)). Default 0.5.
	Beta float64 `yaml:"beta"`
	// InitWindow is the initial window in packets; 0 means one BDP of the flow's path.
	// Default 10.
	InitWindow float64 `yaml:"init_window"`
	// MinWindow is the smallest window in packets (> 0). Default 1.
	MinWindow float64 `yaml:"min_window"`
}

// DefaultParams returns the defaults documented on Params.
func DefaultParams() *Params { return &Params{AI: 1, Beta: 0.5, InitWindow: 10, MinWindow: 1} }

// Validate names the first bad field and its unit.
func (p *Params) Validate() error {
	switch {
	case !(p.AI > 0) || math.IsInf(p.AI, 0):
		return fmt.Errorf("%s: ai must be > 0 (packets per RTT), got %g", Name, p.AI)
	case !(p.Beta > 0 && p.Beta < 1):
		return fmt.Errorf("%s: beta must be in (0, 1), got %g", Name, p.Beta)
	case !(p.InitWindow >= 0) || math.IsInf(p.InitWindow, 0):
		return fmt.Errorf("%s: init_window must be ≥ 0 (packets; 0 = one BDP), got %g", Name, p.InitWindow)
	case !(p.MinWindow > 0) || math.IsInf(p.MinWindow, 0):
		return fmt.Errorf("%s: min_window must be > 0 (packets), got %g", Name, p.MinWindow)
	}
	return nil
}

func init() {
	cc.Register(cc.SpecOf(Name, "example out-of-tree algorithm: window AIMD, cut by beta on ECN-echo or loss once per RTT",
		DefaultParams, New))
}

// ECNReno is one flow's state.
type ECNReno struct {
	cc.NoTimer // no timers of its own

	p        Params
	mss      float64
	cwnd     float64 // bytes
	min      float64 // bytes
	sndNxt   uint64  // one past the highest packet number sent
	holdTill uint64  // no second cut until a packet sent after the last one is acked
}

// New builds ecn-reno for one flow.
func New(env cc.Env, p *Params) (*ECNReno, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if env.MSS <= 0 {
		return nil, fmt.Errorf("%s: MSS must be > 0, got %v", Name, env.MSS)
	}
	mss := float64(env.MSS)
	w := p.InitWindow * mss
	if p.InitWindow == 0 {
		w = max(float64(env.BDP()), mss)
	}
	return &ECNReno{p: *p, mss: mss, cwnd: w, min: p.MinWindow * mss}, nil
}

// OnSend notes the highest packet number sent.
func (a *ECNReno) OnSend(_ units.Time, seq uint64, _ units.Bytes) {
	a.sndNxt = max(a.sndNxt, seq+1)
}

// OnFeedback grows the window by AI packets per window of ACKs, or cuts it on an
// ECN-echo (or a CNP), once per round trip.
func (a *ECNReno) OnFeedback(_ units.Time, fb *cc.Feedback) {
	if fb.ECE || fb.Kind == cc.CNP {
		a.cut(fb.AckSeq)
		return
	}
	a.cwnd += a.p.AI * a.mss * float64(fb.AckedBytes) / a.cwnd
}

// OnLoss cuts the window, once per round trip.
func (a *ECNReno) OnLoss(_ units.Time, _ units.Bytes) { a.cut(a.holdTill) }

// OnTimeout drops the window to its minimum.
func (a *ECNReno) OnTimeout(units.Time) { a.cwnd, a.holdTill = a.min, a.sndNxt }

func (a *ECNReno) cut(ackSeq uint64) {
	if ackSeq < a.holdTill {
		return // this round trip's cut is done
	}
	a.cwnd = max(a.cwnd*a.p.Beta, a.min)
	a.holdTill = a.sndNxt
}

// Window is the congestion window in payload bytes.
func (a *ECNReno) Window() units.Bytes { return units.Bytes(a.cwnd) }

// Rate is 0: ecn-reno is paced by the NIC only.
func (a *ECNReno) Rate() units.Rate { return 0 }
