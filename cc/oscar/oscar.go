// Package oscar implements OSCAR (Zhang et al., NSDI 2026), an end-to-end datacenter
// congestion control that needs no switch support. Every ACK feeds a batched
// least-squares estimator with the acknowledged packet's send time, its RTT and the
// sender's bytes in flight when it was sent (cc.Feedback.SendTime, RTT and
// InflightEcho). About twice per base RTT the batch yields the mean delay, the delay
// gradient d(RTT)/d(send time), the mean in-flight and the actual send rate of the same
// packets, and one MIMD step sets a unified ratio u that drives both the window and the
// pacing rate. It sits under the host transport (hostd/transport) like every cc
// algorithm, and is a pure state machine.
//
// # Control law (spec oscar.md §2.5, §2.6)
//
//	delay < RTT_base + ε:  u += U_HAI
//	otherwise:             u_w = inflight/(delay·μ)   u_r = rate/((1+g)·μ)
//	                       u = max(u_w, u_r) if delay < D_target else min(u_w, u_r);  u += U_AI
//	w = min(u·D_target·μ, BDP_base);  r = u·μ
//
// μ is the sender's line rate (spec A9), RTT_base and BDP_base the flow's path's (cc.Env).
//
// # Parameters
//
// See Params: D_target = 1.5·RTT_base, τ = 0.5·RTT_base, U_AI = 0.001, U_HAI = 0.01 (the
// paper's four), ε = 1 µs at paper scale, at least 3 samples per batch, u in [0.001, 1]
// starting at 1 (line-rate start).
//
// # Departures from the paper
//
//   - Send times come as 64-bit sender timestamps (cc.Feedback.SendTime), so there is no
//     4-byte wrap to handle; x is centred on the batch start (spec §2.5 requirement).
//   - The delay is the RTT minus the receiver's turnaround, to compare with the planner's
//     base RTT; the gradient is unaffected.
//   - Hardening from the authors' artifact (spec A7): the gradient is floored at −0.9,
//     and a batch spanning more than 3τ (an idle or very slow sender) gives no gradient
//     or rate, so u_r = u_w. ε and u's bounds come from the artifact too (spec A2, A6).
//     The 0.5 µs hysteresis of the artifact is a parameter, off by default.
//   - The spec's suggestion to discard a partial batch after a gap of 3τ (§2.10 [R]) is
//     not followed: at u near u_min packets are further apart than 3τ, and the flow would
//     never update again.
//   - Window uses w = min(·, BDP_base) (spec A1: Alg. 2 prints max, the text and artifact
//     min), rounded up to whole packets as in the artifact (spec §2.3), so the smallest
//     window is one packet.
//   - With coalesced ACKs one ACK is one regression point; AckedPackets counts the
//     packets for the rate estimate, and InflightEcho is that of the triggering packet.
//   - No reaction to loss or timeouts (spec §2.10, A19): OSCAR reacts to the delay they
//     cause.
//
// # Limitations
//
// Fairness comes from U_AI alone (spec §2.8). With windows of tens of packets U_AI is a
// fraction of a packet, and u is re-derived each batch from the in-flight the window
// allowed, so in a noise-free simulation a window-bound flow can sit on a whole-packet
// window for good: unequal splits whose delay is just above D_target then repeat
// exactly. A few µs of fabric jitter dissolves them (net_test.go); real fabrics have it.
package oscar

import (
	"fmt"
	"math"

	"reef/cc"
	"reef/units"
)

// Params are OSCAR's parameters. Ratios are relative to the flow's base RTT; absolute
// times are at paper scale (100 Gbps, 12 µs) and scaled by cc.ScaleParams.
type Params struct {
	// TargetRatio is D_target/RTT_base (dimensionless, > 1). Default 1.5.
	TargetRatio float64 `yaml:"target_ratio"`
	// QueueTarget, when > 0, sets D_target = RTT_base + QueueTarget/μ instead (bytes),
	// as the artifact does with 75 KB (spec A8). Default 0.
	QueueTarget units.Bytes `yaml:"queue_target"`
	// BatchRatio is the batch period τ over RTT_base (dimensionless). Default 0.5.
	BatchRatio float64 `yaml:"batch_ratio"`
	// BatchPeriod, when > 0, fixes τ instead (time), as the artifact's 5µs. Default 0.
	BatchPeriod units.Time `yaml:"batch_period"`
	// AI is U_AI, added after every MIMD update (fraction of μ). Default 0.001.
	AI float64 `yaml:"u_ai"`
	// HAI is U_HAI, added when the queue looks empty (fraction of μ). Default 0.01.
	HAI float64 `yaml:"u_hai"`
	// Epsilon is the tolerance of the "delay == RTT_base" test (time). Default 1µs.
	Epsilon units.Time `yaml:"epsilon"`
	// Hysteresis lowers the accelerate threshold to D_target − Hysteresis (time).
	// Default 0 (the artifact uses 0.5µs).
	Hysteresis units.Time `yaml:"hysteresis"`
	// MinSamples is the fewest ACKs per batch (count). Default 3.
	MinSamples int `yaml:"min_samples"`
	// GradientFloor bounds the gradient below (dimensionless, in (−1, 0]). Default −0.9.
	GradientFloor float64 `yaml:"gradient_floor"`
	// MinRatio and MaxRatio bound u (fractions of μ). Defaults 0.001 and 1.
	MinRatio float64 `yaml:"u_min"`
	MaxRatio float64 `yaml:"u_max"`
	// InitRatio is the starting u (fraction of μ). Default 1 ("starts at line rate").
	InitRatio float64 `yaml:"u_init"`
}

