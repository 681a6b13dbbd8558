// Package mswift implements MSwift and LSwift (Gerstein, Silberstein, Keslassy, "Making
// congestion control robust to per-packet load balancing in datacenters"): Swift's
// delay-based AIMD made robust to packet spraying and adaptive routing. LSwift ("lswift")
// only cuts the window on loss after a run of 5 lost packets instead of any hole; MSwift
// ("mswift") is LSwift driven by the median RTT of the last H ACKs, H = max(min(α·cwnd,
// K), 3). It sits under the host transport (hostd/transport), which calls it on every
// ACK and loss and reads Window and Rate back; it is a pure state machine.
//
// # Control law (spec mswift.md §3.2, §3.6)
//
//	d = median of the last H fabric-RTT samples (MSwift) or the latest one (LSwift)
//	d < target(cwnd):  cwnd += ai·num_acked/cwnd  (ai·num_acked below one packet)
//	else, once per RTT: cwnd ×= max(1 − β·(d − target)/d, 1 − max_mdf)
//	target(cwnd) = base_target + hops·h + clamp(fs_α/√cwnd + fs_β, 0, fs_range)
//
// Below one packet the flow paces one packet every srtt/cwnd.
//
// # Parameters
//
// See Params. Defaults are the paper's (base_target + topology scaling = 15.8 µs, ai 1,
// β 0.8, max_mdf 0.5, α 0.5, K 10, history ≥ 3, lazy run 5) and htsim's where the paper
// defers to it (fs_range 100 µs, fs cwnd 0.1–100 packets, min_cwnd 0.0025 packets = 10 B
// at 4000 B, max_cwnd 1000 packets, 5 timeouts to reset).
//
// # Departures from the paper
//
//   - The target's flow-scaling term is cc/swift's (swift.FlowScaling, the reconstructed
//     law of specs/baselines.md §3.1) but kept in unrounded ns, and the hop term uses the
//     planner's hop count (cc.Env.PathHops) rather than the per-ACK one: MSwift's default
//     base_target already includes the paper's topology scaling.
//   - The cc interface reports lost bytes, not sequence numbers, so "five successive
//     delayed packets" (LSwift's trigger) is counted as packets declared lost with no
//     ACK of new data in between; a transport that declares several scattered packets
//     lost at once (a RACK timer) makes a run of them.
//   - The delay is the fabric RTT (RTT minus the receiver turnaround); can_decrease and
//     pacing use the smoothed RTT of raw samples (spec §3.6).
//   - The initial window is one BDP of the path (the paper gives none, spec A23).
package mswift

import (
	"fmt"
	"math"
	"slices"

	"reef/cc"
	"reef/cc/swift"
	"reef/units"
)

// History modes (Params.History).
const (
	HistoryOff     = "off"     // the latest sample (Swift, LSwift)
	HistoryConst   = "const"   // H = HistConst
	HistoryWindow  = "window"  // H = max(α·cwnd, HistMin)
	HistoryBounded = "bounded" // H = max(min(α·cwnd, K), HistMin): MSwift
)

// maxHistory bounds the ring of samples (window mode at large windows).
const maxHistory = 4096

// Params are MSwift's and LSwift's parameters, at paper scale (100 Gbps); times are
// scaled by cc.ScaleParams.
type Params struct {
	// AI is the additive increase (packets per RTT). Default 1.
	AI float64 `yaml:"ai"`
	// Beta is the multiplicative-decrease gain (dimensionless). Default 0.8.
	Beta float64 `yaml:"beta"`
	// MaxMDF is the largest multiplicative decrease (dimensionless, (0,1)). Default 0.5.
	MaxMDF float64 `yaml:"max_mdf"`
	// BaseTarget is base_target plus the topology scaling of the paper's fat tree (time).
	// Default 15.8µs (the paper gives only the sum).
	BaseTarget units.Time `yaml:"base_target"`
	// HopScaling is added per switch on the path (cc.Env.PathHops) (time). Default 0: the
	// paper's sum already includes it.
	HopScaling units.Time `yaml:"hop_scaling"`
	// FsRange is the largest flow-scaling term (time). Default 100µs.
	FsRange units.Time `yaml:"fs_range"`
	// FsMinCwnd and FsMaxCwnd are where flow scaling is FsRange and 0 (packets). Defaults
	// 0.1 and 100.
	FsMinCwnd float64 `yaml:"fs_min_cwnd"`
	FsMaxCwnd float64 `yaml:"fs_max_cwnd"`
	// MinCwnd and MaxCwnd bound the window (packets). Defaults 0.0025 and 1000.
	MinCwnd float64 `yaml:"min_cwnd"`
	MaxCwnd float64 `yaml:"max_cwnd"`
	// InitCwnd is the initial window (packets); 0 means one BDP of the path, at least 1.
	// Default 0.
	InitCwnd float64 `yaml:"init_cwnd"`
	// RetxResetThreshold is the consecutive timeouts after which cwnd = MinCwnd (count).
	// Default 5.
	RetxResetThreshold int `yaml:"retx_reset_threshold"`
	// LazyRun is the run of lost packets that triggers the loss decrease (packets): 1 is
	// Swift, 5 LSwift and MSwift. Default 5.
	LazyRun int `yaml:"lazy_run"`
	// History is the median's history mode: "bounded" (MSwift), "window", "const" or
	// "off" (LSwift). Default "bounded".
	History string `yaml:"history"`
	// HistAlpha is α, samples per packet of window (dimensionless). Default 0.5.
	HistAlpha float64 `yaml:"hist_alpha"`
	// HistK is K, the bound on H in bounded mode (samples). Default 10.
	HistK int `yaml:"hist_k"`
	// HistMin is the least H in window and bounded modes (samples). Default 3.
	HistMin int `yaml:"hist_min"`
	// HistConst is H in const mode (samples). Default 10.
	HistConst int `yaml:"hist_const"`
}

