// Package poseidon implements Poseidon (Wang et al., NSDI 2023), a window-based
// datacenter congestion control that reacts to the maximum per-hop queuing delay (MPD)
// on the forward path, stamped by INT switches into one 16-bit field and echoed by the
// receiver (cc.Feedback.MPD). It sits between the host transport (hostd/transport), which
// calls it once per ACK, and the transport's sender, which reads Window and Rate back.
// Like every cc algorithm it is a pure state machine: it never reads a clock.
//
// # Control law (spec poseidon.md §2)
//
// Each flow compares the MPD with a rate-dependent target
//
//	T(rate) = k + p·(ln max_rate − ln rate)/(ln max_rate − ln min_rate),  rate = cwnd·MTU/rtt
//
// and updates its window by U = exp((T − MPD)/p · α · m), α = ln(max_rate/min_rate):
// per ACK cwnd += (U−1)·num_acked when MPD ≤ T (Alg. 1 l.5), and cwnd ×= U at most once
// per RTT when MPD > T (Alg. 1 l.8). Timeouts and fast recovery follow Alg. 2. Below one
// packet the flow paces one packet every rtt/cwnd (§2.8).
//
// # Brownfield (spec §5)
//
// With Params.Brownfield, or on an ACK whose path had no INT switch (HasMPD false), the
// signal is max(MPD, rest), rest = max(0, e2e − base_rtt − MPD − ReverseMPD): the queuing
// on the non-INT part of the path, from the end-to-end fabric RTT.
//
// # Parameters
//
// See Params. Defaults are the paper's simulation values (p = 40 µs, k = 2 µs, m = 0.25,
// max_rate = line rate, min_rate = max_rate/10⁴) plus the spec's choices where the paper
// gives none (min_md 0.5, max_mi unbounded, min_cwnd 0.001 packets, 5 RTOs to reset).
//
// # Departures from the paper
//
//   - T is evaluated on the rate clamped into [min_rate, max_rate] (spec A6): the paper
//     defines it on the open interval only.
//   - The update ratio is clamped into [min_md, max_mi] (spec A7); the paper lists both
//     parameters but never uses them on the ACK path.
//   - rtt is the fabric RTT of the current ACK (RTT minus receiver turnaround, spec A5).
//   - retransmit_count is reset on ACKs of new data (spec A9, as Swift does).
//   - CapPerACK (off by default) bounds the per-ACK increase by max_mi (spec A11).
//   - An ACK without any INT hop on its path (cc.Feedback.HasMPD false) falls back to the
//     brownfield signal even when Brownfield is off: full-deployment Poseidon has no
//     signal there otherwise. HasMPD is per path: every mpd-mode switch sets
//     wire.FlagMPDSeen on the packets it stamps and the receiver echoes it, so a flow
//     whose path crosses no INT switch falls back while its neighbours keep MPD.
//     Brownfield (on) is still needed where a path mixes INT and non-INT hops.
//   - The brownfield base RTT is the smaller of the planner's base RTT and the smallest
//     fabric RTT seen (spec A16 says to subtract a base the paper does not mention).
//   - The rate used in T counts wire bytes (Env.PacketSize), so max_rate can be the NIC
//     line rate; the window counts payload bytes (Env.MSS).
package poseidon

import (
	"fmt"
	"math"

	"reef/cc"
	"reef/units"
)

