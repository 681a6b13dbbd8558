// Package powertcp implements PowerTCP (Addanki et al., NSDI 2022) in its two forms:
// "powertcp", which reads the per-hop INT records (wire.Hop) that switches stamp on the
// data packet and the receiver echoes (cc.Feedback.Hops), and "theta-powertcp", which
// needs nothing from the fabric and reads only the RTT of each ACK. The host transport
// (hostd/transport) calls OnFeedback once per ACK and reads Window and Rate back. Like
// every cc algorithm it is a pure state machine: it never reads a clock.
//
// # Control law (spec baselines.md §3.6, oscar.md §4.2–4.3; PowerTCP Algorithms 1 and 2)
//
// PowerTCP reacts to "power", the product of the bottleneck's current (arrival rate λ)
// and voltage (queue plus BDP), normalised by its value at the ideal operating point:
//
//	INT, per hop:  λ = Δqlen/Δt + ΔtxBytes/Δt,  Γ' = λ·(qlen + B·τ),  Γ_norm = max Γ'/(B²·τ)
//	θ (delay):     Γ_norm = (ΔRTT/Δt + 1)·RTT/τ
//	Γ_smooth = (Γ_smooth·(τ − Δt) + Γ_norm·Δt)/τ,  Δt capped at τ
//	cwnd = γ·(cwnd_old/Γ_smooth + β) + (1 − γ)·cwnd,  rate = cwnd/τ
//
// τ is the base RTT (cc.Env.BaseRTT or Params.BaseRTT), B each hop's link rate from its
// record and cwnd_old the window that was in force when the acknowledged packet was sent
// (Algorithm 1's GET_CWND(ack.seq)), which this package remembers per packet number from
// OnSend. INT PowerTCP updates the window on every ACK; θ-PowerTCP once per RTT, when the
// ACK covers the first packet sent after its previous update (ack.seq ≥ lastUpdated, then
// lastUpdated = snd_nxt), with (1 − γ)·cwnd_old as its second term (spec oscar.md §4.3).
// Flows start at one BDP (line rate × τ) and line rate, with Γ_smooth = 1.
//
// # Parameters
//
// See Params. Defaults: γ = 0.9 and β = 0.006·BDP (the OSCAR artifact's powertcp and
// theta-powertcp configs; the TU Berlin Linux port uses β = BDP/expected_flows with 10
// flows, ns3-datacenter 150 Mb/s at 100 Gb/s), window floor 0.001·BDP.
//
// # Departures from the paper
//
//   - The window is clamped into [min_ratio·BDP, BDP] and the rate to the line rate,
//     as the reference simulators clamp their rates; the paper states no bounds.
//   - The arrival rate λ is taken as the queue growth plus the transmit rate, both from
//     reef's records (Algorithm 1); ns3-datacenter has switches stamp received bytes
//     instead. Neither the artifact's division of power by 0.95 nor its 0.5·line floor on
//     λ is applied (spec: "not in the paper"). A hop whose queue drained faster than it
//     sent (λ < 0) counts as power 0 and its sample still enters Γ_smooth: a queue that
//     alternates between 0 and one frame would otherwise leave only the high samples and
//     hold a lone flow near 85% of the link.
//   - cwnd_old falls back to the current window when the packet's send-time window is
//     no longer remembered (the history holds a few BDPs of packets).
//   - θ-PowerTCP's RTT is the ACK's RTT minus the receiver's turnaround, so delayed or
//     coalesced ACKs do not read as queueing; (ΔRTT/Δt + 1) is floored at 0.
//   - The first ACK (and the first after a timeout, or after the number of INT hops
//     changes) only records the signal. Losses and timeouts do not change the window:
//     PowerTCP assumes a lossless fabric and the paper gives no reaction.
package powertcp

import (
	"fmt"
	"math/bits"

	"reef/cc"
	"reef/units"
)

// Params are PowerTCP's and θ-PowerTCP's parameters. Times are in paper units (scaled
// by cc.ScaleParams).
type Params struct {
	// Gamma is γ, the weight of the new window against the current one (dimensionless,
	// in (0, 1]). Default 0.9 (paper; OSCAR artifact).
	Gamma float64 `yaml:"gamma"`
	// BetaRatio is the additive increase β as a fraction of the flow's BDP, line rate ×
	// τ (dimensionless, ≥ 0). Default 0.006 (OSCAR artifact powertcp-12.json).
	BetaRatio float64 `yaml:"beta_ratio"`
	// MinRatio is the smallest window as a fraction of the BDP (dimensionless, in
	// (0, 1]). Default 0.001 (OSCAR artifact MinRateRatio).
	MinRatio float64 `yaml:"min_ratio"`
	// BaseRTT is τ, the base RTT (time, ≥ 0); 0 means the flow's own base RTT
	// (cc.Env.BaseRTT). Default 0.
	BaseRTT units.Time `yaml:"base_rtt"`
}

// DefaultParams returns the defaults shared by both variants.
func DefaultParams() *Params {
	return &Params{Gamma: 0.9, BetaRatio: 0.006, MinRatio: 0.001}
}