// DefaultParams returns MSwift's parameters (spec mswift.md §3.8).
func DefaultParams() *Params {
	return &Params{
		AI:                 1,
		Beta:               0.8,
		MaxMDF:             0.5,
		BaseTarget:         15800 * units.Nanosecond,
		FsRange:            100 * units.Microsecond,
		FsMinCwnd:          0.1,
		FsMaxCwnd:          100,
		MinCwnd:            0.0025,
		MaxCwnd:            1000,
		RetxResetThreshold: 5,
		LazyRun:            5,
		History:            HistoryBounded,
		HistAlpha:          0.5,
		HistK:              10,
		HistMin:            3,
		HistConst:          10,
	}
}

// DefaultLSwiftParams returns LSwift's: MSwift without the median (spec §3.7).
func DefaultLSwiftParams() *Params {
	p := DefaultParams()
	p.History = HistoryOff
	return p
}

// Validate names the first bad field and its unit.
func (p *Params) Validate() error {
	switch {
	case !(p.AI > 0):
		return fmt.Errorf("mswift: ai must be > 0 packets per RTT, got %g", p.AI)
	case !(p.Beta > 0 && p.Beta <= 1):
		return fmt.Errorf("mswift: beta must be in (0, 1], got %g", p.Beta)
	case !(p.MaxMDF > 0 && p.MaxMDF < 1):
		return fmt.Errorf("mswift: max_mdf must be in (0, 1), got %g", p.MaxMDF)
	case p.BaseTarget <= 0:
		return fmt.Errorf("mswift: base_target must be > 0, got %v", p.BaseTarget)
	case p.HopScaling < 0:
		return fmt.Errorf("mswift: hop_scaling must be ≥ 0, got %v", p.HopScaling)
	case p.FsRange < 0:
		return fmt.Errorf("mswift: fs_range must be ≥ 0, got %v", p.FsRange)
	case !(p.FsMinCwnd > 0 && p.FsMaxCwnd > p.FsMinCwnd):
		return fmt.Errorf("mswift: fs_min_cwnd must be > 0 and < fs_max_cwnd (packets), got %g and %g", p.FsMinCwnd, p.FsMaxCwnd)
	case !(p.MinCwnd > 0 && p.MaxCwnd >= p.MinCwnd):
		return fmt.Errorf("mswift: min_cwnd must be > 0 and ≤ max_cwnd (packets), got %g and %g", p.MinCwnd, p.MaxCwnd)
	case p.InitCwnd < 0:
		return fmt.Errorf("mswift: init_cwnd must be ≥ 0 packets (0 = BDP), got %g", p.InitCwnd)
	case p.RetxResetThreshold < 1:
		return fmt.Errorf("mswift: retx_reset_threshold must be ≥ 1 timeouts, got %d", p.RetxResetThreshold)
	case p.LazyRun < 1:
		return fmt.Errorf("mswift: lazy_run must be ≥ 1 packets, got %d", p.LazyRun)
	case p.History != HistoryOff && p.History != HistoryConst && p.History != HistoryWindow && p.History != HistoryBounded:
		return fmt.Errorf("mswift: history must be one of %q, %q, %q, %q, got %q",
			HistoryBounded, HistoryWindow, HistoryConst, HistoryOff, p.History)
	case !(p.HistAlpha > 0):
		return fmt.Errorf("mswift: hist_alpha must be > 0 samples per packet, got %g", p.HistAlpha)
	case p.HistMin < 1 || p.HistMin > maxHistory:
		return fmt.Errorf("mswift: hist_min must be in [1, %d] samples, got %d", maxHistory, p.HistMin)
	case p.HistK < p.HistMin || p.HistK > maxHistory:
		return fmt.Errorf("mswift: hist_k must be in [hist_min, %d] samples, got %d", maxHistory, p.HistK)
	case p.HistConst < 1 || p.HistConst > maxHistory:
		return fmt.Errorf("mswift: hist_const must be in [1, %d] samples, got %d", maxHistory, p.HistConst)
	}
	return nil
}