// DefaultParams returns OSCAR's parameters (spec oscar.md §2.2).
func DefaultParams() *Params {
	return &Params{
		TargetRatio:   1.5,
		BatchRatio:    0.5,
		AI:            0.001,
		HAI:           0.01,
		Epsilon:       units.Microsecond,
		MinSamples:    3,
		GradientFloor: -0.9,
		MinRatio:      0.001,
		MaxRatio:      1,
		InitRatio:     1,
	}
}

// Validate names the first bad field and its unit.
func (p *Params) Validate() error {
	switch {
	case !(p.TargetRatio > 1):
		return fmt.Errorf("oscar: target_ratio must be > 1 (D_target/RTT_base), got %g", p.TargetRatio)
	case p.QueueTarget < 0:
		return fmt.Errorf("oscar: queue_target must be ≥ 0 bytes, got %v", p.QueueTarget)
	case !(p.BatchRatio > 0):
		return fmt.Errorf("oscar: batch_ratio must be > 0 (τ/RTT_base), got %g", p.BatchRatio)
	case p.BatchPeriod < 0:
		return fmt.Errorf("oscar: batch_period must be ≥ 0 (0 = batch_ratio), got %v", p.BatchPeriod)
	case !(p.AI >= 0 && p.AI < 1):
		return fmt.Errorf("oscar: u_ai must be in [0, 1) of the line rate, got %g", p.AI)
	case !(p.HAI >= 0 && p.HAI < 1):
		return fmt.Errorf("oscar: u_hai must be in [0, 1) of the line rate, got %g", p.HAI)
	case p.Epsilon < 0:
		return fmt.Errorf("oscar: epsilon must be ≥ 0, got %v", p.Epsilon)
	case p.Hysteresis < 0:
		return fmt.Errorf("oscar: hysteresis must be ≥ 0, got %v", p.Hysteresis)
	case p.MinSamples < 2:
		return fmt.Errorf("oscar: min_samples must be ≥ 2 ACKs, got %d", p.MinSamples)
	case !(p.GradientFloor > -1 && p.GradientFloor <= 0):
		return fmt.Errorf("oscar: gradient_floor must be in (-1, 0], got %g", p.GradientFloor)
	case !(p.MinRatio > 0 && p.MinRatio <= p.MaxRatio):
		return fmt.Errorf("oscar: u_min must be in (0, u_max], got %g", p.MinRatio)
	case !(p.MaxRatio > 0 && p.MaxRatio <= 1):
		return fmt.Errorf("oscar: u_max must be in (0, 1] of the line rate, got %g", p.MaxRatio)
	case !(p.InitRatio >= p.MinRatio && p.InitRatio <= p.MaxRatio):
		return fmt.Errorf("oscar: u_init must be in [u_min, u_max], got %g", p.InitRatio)
	}
	return nil
}

func init() {
	cc.Register(cc.SpecOf("oscar",
		"OSCAR (NSDI'26): batched least-squares delay and gradient, unified window/rate MIMD",
		DefaultParams, New))
}

// estimator is the batched least-squares estimator (BLS, Alg. 1). Regression points
// are (send time − batch start, delay), both in ns.
type estimator struct {
	started          bool
	start            units.Time // startTs: the previous batch's closing send time
	sumX, sumY       float64
	sumXX, sumXY     float64
	sumInfl          float64 // frame bytes
	nPts, nPkts      int
	tau, idle        units.Time
	minPts           int
	delay, gradient  float64 // last batch: mean delay (ns), LS slope
	inflight, rateBs float64 // last batch: mean in-flight (frame bytes), send rate (bit/s)
}

func (e *estimator) reset(at units.Time) {
	e.started, e.start = true, at
	e.sumX, e.sumY, e.sumXX, e.sumXY, e.sumInfl = 0, 0, 0, 0, 0
	e.nPts, e.nPkts = 0, 0
}

// add takes one ACK's sample and reports whether it closed a batch (spec §2.5).
func (e *estimator) add(sendTs units.Time, delay, infl float64, pkts int, pktBits float64) bool {
	if !e.started {
		// spec A4: "startTs = sendTs of the first acked packet, and that packet is not
		// counted".
		e.reset(sendTs)
		return false
	}
	x := float64(sendTs - e.start)
	e.sumX += x
	e.sumY += delay
	e.sumXX += x * x
	e.sumXY += x * delay
	e.sumInfl += infl
	e.nPts++
	e.nPkts += pkts
	span := sendTs - e.start
	if span < e.tau || e.nPts < e.minPts {
		return false
	}
	n := float64(e.nPts)
	e.delay = e.sumY / n
	e.inflight = e.sumInfl / n
	if den := n*e.sumXX - e.sumX*e.sumX; den != 0 && span <= e.idle {
		e.gradient = (n*e.sumXY - e.sumX*e.sumY) / den // Eq. (7)
		e.rateBs = float64(e.nPkts) * pktBits * 1e9 / float64(span)
	} else {
		e.gradient, e.rateBs = 0, 0 // idle batch (artifact): no rate reference
	}
	e.reset(sendTs)
	return true
}