// Validate names the first bad field and its unit.
func (p *Params) Validate() error {
	switch {
	case !(p.Gamma > 0 && p.Gamma <= 1):
		return fmt.Errorf("powertcp: gamma must be in (0, 1] (weight), got %g", p.Gamma)
	case !(p.BetaRatio >= 0):
		return fmt.Errorf("powertcp: beta_ratio must be ≥ 0 (fraction of BDP), got %g", p.BetaRatio)
	case !(p.MinRatio > 0 && p.MinRatio <= 1):
		return fmt.Errorf("powertcp: min_ratio must be in (0, 1] (fraction of BDP), got %g", p.MinRatio)
	case p.BaseRTT < 0:
		return fmt.Errorf("powertcp: base_rtt must be ≥ 0 (time), got %v", p.BaseRTT)
	}
	return nil
}

func init() {
	cc.Register(cc.SpecOf("powertcp",
		"PowerTCP (NSDI'22): window from INT power (rate × (queue + BDP))",
		DefaultParams, func(env cc.Env, p *Params) (*PowerTCP, error) { return New(env, *p) }))
	cc.Register(cc.SpecOf("theta-powertcp",
		"θ-PowerTCP (NSDI'22): PowerTCP's control law on RTT and its gradient only",
		DefaultParams, func(env cc.Env, p *Params) (*Theta, error) { return NewTheta(env, *p) }))
}

// window is the state both variants share: the window, its bounds, the smoothed power
// and the history of windows per packet number for GET_CWND.
type window struct {
	cc.NoTimer // no timers

	p      Params
	tau    float64 // ns
	line   float64 // bit/s
	bdp    float64 // bytes
	beta   float64 // bytes
	wMin   float64
	wMax   float64
	cwnd   float64
	smooth float64 // Γ_smooth

	hist []sent // ring indexed by packet number & mask
	mask uint64
}

type sent struct {
	seq  uint64
	cwnd float64
	ok   bool
}

func newWindow(env cc.Env, p Params, name string) (window, error) {
	if err := p.Validate(); err != nil {
		return window{}, err
	}
	tau := p.BaseRTT
	if tau == 0 {
		tau = env.BaseRTT
	}
	if tau <= 0 {
		return window{}, fmt.Errorf("%s: base RTT must be > 0, got %v", name, tau)
	}
	if env.LineRate <= 0 {
		return window{}, fmt.Errorf("%s: line rate must be > 0, got %v", name, env.LineRate)
	}
	bdp := float64(units.BDP(env.LineRate, tau))
	if bdp < 1 {
		return window{}, fmt.Errorf("%s: BDP of %v over %v is under one byte", name, env.LineRate, tau)
	}
	// Remember four BDPs of packets (at least 64, at most 64Ki).
	mss := float64(env.MSS)
	if mss <= 0 {
		mss = 1000
	}
	n := min(max(uint64(4*bdp/mss)+1, 64), 1<<16)
	n = 1 << (64 - bits.LeadingZeros64(n-1))
	return window{
		p: p, tau: float64(tau), line: float64(env.LineRate), bdp: bdp,
		beta: p.BetaRatio * bdp, wMin: p.MinRatio * bdp, wMax: bdp,
		cwnd: bdp, smooth: 1,
		hist: make([]sent, n), mask: n - 1,
	}, nil
}

// onSend records the window in force when packet seq left.
func (w *window) onSend(seq uint64) {
	w.hist[seq&w.mask] = sent{seq: seq, cwnd: w.cwnd, ok: true}
}

// cwndAt is GET_CWND(seq): the window when packet seq was sent, or the current window.
func (w *window) cwndAt(seq uint64) float64 {
	if s := w.hist[seq&w.mask]; s.ok && s.seq == seq {
		return s.cwnd
	}
	return w.cwnd
}

// smoothWith folds one normalised power sample taken over dt ns into Γ_smooth.
func (w *window) smoothWith(norm, dt float64) {
	dt = min(dt, w.tau)
	w.smooth = (w.smooth*(w.tau-dt) + norm*dt) / w.tau
}

// update sets cwnd = γ·(old/Γ_smooth + β) + (1 − γ)·prev, clamped.
func (w *window) update(old, prev float64) {
	c := w.p.Gamma*(old/w.smooth+w.beta) + (1-w.p.Gamma)*prev
	w.cwnd = min(max(c, w.wMin), w.wMax) // also maps +Inf (Γ_smooth = 0) to wMax
}

// Window is cwnd in payload bytes.
func (w *window) Window() units.Bytes { return units.Bytes(w.cwnd) }

// Rate is cwnd/τ, at most the line rate.
func (w *window) Rate() units.Rate { return units.Rate(min(w.cwnd*8e9/w.tau, w.line)) }

// OnLoss does nothing: PowerTCP assumes a lossless fabric and the paper gives no reaction.
func (w *window) OnLoss(now units.Time, lost units.Bytes) {}

// Power is Γ_smooth, the smoothed normalised power (1 at the ideal operating point).
func (w *window) Power() float64 { return w.smooth }