// Params are Poseidon's parameters. Times are in paper units (scaled by cc.ScaleParams).
type Params struct {
	// P is the span of the target, T(min_rate) − T(max_rate) (time). Default 40µs.
	P units.Time `yaml:"p"`
	// K is the minimum target, T(max_rate) (time). Default 2µs.
	K units.Time `yaml:"k"`
	// M is the step exponent of the update (dimensionless, 0 < m < 2). Default 0.25.
	M float64 `yaml:"m"`
	// MaxRate is the top of the rate range (bit/s); 0 means the sender's line rate, as
	// in the paper (200 Gbps = its line rate). Default 0.
	MaxRate units.Rate `yaml:"max_rate"`
	// MinRate is the bottom of the rate range (bit/s); 0 means MaxRate/10⁴ (the paper's
	// 0.02 Gbps at 200 Gbps). Default 0.
	MinRate units.Rate `yaml:"min_rate"`
	// MinMD is the smallest multiplicative factor, also applied on loss and timeouts
	// (dimensionless, in (0,1]). Default 0.5 (not in the paper; spec §2.2).
	MinMD float64 `yaml:"min_md"`
	// MaxMI caps the update ratio (dimensionless, ≥ 1); 0 means no cap. Default 0 (the
	// spec keeps the control law as published).
	MaxMI float64 `yaml:"max_mi"`
	// MinCwnd is the smallest window (packets). Default 0.001.
	MinCwnd float64 `yaml:"min_cwnd"`
	// MaxCwnd is the largest window (packets); 0 means 10 BDPs of the flow's path, at
	// least 16 packets. Default 0.
	MaxCwnd float64 `yaml:"max_cwnd"`
	// InitCwnd is the initial window (packets); 0 means one BDP of the flow's path
	// (line-rate start), at least 1 packet. Default 0 (the paper gives no value).
	InitCwnd float64 `yaml:"init_cwnd"`
	// RetxResetThreshold is the number of consecutive timeouts after which the window
	// drops to MinCwnd (count). Default 5.
	RetxResetThreshold int `yaml:"retx_reset_threshold"`
	// CapPerACK limits each ACK's increase to cwnd·(MaxMI − 1) (spec A11: below one
	// packet the literal rule can jump cwnd many-fold on one ACK). Needs MaxMI. Default
	// false (not in the paper).
	CapPerACK bool `yaml:"cap_per_ack"`
	// Brownfield makes the signal max(MPD, queuing on the non-INT part of the path)
	// (spec §5) on every ACK. Default false (full INT deployment).
	Brownfield bool `yaml:"brownfield"`
}

// DefaultParams returns the paper's parameters (spec poseidon.md §2.2).
func DefaultParams() *Params {
	return &Params{
		P:                  40 * units.Microsecond,
		K:                  2 * units.Microsecond,
		M:                  0.25,
		MinMD:              0.5,
		MinCwnd:            0.001,
		RetxResetThreshold: 5,
	}
}

// Validate names the first bad field and its unit.
func (p *Params) Validate() error {
	switch {
	case p.P <= 0:
		return fmt.Errorf("poseidon: p must be > 0, got %v", p.P)
	case p.K <= 0:
		return fmt.Errorf("poseidon: k must be > 0, got %v", p.K)
	case !(p.M > 0 && p.M < 2):
		return fmt.Errorf("poseidon: m must be in (0, 2), got %g", p.M)
	case p.MaxRate < 0:
		return fmt.Errorf("poseidon: max_rate must be ≥ 0 (0 = line rate), got %v", p.MaxRate)
	case p.MinRate < 0:
		return fmt.Errorf("poseidon: min_rate must be ≥ 0 (0 = max_rate/1e4), got %v", p.MinRate)
	case p.MaxRate > 0 && p.MinRate >= p.MaxRate:
		return fmt.Errorf("poseidon: min_rate must be < max_rate (%v), got %v", p.MaxRate, p.MinRate)
	case !(p.MinMD > 0 && p.MinMD <= 1):
		return fmt.Errorf("poseidon: min_md must be in (0, 1], got %g", p.MinMD)
	case p.MaxMI != 0 && !(p.MaxMI >= 1):
		return fmt.Errorf("poseidon: max_mi must be ≥ 1 or 0 (no cap), got %g", p.MaxMI)
	case !(p.MinCwnd > 0):
		return fmt.Errorf("poseidon: min_cwnd must be > 0 packets, got %g", p.MinCwnd)
	case p.MaxCwnd != 0 && !(p.MaxCwnd >= p.MinCwnd):
		return fmt.Errorf("poseidon: max_cwnd must be ≥ min_cwnd (%g packets) or 0, got %g", p.MinCwnd, p.MaxCwnd)
	case p.InitCwnd < 0:
		return fmt.Errorf("poseidon: init_cwnd must be ≥ 0 packets (0 = BDP), got %g", p.InitCwnd)
	case p.CapPerACK && p.MaxMI == 0:
		return fmt.Errorf("poseidon: cap_per_ack needs max_mi > 1, got 0 (no cap)")
	case p.RetxResetThreshold < 1:
		return fmt.Errorf("poseidon: retx_reset_threshold must be ≥ 1 timeouts, got %d", p.RetxResetThreshold)
	}
	return nil
}