// Oscar is one flow's controller. Not safe for concurrent use.
type Oscar struct {
	cc.NoTimer // batches close on ACKs, OSCAR needs no timer

	p        Params
	mu       float64 // line rate, bit/s
	pktBits  float64 // frame bits per packet
	payload  float64 // MSS / PacketSize: frame bytes to payload bytes
	mss      float64
	base     float64 // RTT_base, ns
	target   float64 // D_target, ns
	bdpBytes float64 // BDP_base in frame bytes
	be       estimator

	u float64
}

// New builds an OSCAR controller for one flow.
func New(env cc.Env, p *Params) (*Oscar, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if env.LineRate <= 0 || env.BaseRTT <= 0 || env.MSS <= 0 {
		return nil, fmt.Errorf("oscar: needs env line rate, base RTT and MSS > 0, got %v, %v, %v",
			env.LineRate, env.BaseRTT, env.MSS)
	}
	pkt := env.PacketSize
	if pkt <= 0 {
		pkt = env.MSS
	}
	o := &Oscar{
		p:       *p,
		mu:      float64(env.LineRate),
		pktBits: float64(pkt) * 8,
		payload: float64(env.MSS) / float64(pkt),
		mss:     float64(env.MSS),
		base:    float64(env.BaseRTT),
		u:       p.InitRatio,
	}
	o.target = p.TargetRatio * o.base
	if p.QueueTarget > 0 {
		o.target = o.base + float64(p.QueueTarget)*8e9/o.mu
	}
	o.bdpBytes = o.mu * o.base / 8e9
	tau := p.BatchPeriod
	if tau == 0 {
		tau = units.Time(math.Round(p.BatchRatio * o.base))
	}
	o.be = estimator{tau: max(tau, 1), idle: 3 * max(tau, 1), minPts: p.MinSamples}
	return o, nil
}

// OnSend implements cc.Algorithm: the reference state travels in the packets.
func (o *Oscar) OnSend(units.Time, uint64, units.Bytes) {}

// OnFeedback feeds the estimator and, when a batch closes, runs Alg. 2.
func (o *Oscar) OnFeedback(_ units.Time, fb *cc.Feedback) {
	if fb.Kind != cc.Ack || fb.RTT <= 0 {
		return
	}
	delay := fb.RTT - fb.Turnaround
	if delay <= 0 {
		delay = fb.RTT
	}
	infl := float64(fb.InflightEcho) / o.payload // payload bytes → frame bytes
	if !o.be.add(fb.SendTime, float64(delay), infl, max(fb.AckedPackets, 1), o.pktBits) {
		return
	}
	o.update()
}

// update is Alg. 2 on the batch just closed.
func (o *Oscar) update() {
	be := &o.be
	if be.delay < o.base+float64(o.p.Epsilon) {
		o.u += o.p.HAI // empty queue: hyper increase, no U_AI
	} else {
		uw := be.inflight * 8e9 / (be.delay * o.mu)
		ur := uw // idle batch: no rate reference (artifact)
		if be.rateBs > 0 {
			ur = be.rateBs / ((1 + max(be.gradient, o.p.GradientFloor)) * o.mu)
		}
		if be.delay < o.target-float64(o.p.Hysteresis) {
			o.u = max(uw, ur)
		} else {
			o.u = min(uw, ur)
		}
		o.u += o.p.AI
	}
	o.u = min(max(o.u, o.p.MinRatio), o.p.MaxRatio)
}

// OnLoss implements cc.Algorithm: OSCAR reacts to the delay a loss causes, not to it.
func (o *Oscar) OnLoss(units.Time, units.Bytes) {}

// OnTimeout implements cc.Algorithm; see OnLoss.
func (o *Oscar) OnTimeout(units.Time) {}

// Window is min(u·D_target·μ, BDP_base) in payload bytes, rounded up to whole packets
// as the authors' artifact does (spec §2.3: "a packet may be sent if inflight_pkts <
// ceil(w/pkt_size)"). Rounding down would stall the additive increase: u is re-derived
// each batch from the in-flight the window allowed, so a flow whose U_AI step is below
// one packet of window would never grow and flows would lock into unfair shares.
func (o *Oscar) Window() units.Bytes {
	w := min(o.u*o.target*o.mu/8e9, o.bdpBytes) * o.payload
	return units.Bytes(math.Ceil(w/o.mss)) * units.Bytes(o.mss)
}

// Rate is u·μ (frame bits per second).
func (o *Oscar) Rate() units.Rate { return units.Rate(math.Round(o.u * o.mu)) }

// Ratio is the unified ratio u (for tests and telemetry).
func (o *Oscar) Ratio() float64 { return o.u }
