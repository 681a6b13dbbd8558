// Package hpcc implements HPCC (Li et al., SIGCOMM 2019), a window- and rate-based
// datacenter congestion control driven by precise in-band telemetry. Every INT switch on
// the forward path stamps a per-hop record (egress timestamp, cumulative transmitted
// bytes, queue length, link rate: wire.Hop) into the data packet; the receiver copies the
// stack into the ACK, and the host transport (hostd/transport) hands it to this package
// as cc.Feedback.Hops, once per ACK. The transport reads Window and Rate back. Like every
// cc algorithm it is a pure state machine: it never reads a clock.
//
// # Control law (spec baselines.md §3.2, oscar.md §4.1; HPCC Algorithm 1)
//
// Each ACK's records are compared with the previous ACK's, hop by hop:
//
//	txRate = ΔtxBytes/Δts,  u' = min(qlen, qlen_prev)/(B·T) + txRate/B
//	u = max over hops of u';  τ = Δts of that hop, capped at T
//	U = (1 − τ/T)·U + (τ/T)·u                                  (EWMA, every ACK)
//	if U ≥ η or incStage ≥ maxStage:  W = Wc/(U/η) + W_AI     (MD, or MI after maxStage)
//	else:                             W = Wc + W_AI
//	R = W/T
//
// The reference window Wc (and incStage) is updated only once per RTT: when the ACK covers
// the first packet sent after the previous reference update (ack.seq > lastUpdateSeq,
// then lastUpdateSeq = snd_nxt). Every other ACK reacts from the same Wc ("fast react").
// B is each hop's link rate from its record, T is cc.Env.BaseRTT (or Params.BaseRTT), and
// the initial window is one BDP, line rate × T, with U = 1 and the flow at line rate.
//
// Packet numbers here are cc.Feedback.AckSeq and NextSeq. Algorithm 1 compares byte
// sequence numbers (ack.seq is the next byte expected), so "ack.seq > lastUpdateSeq"
// becomes AckSeq ≥ lastUpdateSeq: the ACK covers the packet numbered lastUpdateSeq.
//
// # Parameters
//
// See Params. Defaults: η = 0.95, maxStage = 5 (paper §3.1), W_AI = 0.0005·BDP (the
// OSCAR artifact's RateAIRatio; alibaba's scripts use 40 Mb/s at 100 Gb/s, 0.0004),
// window floor 0.001·BDP (the artifact's MinRateRatio). W_AI is the only force towards
// fairness (MD and MI keep the flows' ratios): on reef's jitter-free sim dumbbell, four
// flows at the default 0.0005 drift apart, because each flow reads the queue the others'
// paced packets leave behind its own and the larger flows read U about 1% lower; with
// 0.005 = (1 − η)/10 they share within Jain 0.998 (emulator/sim ccbehaviour_test.go).
//
// # Departures from the paper
//
//   - The window is clamped into [min_ratio·BDP, BDP] and the rate to at most the line
//     rate, as the reference implementation (alibaba rdma-hw.cc UpdateRateHp) clamps its
//     rate; the paper states no bounds.
//   - The first ACK of a flow (and the first after a change in the number of INT hops, or
//     after a timeout) only records the hops: there is no previous record to difference.
//   - A hop whose timestamp did not advance since the previous record, or whose byte
//     counter went backwards, is skipped (its rate is undefined); an ACK with no usable
//     hop changes nothing but the record.
//   - Losses and timeouts do not change the window: HPCC assumes a lossless fabric and
//     the paper gives no reaction. A timeout forgets the previous INT records.
package hpcc

import (
	"fmt"

	"reef/cc"
	"reef/units"
	"reef/wire"
)