func init() {
	cc.Register(cc.SpecOf("poseidon",
		"Poseidon (NSDI'23): max per-hop INT delay against a rate-dependent target, adaptive MIMD",
		DefaultParams, New))
}

// Poseidon is one flow's controller. Not safe for concurrent use.
type Poseidon struct {
	cc.NoTimer // no timers

	p   Params
	mss float64 // payload bytes per packet (window unit)
	pkt float64 // wire bits per packet (rate unit)

	// Precomputed constants of T and U (times in ns).
	lnMax, lnMin float64
	tSlope       float64 // p/α: T = k + tSlope·(ln max − ln rate)
	uGain        float64 // α·m/p: U = exp(uGain·(T − D))
	maxMI        float64 // +Inf when uncapped
	maxCwnd      float64

	cwnd          float64 // packets
	rtt           units.Time
	tLastDecrease units.Time
	retransmits   int
	baseRTT       units.Time // brownfield: min(planner base, min fabric RTT seen)
}

// New builds a Poseidon controller for one flow.
func New(env cc.Env, p *Params) (*Poseidon, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if env.MSS <= 0 {
		return nil, fmt.Errorf("poseidon: env MSS must be > 0 bytes, got %v", env.MSS)
	}
	maxRate := p.MaxRate
	if maxRate == 0 {
		maxRate = env.LineRate
	}
	if maxRate <= 0 {
		return nil, fmt.Errorf("poseidon: max_rate is 0 and env line rate is %v; want > 0 bit/s", env.LineRate)
	}
	minRate := float64(p.MinRate)
	if minRate == 0 {
		minRate = float64(maxRate) / 1e4
	}
	if minRate >= float64(maxRate) {
		return nil, fmt.Errorf("poseidon: min_rate %v must be < max_rate %v", p.MinRate, maxRate)
	}
	pkt := env.PacketSize
	if pkt <= 0 {
		pkt = env.MSS
	}
	f := &Poseidon{
		p:             *p,
		mss:           float64(env.MSS),
		pkt:           float64(pkt) * 8,
		lnMax:         math.Log(float64(maxRate)),
		lnMin:         math.Log(minRate),
		maxMI:         math.Inf(1),
		rtt:           env.BaseRTT,
		tLastDecrease: math.MinInt64 / 2, // "minus infinity" (spec A14), safe to subtract from
		baseRTT:       env.BaseRTT,
	}
	alpha := f.lnMax - f.lnMin
	f.tSlope = float64(p.P) / alpha
	f.uGain = alpha * p.M / float64(p.P)
	if p.MaxMI != 0 {
		f.maxMI = p.MaxMI
	}
	bdp := float64(env.BDP()) / f.mss
	f.maxCwnd = p.MaxCwnd
	if f.maxCwnd == 0 {
		f.maxCwnd = math.Max(10*bdp, 16)
	}
	f.cwnd = p.InitCwnd
	if f.cwnd == 0 {
		f.cwnd = math.Max(bdp, 1)
	}
	f.cwnd = min(max(f.cwnd, p.MinCwnd), f.maxCwnd)
	return f, nil
}

// target is T(rate) in ns for a rate in bit/s (Eq. 3), rate clamped into its domain.
func (f *Poseidon) target(rate float64) float64 {
	lr := f.lnMin
	if rate > 0 {
		lr = min(max(math.Log(rate), f.lnMin), f.lnMax)
	}
	return float64(f.p.K) + f.tSlope*(f.lnMax-lr)
}

// ratio is U(T, D) (Eq. 4) for times in ns, clamped into [min_md, max_mi].
func (f *Poseidon) ratio(t, d float64) float64 {
	return min(max(math.Exp(f.uGain*(t-d)), f.p.MinMD), f.maxMI)
}