func init() {
	for _, s := range []struct {
		name, doc string
		defaults  func() *Params
	}{
		{"mswift", "MSwift: Swift with lazy loss reaction and the median RTT of a window-sized history", DefaultParams},
		{"lswift", "LSwift: Swift that cuts on loss only after 5 successive lost packets", DefaultLSwiftParams},
	} {
		cc.Register(cc.SpecOf(s.name, s.doc, s.defaults, New))
	}
}

// MSwift is one flow's controller (MSwift or LSwift). Not safe for concurrent use.
type MSwift struct {
	cc.NoTimer // no timers

	p       Params
	mss     float64 // payload bytes per packet (window unit)
	pktBits float64 // frame bits per packet (rate unit)
	topo    float64 // base_target + hops·h, ns
	fs      swift.FlowScaling

	cwnd       float64 // packets
	srtt       units.Time
	tLastDec   units.Time
	retx       int
	lostRun    int // packets declared lost since the last ACK of new data
	hist       []float64
	histN      int // samples stored (≤ len(hist))
	histNext   int // ring write position
	scratch    []float64
	lastMedian float64
}

// New builds an MSwift (or LSwift) controller for one flow.
func New(env cc.Env, p *Params) (*MSwift, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if env.MSS <= 0 {
		return nil, fmt.Errorf("mswift: env MSS must be > 0 bytes, got %v", env.MSS)
	}
	pkt := env.PacketSize
	if pkt <= 0 {
		pkt = env.MSS
	}
	m := &MSwift{
		p:        *p,
		mss:      float64(env.MSS),
		pktBits:  float64(pkt) * 8,
		topo:     float64(p.BaseTarget) + float64(env.PathHops)*float64(p.HopScaling),
		srtt:     env.BaseRTT,
		tLastDec: math.MinInt64 / 2,
	}
	m.fs = swift.NewFlowScaling(p.FsRange, p.FsMinCwnd, p.FsMaxCwnd)
	m.cwnd = p.InitCwnd
	if m.cwnd == 0 {
		m.cwnd = max(float64(env.BDP())/m.mss, 1)
	}
	m.cwnd = min(max(m.cwnd, p.MinCwnd), p.MaxCwnd)
	size := 1
	switch p.History {
	case HistoryConst:
		size = p.HistConst
	case HistoryWindow:
		size = min(max(int(math.Ceil(p.HistAlpha*p.MaxCwnd)), p.HistMin), maxHistory)
	case HistoryBounded:
		size = max(p.HistK, p.HistMin)
	}
	m.hist = make([]float64, size)
	m.scratch = make([]float64, size)
	return m, nil
}

// target is Swift's target delay in ns for a window of cwnd packets (spec §3.3), with
// cc/swift's flow-scaling term kept unrounded (swift.TargetDelay rounds it to a ns).
func (m *MSwift) target(cwnd float64) float64 {
	return m.topo + m.fs.Ns(max(cwnd, 1e-9))
}

// historySize is H for the current window (spec §3.6, "computed from the cwnd before
// this ACK's update").
func (m *MSwift) historySize() int {
	w := int(math.Floor(m.p.HistAlpha * m.cwnd))
	switch m.p.History {
	case HistoryConst:
		return m.p.HistConst
	case HistoryWindow:
		return min(max(w, m.p.HistMin), len(m.hist))
	case HistoryBounded:
		return max(min(w, m.p.HistK), m.p.HistMin)
	}
	return 1
}

