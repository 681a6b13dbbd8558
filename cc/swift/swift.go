// Package swift implements Swift (Kumar et al., SIGCOMM 2020), the delay-based AIMD
// congestion control that keeps each flow's fabric delay near a target scaled by path
// length and by the flow's window. The host transport (hostd/transport) calls
// OnFeedback once per ACK with the RTT sample and FabricDelay, and reads Window back;
// when the window falls below one packet the transport paces one packet every
// srtt × MSS / window (Swift's "cwnd < 1" mode). Like every cc algorithm it is a pure
// state machine: it never reads a clock.
//
// # Control law (spec baselines.md §3.1 and poseidon.md §4.2-4.3, reconstructed from
// public implementations: the paper's text is not stored)
//
//	target = base_target + hops·h + clamp(fs_α/√cwnd + fs_β, 0, fs_range)
//	  fs_α = fs_range / (1/√fs_min_cwnd − 1/√fs_max_cwnd),  fs_β = −fs_α/√fs_max_cwnd
//	can_decrease = now − t_last_decrease ≥ rtt
//	per ACK:  retransmit_cnt ← 0
//	          delay < target: cwnd += ai·num_acked/cwnd (cwnd ≥ 1) or ai·num_acked (cwnd < 1)
//	          else if can_decrease: cwnd ×= max(1 − β·(delay − target)/delay, 1 − max_mdf)
//	on loss (fast recovery): retransmit_cnt ← 0; if can_decrease: cwnd ×= 1 − max_mdf
//	on RTO:   retransmit_cnt++; ≥ RETX_RESET_THRESHOLD: cwnd ← min_cwnd
//	          else if can_decrease: cwnd ×= 1 − max_mdf
//	always:   cwnd ← clamp(cwnd, min_cwnd, max_cwnd); if cwnd < prev: t_last_decrease ← now
//
// cwnd is in packets (a float, so sub-packet windows work); num_acked is the acked
// payload in packets; rtt is a smoothed RTT (EWMA 1/8); hops is the number of switches on
// the forward path (cc.Feedback.PathHops, from the TTL; cc.Env.PathHops before that).
// TargetDelay and FlowScaling export the target law as pure functions (cc/mswift uses
// them).
//
// # Parameters
//
// See Params. Defaults are the Poseidon paper's Swift settings (§5: base_target 25 µs,
// hop_scaling 1 µs, fs_range 100 µs; min_cwnd 0.001 packets per poseidon.md §4.4) and
// htsim's where that paper is silent (fs cwnd 0.1–100 packets, ai 1, β 0.8, max_cwnd 1000
// packets, 5 timeouts to reset), with max_mdf 0.5; the initial window is one BDP, the
// delay signal FabricDelay, and PLB off (5 congested rounds at a 0.5 congested fraction
// when on).
//
// # Departures from the paper
//
//   - One window: the endpoint (host) window is disabled, as poseidon.md §4.4 directs
//     (the emulator's endpoints are never congested). delay is FabricDelay by default
//     (RTT minus receiver turnaround and NIC serialisation); Params.Delay = "rtt" uses
//     the raw RTT.
//   - Loss is declared by the transport's time-based detector (RACK), not by three
//     SACK holes; Swift's fast-recovery decrease applies at declaration.
//   - PLB (off by default, Params.PLB) is the delay-based variant htsim uses: a round
//     is congested when half its ACKs see delay ≥ target; the transport moves the flow
//     to a new ECMP path (UDP source port) when Repath reports true.
package swift

import (
	"fmt"
	"math"

	"reef/cc"
	"reef/units"
)

func init() {
	cc.Register(cc.SpecOf("swift",
		"Swift: delay-based AIMD against a hop- and flow-scaled target (SIGCOMM 2020)",
		DefaultParams, func(env cc.Env, p *Params) (*Swift, error) { return New(env, *p) }))
}

