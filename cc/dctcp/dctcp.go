// Package dctcp implements DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257), the window-
// based datacenter TCP that reacts to the fraction of ECN-marked packets. Switches mark
// CE on packets queued beyond a threshold K; the receiver echoes every mark (ECE on the
// ACK of the marked packet, cc.Feedback.ECE); the host transport (hostd/transport) calls
// OnFeedback once per ACK and reads Window back. Like every cc algorithm it is a pure
// state machine: it never reads a clock.
//
// # Control law (spec baselines.md §3.5, timely.md §4.2)
//
// Once per window of data (an observation window ends when every packet sent before it
// began is acknowledged):
//
//	α ← (1 − g)·α + g·F,  F = marked bytes / acked bytes in that window
//
// On an ACK with ECE, at most once per window: cwnd ← cwnd·(1 − α/2), ssthresh ← cwnd.
// Otherwise standard TCP: slow start (cwnd += acked bytes) below ssthresh, congestion
// avoidance (cwnd += MSS·acked/cwnd) above. The window does not grow while a reduction
// is being recovered (the rest of the window that was in flight when it was cut), nor
// while it is not what limits sending (cc.Feedback.Inflight well below it: a flow held
// back by its own NIC or by the application).
//
// # Parameters
//
// See Params. Defaults: g = 1/16 (Linux dctcp_shift_g = 4; RFC 8257 §4.2), α starts at
// 1 (RFC 8257 §3.3, Linux), initial window 10 packets (RFC 6928, Linux), window floor 2
// packets (RFC 5681's ssthresh floor, Linux dctcp_ssthresh).
//
// # Departures from the paper
//
//   - Windows are in payload bytes and packet numbers replace byte sequence numbers: an
//     observation window ends when the ACK covers the last packet sent before it began
//     (AckSeq + 1 ≥ the window's end, Linux's "snd_una ≥ next_seq").
//   - A reduction takes effect at once instead of through Linux's proportional rate
//     reduction; the window then holds until the reduction's window is acknowledged.
//   - The window grows only while it limits sending, as Linux does (tcp_is_cwnd_limited,
//     RFC 7661): in slow start while it is below twice the bytes in flight, in congestion
//     avoidance while the bytes in flight fill it to within one MSS. Without this a flow
//     whose bottleneck is its own NIC sees no marks and grows its window without bound.
//   - Loss (fast retransmit) halves the window, once per window (RFC 8257 §3.5: as
//     standard TCP); a timeout sets ssthresh to half the window and the window to one
//     packet (RFC 5681's loss window). Marks are not delayed-ACK encoded: reef's receiver
//     echoes each packet's mark.
package dctcp

import (
	"fmt"
	"math"

	"reef/cc"
	"reef/units"
)

// Params are DCTCP's parameters.
type Params struct {
	// G is the EWMA gain g of α (dimensionless, in (0, 1]). Default 1/16 (RFC 8257).
	G float64 `yaml:"g"`
	// InitAlpha is α before the first window ends (dimensionless, in [0, 1]). Default 1
	// (RFC 8257 §3.3).
	InitAlpha float64 `yaml:"init_alpha"`
	// InitWindow is the initial window (packets of MSS, > 0); 0 means one BDP of the
	// flow's path, as datacenter simulators start flows at line rate. Default 10
	// (RFC 6928).
	InitWindow float64 `yaml:"init_window"`
	// MinWindow is the smallest window a reduction leaves (packets of MSS, > 0).
	// Default 2 (RFC 5681).
	MinWindow float64 `yaml:"min_window"`
	// MaxWindow caps the window (bytes); 0 means no cap. Default 0.
	MaxWindow units.Bytes `yaml:"max_window"`
}

// DefaultParams returns RFC 8257's and Linux's defaults.
func DefaultParams() *Params {
	return &Params{G: 1.0 / 16, InitAlpha: 1, InitWindow: 10, MinWindow: 2}
}

// Validate names the first bad field and its unit.
func (p *Params) Validate() error {
	switch {
	case !(p.G > 0 && p.G <= 1):
		return fmt.Errorf("dctcp: g must be in (0, 1] (EWMA gain), got %g", p.G)
	case !(p.InitAlpha >= 0 && p.InitAlpha <= 1):
		return fmt.Errorf("dctcp: init_alpha must be in [0, 1] (fraction), got %g", p.InitAlpha)
	case !(p.InitWindow >= 0) || math.IsInf(p.InitWindow, 0):
		return fmt.Errorf("dctcp: init_window must be ≥ 0 (packets; 0 = one BDP), got %g", p.InitWindow)
	case !(p.MinWindow > 0) || math.IsInf(p.MinWindow, 0):
		return fmt.Errorf("dctcp: min_window must be > 0 (packets), got %g", p.MinWindow)
	case p.MaxWindow < 0:
		return fmt.Errorf("dctcp: max_window must be ≥ 0 (bytes; 0 = no cap), got %v", p.MaxWindow)
	}
	return nil
}