// push stores a sample and returns the median of the last H (spec §3.6: "Take the
// median of the last min(H, stored) samples").
func (m *MSwift) push(sample float64, h int) float64 {
	m.hist[m.histNext] = sample
	m.histNext = (m.histNext + 1) % len(m.hist)
	m.histN = min(m.histN+1, len(m.hist))
	n := min(h, m.histN)
	s := m.scratch[:n]
	if k := m.histNext; k >= n { // the last n samples, in any order: the median sorts them
		copy(s, m.hist[k-n:k])
	} else {
		copy(s, m.hist[:k])
		copy(s[k:], m.hist[len(m.hist)-(n-k):])
	}
	return median(s)
}

// median sorts s in place and returns its median: the middle value, or the mean of the
// two middle values when len(s) is even (spec A1).
func median(s []float64) float64 {
	if len(s) <= 16 {
		for i := 1; i < len(s); i++ { // insertion sort: H is usually ≤ 10
			for j := i; j > 0 && s[j] < s[j-1]; j-- {
				s[j], s[j-1] = s[j-1], s[j]
			}
		}
	} else {
		slices.Sort(s)
	}
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// OnSend implements cc.Algorithm; MSwift keeps no per-packet state.
func (m *MSwift) OnSend(units.Time, uint64, units.Bytes) {}

// OnFeedback runs the Swift law on the (median) delay of this ACK.
func (m *MSwift) OnFeedback(now units.Time, fb *cc.Feedback) {
	if fb.Kind != cc.Ack || fb.RTT <= 0 {
		return
	}
	sample := fb.RTT - fb.Turnaround
	if sample <= 0 {
		sample = fb.RTT
	}
	if m.srtt <= 0 {
		m.srtt = sample
	} else {
		m.srtt += (sample - m.srtt) / 8 // htsim: srtt = 7/8·srtt + 1/8·sample
	}
	numAcked := float64(fb.AckedPackets)
	if numAcked == 0 && fb.AckedBytes > 0 {
		numAcked = float64(fb.AckedBytes) / m.mss
	}
	if numAcked > 0 {
		m.retx = 0
		m.lostRun = 0
	}
	d := m.push(float64(sample), m.historySize())
	m.lastMedian = d

	prev := m.cwnd
	tgt := m.target(m.cwnd)
	if d < tgt {
		if m.cwnd >= 1 {
			m.cwnd += m.p.AI * numAcked / m.cwnd
		} else {
			m.cwnd += m.p.AI * numAcked
		}
	} else if m.canDecrease(now) {
		m.cwnd *= max(1-m.p.Beta*(d-tgt)/d, 1-m.p.MaxMDF)
	}
	m.finish(now, prev)
}

func (m *MSwift) canDecrease(now units.Time) bool { return now-m.tLastDec >= m.srtt }

// OnLoss applies the loss decrease once LazyRun packets have been declared lost in a
// row (spec §3.5): LazyRun 1 is Swift's fast-recovery decrease.
func (m *MSwift) OnLoss(now units.Time, lost units.Bytes) {
	prev := m.cwnd
	m.retx = 0
	m.lostRun += max(int(math.Ceil(float64(lost)/m.mss)), 1)
	if m.lostRun >= m.p.LazyRun && m.canDecrease(now) {
		m.cwnd *= 1 - m.p.MaxMDF
		m.lostRun = 0
	}
	m.finish(now, prev)
}

// OnTimeout is Swift's retransmission-timeout reaction.
func (m *MSwift) OnTimeout(now units.Time) {
	prev := m.cwnd
	m.retx++
	if m.retx >= m.p.RetxResetThreshold {
		m.cwnd = m.p.MinCwnd
	} else if m.canDecrease(now) {
		m.cwnd *= 1 - m.p.MaxMDF
	}
	m.finish(now, prev)
}

func (m *MSwift) finish(now units.Time, prev float64) {
	m.cwnd = min(max(m.cwnd, m.p.MinCwnd), m.p.MaxCwnd)
	if m.cwnd < prev {
		m.tLastDec = now
	}
}

// Window is cwnd in payload bytes.
func (m *MSwift) Window() units.Bytes { return units.Bytes(m.cwnd * m.mss) }

// Rate is 0 at cwnd ≥ 1 packet, else one packet every srtt/cwnd (frame bits per second).
func (m *MSwift) Rate() units.Rate {
	if m.cwnd >= 1 || m.srtt <= 0 {
		return 0
	}
	return units.Rate(m.cwnd * m.pktBits * 1e9 / float64(m.srtt))
}

// Target is the current target delay, target(cwnd) (for tests and telemetry).
func (m *MSwift) Target() units.Time { return units.Time(m.target(m.cwnd)) }

// Cwnd is the congestion window in packets (for tests and telemetry).
func (m *MSwift) Cwnd() float64 { return m.cwnd }