// OnSend implements cc.Algorithm; Poseidon keeps no per-packet state.
func (f *Poseidon) OnSend(units.Time, uint64, units.Bytes) {}

// OnFeedback runs Alg. 1's ReceiveACK on an acknowledgement; CNPs are ignored.
func (f *Poseidon) OnFeedback(now units.Time, fb *cc.Feedback) {
	if fb.Kind != cc.Ack {
		return
	}
	rtt := fb.RTT - fb.Turnaround // fabric RTT (spec A5)
	if rtt <= 0 {
		rtt = fb.RTT
	}
	if rtt <= 0 {
		return // no timing: nothing to compare against
	}
	f.rtt = rtt
	numAcked := float64(fb.AckedPackets)
	if numAcked == 0 && fb.AckedBytes > 0 {
		numAcked = float64(fb.AckedBytes) / f.mss
	}
	if numAcked > 0 {
		f.retransmits = 0 // spec A9
	}

	sig := float64(fb.MPD)
	if f.p.Brownfield || !fb.HasMPD {
		sig = f.brownfield(fb, rtt)
	}
	prev := f.cwnd
	mpt := f.target(f.cwnd * f.pkt * 1e9 / float64(rtt))
	u := f.ratio(mpt, sig)
	if sig <= mpt {
		inc := (u - 1) * numAcked // Alg. 1 l.5: cwnd·(1 + (U−1)/cwnd·num_acked)
		if f.p.CapPerACK {
			inc = min(inc, f.cwnd*(f.maxMI-1))
		}
		f.cwnd += inc
	} else if now-f.tLastDecrease > rtt {
		f.cwnd *= u // Alg. 1 l.8
	}
	f.finish(now, prev)
}

// brownfield is the spec §5 signal in ns: max(MPD, rest of the end-to-end queuing).
func (f *Poseidon) brownfield(fb *cc.Feedback, e2e units.Time) float64 {
	if f.baseRTT <= 0 || e2e < f.baseRTT {
		f.baseRTT = e2e
	}
	var mpd units.Time
	if fb.HasMPD {
		mpd = fb.MPD
	}
	rest := e2e - f.baseRTT - mpd - fb.ReverseMPD
	return float64(max(mpd, rest, 0))
}

// OnLoss is Alg. 2's FastRecovery.
func (f *Poseidon) OnLoss(now units.Time, _ units.Bytes) {
	prev := f.cwnd
	f.retransmits = 0
	if now-f.tLastDecrease > f.rtt {
		f.cwnd *= f.p.MinMD
	}
	f.finish(now, prev)
}

// OnTimeout is Alg. 2's RetransmitTimeout.
func (f *Poseidon) OnTimeout(now units.Time) {
	prev := f.cwnd
	f.retransmits++
	if f.retransmits >= f.p.RetxResetThreshold {
		f.cwnd = f.p.MinCwnd
	} else if now-f.tLastDecrease > f.rtt {
		f.cwnd *= f.p.MinMD
	}
	f.finish(now, prev)
}

// finish is Alg. 1 l.18-20: clamp, and remember when the window last shrank.
func (f *Poseidon) finish(now units.Time, prev float64) {
	f.cwnd = min(max(f.cwnd, f.p.MinCwnd), f.maxCwnd)
	if f.cwnd < prev {
		f.tLastDecrease = now
	}
}

// Window is cwnd in payload bytes; below one packet the transport paces by Rate.
func (f *Poseidon) Window() units.Bytes { return units.Bytes(f.cwnd * f.mss) }

// Rate is 0 (window-limited) when cwnd ≥ 1 packet; below, one packet every rtt/cwnd
// (Alg. 1 l.21-23), in wire bits per second.
func (f *Poseidon) Rate() units.Rate {
	if f.cwnd >= 1 || f.rtt <= 0 {
		return 0
	}
	return units.Rate(f.cwnd * f.pkt * 1e9 / float64(f.rtt))
}

// Cwnd is the congestion window in packets (for tests and telemetry).
func (f *Poseidon) Cwnd() float64 { return f.cwnd }