// Params are Swift's parameters. Defaults follow poseidon.md §4.4 (the Poseidon paper's
// Swift settings, with the htsim values where that paper is silent).
type Params struct {
	// BaseTarget is the target delay before scaling. Default 25µs (Poseidon §5).
	BaseTarget units.Time `yaml:"base_target"`
	// HopScaling is added to the target per switch on the forward path. Default 1µs
	// (Poseidon §5).
	HopScaling units.Time `yaml:"hop_scaling"`
	// FsRange is the largest flow-scaling term (reached at FsMinCwnd). Default 100µs
	// (Poseidon §5 "max flow scaling").
	FsRange units.Time `yaml:"fs_range"`
	// FsMinCwnd and FsMaxCwnd (packets) bound the flow-scaling curve: the term is
	// FsRange at FsMinCwnd and 0 at FsMaxCwnd. Defaults 0.1 and 100 (htsim).
	FsMinCwnd float64 `yaml:"fs_min_cwnd"`
	FsMaxCwnd float64 `yaml:"fs_max_cwnd"`
	// AI is the additive increase (packets per RTT). Default 1 (htsim).
	AI float64 `yaml:"ai"`
	// Beta is the multiplicative-decrease gain (dimensionless). Default 0.8 (htsim).
	Beta float64 `yaml:"beta"`
	// MaxMDF is the largest multiplicative decrease (fraction in (0, 1)). Default 0.5.
	MaxMDF float64 `yaml:"max_mdf"`
	// MinCwnd and MaxCwnd bound the window (packets). Defaults 0.001 (poseidon.md §4.4)
	// and 1000 (htsim: 1000 MSS).
	MinCwnd float64 `yaml:"min_cwnd"`
	MaxCwnd float64 `yaml:"max_cwnd"`
	// InitCwnd is the initial window (packets); 0 means one BDP of the flow's path (10
	// packets if the base RTT is unknown). Default 0.
	InitCwnd float64 `yaml:"init_cwnd"`
	// RetxResetThreshold is the number of consecutive timeouts after which the window
	// drops to MinCwnd. Default 5 (htsim).
	RetxResetThreshold int `yaml:"retx_reset_threshold"`
	// Delay selects the delay signal: "fabric" (default: cc.Feedback.FabricDelay) or
	// "rtt" (the raw RTT sample).
	Delay string `yaml:"delay"`
	// PLB turns on Protective Load Balancing (Qureshi et al., SIGCOMM 2022), which the
	// Poseidon paper runs with Swift in its op-latency experiments (§5.4, §5.5): after
	// PLBRounds consecutive congested rounds (RTTs in which at least
	// PLBCongestedFraction of the ACKs reported a delay at or above target), or on a
	// timeout, the flow moves to a new path. Default off; rounds 5 (htsim: "~5-7 RTT"),
	// fraction 0.5 (PLB paper's K).
	PLB                  bool    `yaml:"plb"`
	PLBRounds            int     `yaml:"plb_rounds"`
	PLBCongestedFraction float64 `yaml:"plb_congested_fraction"`
}

// DefaultParams returns the defaults documented on Params.
func DefaultParams() *Params {
	return &Params{
		BaseTarget: 25 * units.Microsecond, HopScaling: units.Microsecond, FsRange: 100 * units.Microsecond,
		FsMinCwnd: 0.1, FsMaxCwnd: 100, AI: 1, Beta: 0.8, MaxMDF: 0.5,
		MinCwnd: 0.001, MaxCwnd: 1000, RetxResetThreshold: 5, Delay: "fabric",
		PLBRounds: 5, PLBCongestedFraction: 0.5,
	}
}