func init() {
	cc.Register(cc.SpecOf("dctcp",
		"DCTCP (SIGCOMM'10, RFC 8257): window cut by α/2, α the EWMA of the ECN-marked fraction",
		DefaultParams, func(env cc.Env, p *Params) (*DCTCP, error) { return New(env, *p) }))
}

// DCTCP is one flow's DCTCP state. Build it with New.
type DCTCP struct {
	cc.NoTimer // no timers of its own

	p    Params
	mss  float64
	wMin float64
	wMax float64

	cwnd     float64 // bytes
	ssthresh float64 // bytes
	alpha    float64

	// Observation window.
	started   bool
	windowEnd uint64 // first packet number after the window
	acked     float64
	marked    float64

	// Reduction (CWR / recovery): no further cut nor growth until AckSeq ≥ recoverEnd.
	reducing   bool
	recoverEnd uint64
	sndNxt     uint64 // one past the highest packet number sent
}

// New builds DCTCP for one flow.
func New(env cc.Env, p Params) (*DCTCP, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if env.MSS <= 0 {
		return nil, fmt.Errorf("dctcp: MSS must be > 0, got %v", env.MSS)
	}
	mss := float64(env.MSS)
	init := p.InitWindow * mss
	if p.InitWindow == 0 {
		init = float64(env.BDP())
	}
	wMax := math.Inf(1)
	if p.MaxWindow > 0 {
		wMax = float64(p.MaxWindow)
	}
	d := &DCTCP{
		p: p, mss: mss, wMin: p.MinWindow * mss, wMax: wMax,
		ssthresh: math.Inf(1), alpha: p.InitAlpha,
	}
	d.cwnd = min(max(init, mss), wMax)
	return d, nil
}

// OnSend tracks snd_nxt, the end of the window a loss reduction holds for.
func (d *DCTCP) OnSend(now units.Time, seq uint64, size units.Bytes) {
	d.sndNxt = max(d.sndNxt, seq+1)
}

// OnFeedback counts the ACK into the observation window, updates α when the window ends,
// cuts the window on ECE (once per window) and otherwise grows it.
func (d *DCTCP) OnFeedback(now units.Time, fb *cc.Feedback) {
	if fb.Kind != cc.Ack {
		return
	}
	d.sndNxt = max(d.sndNxt, fb.NextSeq)
	if !d.started {
		d.started = true
		d.windowEnd = fb.NextSeq
	}
	acked := float64(fb.AckedBytes)
	d.acked += acked
	if fb.ECE {
		d.marked += acked
	}
	// "α ← (1 − g)·α + g·F once per window", F the marked fraction of the window's bytes.
	if fb.AckSeq+1 >= d.windowEnd {
		if d.acked > 0 {
			d.alpha = (1-d.p.G)*d.alpha + d.p.G*(d.marked/d.acked)
		}
		d.acked, d.marked = 0, 0
		d.windowEnd = fb.NextSeq
	}
	if d.reducing && fb.AckSeq >= d.recoverEnd {
		d.reducing = false
	}
	switch {
	case fb.ECE && !d.reducing:
		// "cwnd ← cwnd·(1 − α/2) once per window on marks"
		d.reduce(1-d.alpha/2, fb.NextSeq)
	case d.reducing || acked <= 0:
	case d.cwnd < d.ssthresh:
		// Slow start, while the window is in use (Linux tcp_is_cwnd_limited: below
		// twice what was in flight).
		if d.cwnd < 2*(float64(fb.Inflight)+acked) {
			d.cwnd = min(d.cwnd+acked, d.wMax)
		}
	default:
		// Congestion avoidance, only when the window limited sending: the packets in
		// flight before this ACK filled it to within one MSS (RFC 7661).
		if float64(fb.Inflight)+acked+d.mss >= d.cwnd {
			d.cwnd = min(d.cwnd+d.mss*acked/d.cwnd, d.wMax)
		}
	}
}

// reduce multiplies the window by f (not below the floor), sets ssthresh to it and holds
// until the packets in flight now (below next) are acknowledged.
func (d *DCTCP) reduce(f float64, next uint64) {
	d.cwnd = max(d.cwnd*f, d.wMin)
	d.ssthresh = d.cwnd
	d.reducing = true
	d.recoverEnd = next
}

// OnLoss halves the window, at most once per window (RFC 8257 §3.5: as standard TCP).
func (d *DCTCP) OnLoss(now units.Time, lost units.Bytes) {
	if d.reducing {
		return
	}
	d.reduce(0.5, d.sndNxt)
}

// OnTimeout sets ssthresh to half the window and the window to one packet (RFC 5681).
func (d *DCTCP) OnTimeout(now units.Time) {
	d.ssthresh = max(d.cwnd/2, d.wMin)
	d.cwnd = d.mss
	d.reducing = false
}

// Window is cwnd in payload bytes.
func (d *DCTCP) Window() units.Bytes { return units.Bytes(d.cwnd) }

// Rate returns 0: DCTCP is window-limited, not paced.
func (d *DCTCP) Rate() units.Rate { return 0 }

// Alpha is the current estimate α of the marked fraction.
func (d *DCTCP) Alpha() float64 { return d.alpha }
