// Package mycc is the reference solution of lab incast-dctcp's task 3: my-dctcp made
// DCTCP (SIGCOMM'10, RFC 8257). It keeps α, the moving average of the fraction of
// acknowledged bytes that came back with ECE, updates it once per window of data, and
// cuts the window by α/2 at most once per round trip.
//
// It is a package of reef's own module, so the lab's tests can link it in; a student's
// copy lives in its own module (labs/incast-dctcp/mycc) and is built into a reef with
// reef build --with.
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
	cc.Register(cc.SpecOf(Name, "lab incast-dctcp's reference solution: DCTCP written by a student", DefaultParams, New))
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

	alpha         float64 // moving average of the marked fraction
	acked, marked float64 // bytes acked, and acked with ECE, in the observation window
	windowEnd     uint64  // the packet whose ACK ends the observation window
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
	return &MyCC{p: *p, mss: mss, cwnd: p.InitWindow * mss, min: p.MinWindow * mss, alpha: 1}, nil
}

// OnSend notes the highest packet number sent.
func (a *MyCC) OnSend(_ units.Time, seq uint64, _ units.Bytes) {
	a.sndNxt = max(a.sndNxt, seq+1)
}

// OnFeedback counts marked bytes, updates α once per window, grows the window by one
// packet per window of ACKs, and cuts it by α/2 on an ECN-echo, once per round trip.
func (a *MyCC) OnFeedback(_ units.Time, fb *cc.Feedback) {
	a.acked += float64(fb.AckedBytes)
	if fb.ECE {
		a.marked += float64(fb.AckedBytes)
	}
	if fb.AckSeq >= a.windowEnd {
		if a.acked > 0 {
			a.alpha = (1-a.p.G)*a.alpha + a.p.G*a.marked/a.acked
		}
		a.acked, a.marked, a.windowEnd = 0, 0, a.sndNxt
	}
	if fb.ECE {
		a.cut(fb.AckSeq)
		return
	}
	a.cwnd += a.mss * float64(fb.AckedBytes) / a.cwnd
}

// OnLoss halves the window, as DCTCP does on a loss.
func (a *MyCC) OnLoss(_ units.Time, _ units.Bytes) { a.reduce(a.holdTill, 0.5) }

// OnTimeout drops the window to its minimum.
func (a *MyCC) OnTimeout(units.Time) { a.cwnd, a.holdTill = a.min, a.sndNxt }

// cut reduces the window by α/2 for an ECN-echo on ackSeq.
func (a *MyCC) cut(ackSeq uint64) { a.reduce(ackSeq, a.alpha/2) }

// reduce cuts the window by the fraction f, once per round trip.
func (a *MyCC) reduce(ackSeq uint64, f float64) {
	if ackSeq < a.holdTill {
		return // this round trip's cut is done
	}
	a.cwnd = max(a.cwnd*(1-f), a.min)
	a.holdTill = a.sndNxt
}

// Window is the congestion window in payload bytes.
func (a *MyCC) Window() units.Bytes { return units.Bytes(a.cwnd) }

// Rate is 0: the NIC paces the flow.
func (a *MyCC) Rate() units.Rate { return 0 }