func finitePos(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

// Validate names the first bad field and its unit.
func (p *Params) Validate() error {
	switch {
	case p.BaseTarget <= 0:
		return fmt.Errorf("swift: base_target must be > 0, got %v", p.BaseTarget)
	case p.HopScaling < 0:
		return fmt.Errorf("swift: hop_scaling must be ≥ 0 (per hop), got %v", p.HopScaling)
	case p.FsRange < 0:
		return fmt.Errorf("swift: fs_range must be ≥ 0, got %v", p.FsRange)
	case !finitePos(p.FsMinCwnd) || !finitePos(p.FsMaxCwnd) || p.FsMinCwnd >= p.FsMaxCwnd:
		return fmt.Errorf("swift: need 0 < fs_min_cwnd < fs_max_cwnd (packets), got %g and %g", p.FsMinCwnd, p.FsMaxCwnd)
	case !finitePos(p.AI):
		return fmt.Errorf("swift: ai must be > 0 (packets per RTT), got %g", p.AI)
	case !(p.Beta > 0 && p.Beta <= 1):
		return fmt.Errorf("swift: beta must be in (0, 1], got %g", p.Beta)
	case !(p.MaxMDF > 0 && p.MaxMDF < 1):
		return fmt.Errorf("swift: max_mdf must be in (0, 1), got %g", p.MaxMDF)
	case !finitePos(p.MinCwnd) || !finitePos(p.MaxCwnd) || p.MinCwnd > p.MaxCwnd:
		return fmt.Errorf("swift: need 0 < min_cwnd ≤ max_cwnd (packets), got %g and %g", p.MinCwnd, p.MaxCwnd)
	case !(p.InitCwnd >= 0) || math.IsInf(p.InitCwnd, 0):
		return fmt.Errorf("swift: init_cwnd must be ≥ 0 (packets; 0 = one BDP), got %g", p.InitCwnd)
	case p.RetxResetThreshold < 1:
		return fmt.Errorf("swift: retx_reset_threshold must be ≥ 1 (timeouts), got %d", p.RetxResetThreshold)
	case p.Delay != "fabric" && p.Delay != "rtt":
		return fmt.Errorf("swift: delay must be \"fabric\" or \"rtt\", got %q", p.Delay)
	case p.PLB && p.PLBRounds < 1:
		return fmt.Errorf("swift: plb_rounds must be ≥ 1 (RTTs), got %d", p.PLBRounds)
	case p.PLB && !(p.PLBCongestedFraction > 0 && p.PLBCongestedFraction <= 1):
		return fmt.Errorf("swift: plb_congested_fraction must be in (0, 1], got %g", p.PLBCongestedFraction)
	}
	return nil
}

// Swift is one flow's controller.
type Swift struct {
	cc.NoTimer // no timer of its own

	p        Params
	mss      float64
	pathHops int
	fs       FlowScaling

	cwnd     float64 // packets
	srtt     units.Time
	tLastDec units.Time
	decDone  bool // a decrease has happened (tLastDec is valid)
	retxCnt  int

	// PLB: the current round ends when a packet numbered ≥ roundEnd is acknowledged.
	roundEnd          uint64
	roundAcks, roundC int // ACKs in the round, congested ones among them
	congestedRounds   int
	repath            bool
	repaths           int
}

// New builds Swift for one flow.
func New(env cc.Env, p Params) (*Swift, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if env.MSS <= 0 {
		return nil, fmt.Errorf("swift: env mss must be > 0 bytes, got %d", env.MSS)
	}
	s := &Swift{p: p, mss: float64(env.MSS), pathHops: env.PathHops, srtt: env.BaseRTT}
	s.fs = NewFlowScaling(p.FsRange, p.FsMinCwnd, p.FsMaxCwnd)
	s.cwnd = p.InitCwnd
	if s.cwnd == 0 {
		s.cwnd = 10
		if bdp := env.BDP(); bdp > 0 {
			s.cwnd = float64(bdp) / s.mss
		}
	}
	s.cwnd = min(max(s.cwnd, p.MinCwnd), p.MaxCwnd)
	return s, nil
}

// Cwnd is the window in packets.
func (s *Swift) Cwnd() float64 { return s.cwnd }

// Target is the target delay for a path of hops switches at the current window:
// TargetDelay(params, hops, Cwnd()).
func (s *Swift) Target(hops int) units.Time { return targetDelay(s.p, s.fs, hops, s.cwnd) }

func (s *Swift) canDecrease(now units.Time) bool { return !s.decDone || now-s.tLastDec >= s.srtt }

// finish clamps the window and remembers when it last decreased.
func (s *Swift) finish(now units.Time, prev float64) {
	s.cwnd = min(max(s.cwnd, s.p.MinCwnd), s.p.MaxCwnd)
	if s.cwnd < prev {
		s.tLastDec, s.decDone = now, true
	}
}

// OnSend implements cc.Algorithm.
func (s *Swift) OnSend(now units.Time, seq uint64, size units.Bytes) {}

// OnFeedback applies Swift's per-ACK law.
func (s *Swift) OnFeedback(now units.Time, fb *cc.Feedback) {
	if fb.Kind != cc.Ack || fb.RTT <= 0 {
		return
	}
	if s.srtt <= 0 {
		s.srtt = fb.RTT
	} else {
		s.srtt += (fb.RTT - s.srtt) / 8
	}
	delay := fb.FabricDelay
	if s.p.Delay == "rtt" {
		delay = fb.RTT
	}
	hops := fb.PathHops
	if hops == 0 {
		hops = s.pathHops
	}
	prev := s.cwnd
	s.retxCnt = 0
	target := s.Target(hops)
	if s.p.PLB {
		s.plbRound(fb, delay >= target)
	}
	if delay < target {
		acked := float64(fb.AckedBytes) / s.mss
		if s.cwnd >= 1 {
			s.cwnd += s.p.AI * acked / s.cwnd
		} else {
			s.cwnd += s.p.AI * acked
		}
	} else if s.canDecrease(now) {
		f := 1 - s.p.Beta*float64(delay-target)/float64(delay)
		s.cwnd *= max(f, 1-s.p.MaxMDF)
	}
	s.finish(now, prev)
}

// OnLoss applies Swift's fast-recovery decrease.
func (s *Swift) OnLoss(now units.Time, lost units.Bytes) {
	prev := s.cwnd
	s.retxCnt = 0
	if s.canDecrease(now) {
		s.cwnd *= 1 - s.p.MaxMDF
	}
	s.finish(now, prev)
}

// OnTimeout applies Swift's retransmission-timeout rule.
func (s *Swift) OnTimeout(now units.Time) {
	prev := s.cwnd
	s.retxCnt++
	if s.p.PLB {
		s.repath, s.congestedRounds = true, 0 // PLB repaths on a timeout
	}
	if s.retxCnt >= s.p.RetxResetThreshold {
		s.cwnd = s.p.MinCwnd
	} else if s.canDecrease(now) {
		s.cwnd *= 1 - s.p.MaxMDF
	}
	s.finish(now, prev)
}

// Window is cwnd in payload bytes; below one MSS the transport paces.
func (s *Swift) Window() units.Bytes { return units.Bytes(s.cwnd * s.mss) }

// Rate is 0: Swift is window-based (sub-packet pacing is the transport's).
func (s *Swift) Rate() units.Rate { return 0 }

// plbRound counts congested rounds for PLB.
func (s *Swift) plbRound(fb *cc.Feedback, congested bool) {
	s.roundAcks++
	if congested {
		s.roundC++
	}
	if fb.AckSeq < s.roundEnd {
		return
	}
	if float64(s.roundC) >= s.p.PLBCongestedFraction*float64(s.roundAcks) {
		s.congestedRounds++
	} else {
		s.congestedRounds = 0
	}
	if s.congestedRounds >= s.p.PLBRounds {
		s.repath, s.congestedRounds = true, 0
	}
	s.roundEnd, s.roundAcks, s.roundC = fb.NextSeq, 0, 0
}

// Repath reports (once) that PLB wants the flow moved to another path; the transport
// then changes the flow's source port.
func (s *Swift) Repath() bool {
	r := s.repath
	s.repath = false
	if r {
		s.repaths++
	}
	return r
}

// Repaths is how many path changes PLB asked for.
func (s *Swift) Repaths() int { return s.repaths }