// Params are HPCC's parameters. Times are in paper units (scaled by cc.ScaleParams).
type Params struct {
	// Eta is the target utilisation η (dimensionless, > 0). Default 0.95 (paper §3.1).
	// HPCC* of the OSCAR paper is η = 1.5.
	Eta float64 `yaml:"eta"`
	// MaxStage is the number of consecutive RTTs of additive increase before HPCC
	// multiplies instead (count, ≥ 0). Default 5 (paper §3.1).
	MaxStage int `yaml:"max_stage"`
	// AIRatio is the additive increase W_AI as a fraction of the flow's BDP, line rate ×
	// T (dimensionless, ≥ 0). Default 0.0005 (OSCAR artifact hpcc.json).
	AIRatio float64 `yaml:"ai_ratio"`
	// MinRatio is the smallest window as a fraction of the BDP (dimensionless, in
	// (0, 1]). Default 0.001 (OSCAR artifact MinRateRatio).
	MinRatio float64 `yaml:"min_ratio"`
	// BaseRTT is T, the base RTT the utilisation and the pacing rate are computed over
	// (time, ≥ 0); 0 means the network's largest base RTT as the reference code uses it
	// (GLOBAL_T; cc.Env.NetworkRTT), or the flow's own (cc.Env.BaseRTT) when that is
	// unknown. Every flow computing over one T keeps their additive increases and
	// utilisation targets in step, so flows of different RTTs share fairly. Default 0.
	BaseRTT units.Time `yaml:"base_rtt"`
}

// DefaultParams returns the paper's defaults.
func DefaultParams() *Params {
	return &Params{Eta: 0.95, MaxStage: 5, AIRatio: 0.0005, MinRatio: 0.001}
}

// Validate names the first bad field and its unit.
func (p *Params) Validate() error {
	switch {
	case !(p.Eta > 0):
		return fmt.Errorf("hpcc: eta must be > 0 (utilisation fraction), got %g", p.Eta)
	case p.MaxStage < 0:
		return fmt.Errorf("hpcc: max_stage must be ≥ 0 (RTTs), got %d", p.MaxStage)
	case !(p.AIRatio >= 0):
		return fmt.Errorf("hpcc: ai_ratio must be ≥ 0 (fraction of BDP), got %g", p.AIRatio)
	case !(p.MinRatio > 0 && p.MinRatio <= 1):
		return fmt.Errorf("hpcc: min_ratio must be in (0, 1] (fraction of BDP), got %g", p.MinRatio)
	case p.BaseRTT < 0:
		return fmt.Errorf("hpcc: base_rtt must be ≥ 0 (time), got %v", p.BaseRTT)
	}
	return nil
}

func init() {
	cc.Register(cc.SpecOf("hpcc",
		"HPCC (SIGCOMM'19): INT-driven MIMD window and rate towards η utilisation",
		DefaultParams, func(env cc.Env, p *Params) (*HPCC, error) { return New(env, *p) }))
}

// HPCC is one flow's HPCC state. Build it with New.
type HPCC struct {
	cc.NoTimer // no timers

	p    Params
	t    float64 // T, ns
	tt   units.Time
	line float64 // sender line rate, bit/s
	bdp  float64 // line·T, bytes
	wAI  float64 // bytes
	wMin float64 // bytes
	wMax float64 // bytes

	w        float64 // current window, bytes
	wc       float64 // reference window Wc, bytes
	u        float64 // smoothed utilisation U
	incStage int

	started       bool // a previous INT record exists and lastUpdateSeq is set
	lastUpdateSeq uint64
	nprev         int
	prev          [wire.MaxHops]wire.Hop
}

// New builds HPCC for one flow.
func New(env cc.Env, p Params) (*HPCC, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t := p.BaseRTT
	if t == 0 {
		t = env.NetworkRTT
	}
	if t == 0 {
		t = env.BaseRTT
	}
	if t <= 0 {
		return nil, fmt.Errorf("hpcc: base RTT must be > 0, got %v", t)
	}
	if env.LineRate <= 0 {
		return nil, fmt.Errorf("hpcc: line rate must be > 0, got %v", env.LineRate)
	}
	bdp := float64(units.BDP(env.LineRate, t))
	if bdp < 1 {
		return nil, fmt.Errorf("hpcc: BDP of %v over %v is under one byte", env.LineRate, t)
	}
	h := &HPCC{
		p:    p,
		t:    float64(t),
		tt:   t,
		line: float64(env.LineRate),
		bdp:  bdp,
		wAI:  p.AIRatio * bdp,
		wMin: p.MinRatio * bdp,
		wMax: bdp,
		w:    bdp,
		wc:   bdp,
		u:    1,
	}
	return h, nil
}

// OnSend does nothing: HPCC reacts to ACKs only.
func (h *HPCC) OnSend(now units.Time, seq uint64, size units.Bytes) {}

// OnFeedback runs Algorithm 1's NewAck on an ACK carrying INT records.
func (h *HPCC) OnFeedback(now units.Time, fb *cc.Feedback) {
	if fb.Kind != cc.Ack || len(fb.Hops) == 0 {
		return
	}
	hops := fb.Hops
	if len(hops) > len(h.prev) {
		hops = hops[:len(h.prev)]
	}
	if !h.started || len(hops) != h.nprev {
		// First RTT (or a new path): nothing to difference against yet.
		h.started = true
		h.lastUpdateSeq = fb.NextSeq
		h.remember(hops)
		return
	}
	u, tau, ok := h.measureInflight(hops)
	h.remember(hops)
	if !ok {
		return
	}
	// U = (1 − τ/T)·U + (τ/T)·u, τ capped at T.
	if tau > h.t {
		tau = h.t
	}
	h.u = (h.u*(h.t-tau) + u*tau) / h.t
	updateWc := fb.AckSeq >= h.lastUpdateSeq
	h.computeWind(updateWc)
	if updateWc {
		h.lastUpdateSeq = fb.NextSeq
	}
}

// measureInflight is Algorithm 1's MeasureInflight without the EWMA: the largest per-hop
// utilisation u' and the Δts of that hop (ns). ok is false when no hop's clock advanced.
func (h *HPCC) measureInflight(hops []wire.Hop) (u, tau float64, ok bool) {
	for i := range hops {
		cur, old := &hops[i], &h.prev[i]
		dt := float64(cur.TS - old.TS)
		b := float64(cur.RateKbps) * 1e3
		if dt <= 0 || b <= 0 || cur.TxBytes < old.TxBytes {
			continue // no time passed, or the port's counter restarted
		}
		txRate := float64(cur.TxBytes-old.TxBytes) * 8e9 / dt // bit/s
		q := min(cur.QLen, old.QLen)
		hopBDP := b * h.t / 8e9 // bytes
		up := float64(q)/hopBDP + txRate/b
		if !ok || up > u {
			u, tau, ok = up, dt, true
		}
	}
	return u, tau, ok
}

// computeWind is Algorithm 1's ComputeWind.
func (h *HPCC) computeWind(updateWc bool) {
	var w float64
	stage := h.incStage
	if h.u >= h.p.Eta || h.incStage >= h.p.MaxStage {
		w = h.wc/(h.u/h.p.Eta) + h.wAI
		stage = 0
	} else {
		w = h.wc + h.wAI
		stage++
	}
	w = min(max(w, h.wMin), h.wMax)
	h.w = w
	if updateWc {
		h.wc = w
		h.incStage = stage
	}
}

func (h *HPCC) remember(hops []wire.Hop) {
	h.nprev = copy(h.prev[:], hops)
}

// OnLoss does nothing: HPCC assumes a lossless fabric and the paper gives no reaction.
func (h *HPCC) OnLoss(now units.Time, lost units.Bytes) {}

// OnTimeout keeps the window but forgets the previous INT records, so the next ACK starts
// a fresh measurement (its records may come from another path or be long stale).
func (h *HPCC) OnTimeout(now units.Time) {
	h.started = false
	h.nprev = 0
}

// Window is W in payload bytes.
func (h *HPCC) Window() units.Bytes { return units.Bytes(h.w) }

// Rate is W/T, at most the line rate.
func (h *HPCC) Rate() units.Rate {
	return units.Rate(min(h.w*8e9/h.t, h.line))
}

// Utilisation is the smoothed utilisation U (dimensionless), for telemetry and tests.
func (h *HPCC) Utilisation() float64 { return h.u }
