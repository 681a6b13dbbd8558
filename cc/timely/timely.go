// Package timely implements TIMELY (Mittal et al., SIGCOMM 2015) and Patched TIMELY
// (Zhu et al., CoNEXT 2016), rate-based datacenter congestion controls driven by the RTT
// and its gradient alone (no ECN, no INT). The host transport (hostd/transport) calls it
// on every send and every ACK; it turns ACKs into one RTT sample per completed segment
// and paces the flow at Rate. Like every cc algorithm it is a pure state machine.
//
// # Control law (spec timely.md §2.3, §7.3)
//
// Per completion event (the ACK of a segment's last packet, spec §2.2), with new_rtt the
// segment's RTT:
//
//	rtt_diff = (1−α)·rtt_diff + α·(new_rtt − prev_rtt);  g = rtt_diff/minRTT
//	new_rtt < Tlow:  rate += δ
//	new_rtt > Thigh: rate ×= 1 − β·(1 − Thigh/new_rtt)
//	g ≤ 0:           rate += N·δ   (N = 5 after 5 consecutive negative gradients: HAI)
//	else:            rate ×= 1 − β·g
//
// Patched TIMELY ("timely-patched", spec §7.3) replaces the last two lines with
// rate = δ·(1−w(g)) + rate·(1 − β·w(g)·(new_rtt − RTT_ref)/RTT_ref), RTT_ref = Tlow,
// w a ramp from 0 at g ≤ −¼ to 1 at g ≥ ¼, β = 0.008 and no HAI.
//
// # Parameters
//
// See Params: segment 16 KiB, Tlow 50 µs, Thigh 500 µs, δ 10 Mbps, β 0.8, minRTT 20 µs,
// HAI after 5 events ×5, α 0.875 (not in the paper; [Z]'s value, spec A5), at paper
// scale (10 Gbps).
//
// # Departures from the paper
//
//   - The transport paces packets at Rate. With Burst (spec §2.6 and §3.2
//     item 6) Rate is the line rate inside a segment and, after its last packet, the rate
//     that starts the next segment seg/rate after this one started: each segment leaves
//     as a line-rate burst and segments are spaced by the TIMELY rate. Without Burst the
//     packets are spread evenly at the TIMELY rate. The completion RTT is the RTT of the
//     segment's last packet minus the receiver turnaround and that packet's
//     serialisation at line rate: for a line-rate burst this equals the paper's
//     t_completion − t_send − seg/line_rate, and for a paced segment it is the paper's
//     "subtract the serialisation at the pacing rate" (spec §2.2). The rate changes the
//     gap to the next segment at once, in both directions (the paper's pacer is lazy on
//     increases).
//   - The receiver's turnaround is subtracted (spec A4; the paper's NIC ACKs at once).
//   - Tlow and Thigh are measured above the path's base RTT by default (spec §6.3, A16);
//     ThresholdsAboveBase false compares the full RTT as the paper does.
//   - Updates are scaled by f = min(1, Δt/minRTT) (spec A11, the paper's "scale the updates
//     by the number of completions per minimum RTT"); ScaleUpdates false is literal Alg. 1.
//   - A segment ends early when the sender pauses (no packet for two pacing gaps and at
//     least MinRTT), so a message's last short segment still completes (spec §2.6).
//   - Segments containing a retransmitted packet give no sample (Karn, spec §3.2 item 10).
//   - Losses and timeouts do not change the rate (the paper ran lossless; spec §3.2).
//   - The rate is floored at MinRate (not in the paper, spec A10) and starts at InitRate.
//     Flags offer eRPC's readings: HAI counted on raw RTT differences, and at most a
//     MaxDecrease cut per update (both off).
package timely

import (
	"fmt"
	"math"

	"reef/cc"
	"reef/units"
)

// Params are TIMELY's parameters, at paper scale (10 Gbps); cc.ScaleParams scales them.
type Params struct {
	// Patched selects Patched TIMELY (spec §7.3). Default false ("timely"), true for
	// "timely-patched".
	Patched bool `yaml:"patched"`
	// SegmentSize is the completion unit (payload bytes). Default 16KiB (spec A1).
	SegmentSize units.Bytes `yaml:"segment_size"`
	// TLow is the low RTT threshold (time). Default 50µs.
	TLow units.Time `yaml:"t_low"`
	// THigh is the high RTT threshold (time). Default 500µs.
	THigh units.Time `yaml:"t_high"`
	// ThresholdsAboveBase adds the path's base RTT (cc.Env.BaseRTT) to TLow and THigh and
	// to Patched TIMELY's reference RTT (spec §6.3, A16). Default true.
	ThresholdsAboveBase bool `yaml:"thresholds_above_base"`
	// Delta is the additive increment per completion event (bit/s). Default 10Mbps.
	Delta units.Rate `yaml:"delta"`
	// Beta is the multiplicative decrement factor (dimensionless). Default 0.8; 0.008
	// for Patched TIMELY.
	Beta float64 `yaml:"beta"`
	// BetaHigh is the factor of the Thigh branch (dimensionless); 0 means Beta (spec A14).
	// Default 0.
	BetaHigh float64 `yaml:"beta_high"`
	// Alpha is the EWMA weight of the newest RTT difference (dimensionless, (0,1]).
	// Default 0.875 (not in the paper, spec A5).
	Alpha float64 `yaml:"alpha"`
	// MinRTT is the fixed gradient normalizer (time). Default 20µs.
	MinRTT units.Time `yaml:"min_rtt"`
	// HAIThreshold is the number of consecutive negative-gradient completion events after
	// which hyperactive increase starts (events); 0 disables HAI. Default 5; 0 for
	// Patched TIMELY.
	HAIThreshold int `yaml:"hai_threshold"`
	// HAIMult is the increment multiplier N in HAI mode (dimensionless). Default 5.
	HAIMult float64 `yaml:"hai_mult"`
	// HAIRawDiff counts negative raw RTT differences toward HAI instead of negative
	// smoothed gradients (eRPC's reading, spec A7). Default false.
	HAIRawDiff bool `yaml:"hai_raw_diff"`
	// MaxDecrease bounds one update's cut to this fraction of the rate (dimensionless,
	// [0,1)); 0 means no bound. Default 0 (eRPC uses 0.5; not in the paper, spec A10).
	MaxDecrease float64 `yaml:"max_decrease"`
	// AppLimitFraction: the rate increases only if the flow sent more than this fraction
	// of the rate since the previous completion (dimensionless); 0 disables. Default 0.8.
	AppLimitFraction float64 `yaml:"app_limit_fraction"`
	// ScaleUpdates scales each update by min(1, Δt/MinRTT) (spec A11). Default true.
	ScaleUpdates bool `yaml:"scale_updates"`
	// MaxRate caps the rate (bit/s); 0 means the line rate. Default 0 (the paper's 10 Gbps
	// line rate).
	MaxRate units.Rate `yaml:"max_rate"`
	// MinRate floors the rate (bit/s). Default 10Mbps (not in the paper, spec A10).
	MinRate units.Rate `yaml:"min_rate"`
	// InitRate is the starting rate (bit/s); 0 means the line rate. Default 0 (spec A9).
	InitRate units.Rate `yaml:"init_rate"`
	// Burst sends each segment as a line-rate burst, segments spaced by the rate (spec
	// §2.6, §3.2 item 6); false spreads packets evenly at the rate. Default false (the
	// behaviour the package's dumbbell tests were written for; experiments reproducing
	// the paper's testbed set it).
	Burst bool `yaml:"burst"`
}

// DefaultParams returns TIMELY's parameters (spec timely.md §2.4).
func DefaultParams() *Params {
	return &Params{
		SegmentSize:         16 << 10,
		TLow:                50 * units.Microsecond,
		THigh:               500 * units.Microsecond,
		ThresholdsAboveBase: true,
		Delta:               10 * units.Mbps,
		Beta:                0.8,
		Alpha:               0.875,
		MinRTT:              20 * units.Microsecond,
		HAIThreshold:        5,
		HAIMult:             5,
		AppLimitFraction:    0.8,
		ScaleUpdates:        true,
		MinRate:             10 * units.Mbps,
	}
}

// DefaultPatchedParams returns Patched TIMELY's parameters (spec §7.3: "all other
// TIMELY parameters remain the same except we set β = 0.008", no HAI).
func DefaultPatchedParams() *Params {
	p := DefaultParams()
	p.Patched = true
	p.Beta = 0.008
	p.HAIThreshold = 0
	return p
}

// Validate names the first bad field and its unit.
func (p *Params) Validate() error {
	switch {
	case p.SegmentSize <= 0:
		return fmt.Errorf("timely: segment_size must be > 0 bytes, got %v", p.SegmentSize)
	case p.TLow <= 0:
		return fmt.Errorf("timely: t_low must be > 0, got %v", p.TLow)
	case p.THigh <= p.TLow:
		return fmt.Errorf("timely: t_high must be > t_low (%v), got %v", p.TLow, p.THigh)
	case p.Delta <= 0:
		return fmt.Errorf("timely: delta must be > 0 bit/s, got %v", p.Delta)
	case !(p.Beta > 0 && p.Beta <= 1):
		return fmt.Errorf("timely: beta must be in (0, 1], got %g", p.Beta)
	case !(p.BetaHigh >= 0 && p.BetaHigh <= 1):
		return fmt.Errorf("timely: beta_high must be in [0, 1] (0 = beta), got %g", p.BetaHigh)
	case !(p.Alpha > 0 && p.Alpha <= 1):
		return fmt.Errorf("timely: alpha must be in (0, 1], got %g", p.Alpha)
	case p.MinRTT <= 0:
		return fmt.Errorf("timely: min_rtt must be > 0, got %v", p.MinRTT)
	case p.HAIThreshold < 0:
		return fmt.Errorf("timely: hai_threshold must be ≥ 0 events, got %d", p.HAIThreshold)
	case p.HAIThreshold > 0 && !(p.HAIMult >= 1):
		return fmt.Errorf("timely: hai_mult must be ≥ 1, got %g", p.HAIMult)
	case !(p.MaxDecrease >= 0 && p.MaxDecrease < 1):
		return fmt.Errorf("timely: max_decrease must be in [0, 1) (0 = none), got %g", p.MaxDecrease)
	case !(p.AppLimitFraction >= 0 && p.AppLimitFraction <= 1):
		return fmt.Errorf("timely: app_limit_fraction must be in [0, 1], got %g", p.AppLimitFraction)
	case p.MinRate <= 0:
		return fmt.Errorf("timely: min_rate must be > 0 bit/s, got %v", p.MinRate)
	case p.MaxRate < 0 || (p.MaxRate > 0 && p.MaxRate < p.MinRate):
		return fmt.Errorf("timely: max_rate must be ≥ min_rate (%v) or 0 (line rate), got %v", p.MinRate, p.MaxRate)
	case p.InitRate < 0:
		return fmt.Errorf("timely: init_rate must be ≥ 0 bit/s (0 = line rate), got %v", p.InitRate)
	}
	return nil
}

func init() {
	for _, s := range []struct {
		name, doc string
		defaults  func() *Params
	}{
		{"timely", "TIMELY (SIGCOMM'15): rate-based, per-segment RTT gradient with HAI", DefaultParams},
		{"timely-patched", "Patched TIMELY (CoNEXT'16): absolute-RTT decrease weighted by the RTT gradient", DefaultPatchedParams},
	} {
		cc.Register(cc.SpecOf(s.name, s.doc, s.defaults, New))
	}
}

// segment is a run of consecutively numbered new packets, one completion unit.
type segment struct {
	first, last uint64
	retx        bool // contains a retransmitted packet: no RTT sample (Karn)
}

// maxSegments bounds the segments tracked in flight; older ones are forgotten (they
// then give no sample). 256 × 16 KiB = 4 MiB of data in flight.
const maxSegments = 256

// Timely is one flow's controller. Not safe for concurrent use.
type Timely struct {
	cc.NoTimer // no timers

	p        Params
	lineRate float64
	maxRate  float64
	tLow     units.Time // thresholds as compared with the completion RTT
	tHigh    units.Time
	ref      float64 // Patched TIMELY's RTT_ref (ns) and its normaliser
	refNorm  float64
	betaHigh float64
	pkt      units.Bytes // one full frame
	mss      units.Bytes // its payload
	pktSer   units.Time  // one full frame at line rate

	rate       float64 // bit/s
	prevRTT    units.Time
	rttDiff    float64 // ns, EWMA
	negCount   int
	lastUpdate units.Time
	havePrev   bool

	// Segments: ring[head..head+n) are closed and awaiting completion; open is the one
	// being filled.
	ring      [maxSegments]segment
	head, n   int
	open      segment
	openBytes units.Bytes
	openUsed  bool
	nextSeq   uint64 // next new packet number expected from OnSend
	lastSend  units.Time
	// Burst pacing: the start time and frame bytes of the newest segment (open or last
	// closed), and whether a burst is under way (its segment is open).
	segStart  units.Time
	segFrames units.Bytes
	inBurst   bool
	sentBytes units.Bytes // payload bytes sent since the last completion (app-limited test)
}

// New builds a TIMELY controller for one flow.
func New(env cc.Env, p *Params) (*Timely, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if env.LineRate <= 0 {
		return nil, fmt.Errorf("timely: env line rate must be > 0 bit/s, got %v", env.LineRate)
	}
	t := &Timely{p: *p, lineRate: float64(env.LineRate), tLow: p.TLow, tHigh: p.THigh, betaHigh: p.BetaHigh}
	t.maxRate = t.lineRate
	if p.MaxRate > 0 {
		t.maxRate = float64(p.MaxRate)
	}
	if p.ThresholdsAboveBase {
		t.tLow += env.BaseRTT
		t.tHigh += env.BaseRTT
	}
	t.ref, t.refNorm = float64(t.tLow), float64(p.TLow)
	if t.betaHigh == 0 {
		t.betaHigh = p.Beta
	}
	pkt := env.PacketSize
	if pkt <= 0 {
		pkt = env.MSS
	}
	t.pkt, t.pktSer = pkt, env.LineRate.TxTime(pkt)
	t.mss = env.MSS
	if t.mss <= 0 {
		t.mss = pkt
	}
	t.rate = t.maxRate
	if p.InitRate > 0 {
		t.rate = min(float64(p.InitRate), t.maxRate)
	}
	t.rate = max(t.rate, float64(p.MinRate))
	return t, nil
}

// OnSend groups new packets into segments and marks segments holding retransmissions.
func (t *Timely) OnSend(now units.Time, seq uint64, size units.Bytes) {
	t.sentBytes += size
	if seq < t.nextSeq { // a retransmission: its segment gives no RTT sample
		if t.openUsed && seq >= t.open.first {
			t.open.retx = true
		} else {
			t.markRetx(seq)
		}
		return
	}
	if t.openUsed && t.paused(now) {
		t.closeOpen() // the sender paused: the segment ends here
	}
	if !t.openUsed {
		t.open = segment{first: seq}
		t.openBytes, t.openUsed = 0, true
		t.segStart, t.segFrames = now, 0
	}
	t.open.last = seq
	t.openBytes += size
	t.segFrames += t.frameOf(size)
	t.nextSeq = seq + 1
	t.lastSend = now
	t.inBurst = true
	if t.openBytes >= t.p.SegmentSize {
		t.closeOpen()
	}
}

// frameOf is the frame length of a packet with size payload bytes: a full frame for a
// full payload, shorter by the payload it lacks.
func (t *Timely) frameOf(size units.Bytes) units.Bytes {
	return max(t.pkt-max(t.mss-size, 0), 1)
}

// paused reports whether the sender has sent nothing for two pacing gaps (and at least
// MinRTT) since its last packet: the open segment is then complete.
func (t *Timely) paused(now units.Time) bool {
	gap := units.Time(float64(t.pkt) * 8e9 / t.rate)
	return now-t.lastSend > max(2*gap, t.p.MinRTT)
}

func (t *Timely) closeOpen() {
	if !t.openUsed {
		return
	}
	if t.n == maxSegments { // forget the oldest
		t.head = (t.head + 1) % maxSegments
		t.n--
	}
	t.ring[(t.head+t.n)%maxSegments] = t.open
	t.n++
	t.openUsed, t.inBurst = false, false
}

func (t *Timely) markRetx(seq uint64) {
	for i := 0; i < t.n; i++ {
		s := &t.ring[(t.head+i)%maxSegments]
		if seq >= s.first && seq <= s.last {
			s.retx = true
			return
		}
	}
}

// OnFeedback completes the segments the ACK covers and, for the newest one, runs the
// rate computation on its RTT.
func (t *Timely) OnFeedback(now units.Time, fb *cc.Feedback) {
	if fb.Kind != cc.Ack {
		return
	}
	// A paused sender's open segment completes once its last packet is acknowledged.
	if t.openUsed && fb.AckSeq >= t.open.last && t.paused(now) {
		t.closeOpen()
	}
	var done segment
	completed := false
	for t.n > 0 && t.ring[t.head].last <= fb.AckSeq {
		done, completed = t.ring[t.head], true
		t.head = (t.head + 1) % maxSegments
		t.n--
	}
	if !completed || done.retx || fb.RTT <= 0 {
		return
	}
	rtt := fb.RTT - fb.Turnaround - t.pktSer
	if rtt <= 0 {
		rtt = 1
	}
	t.update(now, rtt)
}

// update is Algorithm 1 (or Patched TIMELY's Algorithm 2) on one completion RTT.
func (t *Timely) update(now, newRTT units.Time) {
	f, canInc := 1.0, true
	if !t.havePrev { // spec A8: the first sample has a zero gradient
		t.prevRTT, t.havePrev = newRTT, true
	} else {
		dt := max(now-t.lastUpdate, 1)
		if t.p.ScaleUpdates {
			f = min(1, float64(dt)/float64(t.p.MinRTT))
		}
		// spec A12: the app rate is what the flow sent since the previous completion.
		appRate := float64(t.sentBytes) * 8e9 / float64(dt)
		canInc = t.p.AppLimitFraction == 0 || appRate > t.p.AppLimitFraction*t.rate
	}
	t.lastUpdate, t.sentBytes = now, 0

	newDiff := float64(newRTT - t.prevRTT)
	t.prevRTT = newRTT
	t.rttDiff = (1-t.p.Alpha)*t.rttDiff + t.p.Alpha*newDiff
	g := t.rttDiff / float64(t.p.MinRTT)
	neg := g < 0 // spec A7: consecutive events with a negative smoothed gradient
	if t.p.HAIRawDiff {
		neg = newDiff < 0
	}
	if neg {
		t.negCount++
	} else {
		t.negCount = 0
	}
	old := t.rate
	delta := float64(t.p.Delta)

	switch {
	case newRTT < t.tLow:
		if canInc {
			t.rate += f * delta
		}
	case newRTT > t.tHigh:
		t.rate *= 1 - f*t.betaHigh*(1-float64(t.tHigh)/float64(newRTT))
	case t.p.Patched:
		w := weight(g)
		e := (float64(newRTT) - t.ref) / t.refNorm
		inc := f * delta * (1 - w)
		if !canInc {
			inc = 0
		}
		t.rate = inc + t.rate*max(0, 1-f*t.p.Beta*w*e)
	case g <= 0:
		n := 1.0
		if t.p.HAIThreshold > 0 && t.negCount >= t.p.HAIThreshold {
			n = t.p.HAIMult
		}
		if canInc {
			t.rate += f * n * delta
		}
	default:
		t.rate *= max(0, 1-f*t.p.Beta*g)
	}
	if t.p.MaxDecrease > 0 {
		t.rate = max(t.rate, old*(1-t.p.MaxDecrease))
	}
	t.rate = min(max(t.rate, float64(t.p.MinRate)), t.maxRate)
}

// weight is Patched TIMELY's w(g) (spec §7.3): 0 at g ≤ −¼, 2g+½ between, 1 at g ≥ ¼.
func weight(g float64) float64 {
	switch {
	case g <= -0.25:
		return 0
	case g >= 0.25:
		return 1
	}
	return 2*g + 0.5
}

// OnLoss implements cc.Algorithm: TIMELY reacts to delay only.
func (t *Timely) OnLoss(units.Time, units.Bytes) {}

// OnTimeout implements cc.Algorithm: TIMELY reacts to delay only; segments in flight
// are forgotten (their packets will be retransmitted).
func (t *Timely) OnTimeout(units.Time) {
	t.head, t.n, t.openUsed = 0, 0, false
}

// Window is units.MaxBytes: TIMELY is rate-based.
func (t *Timely) Window() units.Bytes { return units.MaxBytes }

// Rate is the pacing rate (frame bits per second) for the gap after the last packet
// sent. Without Burst it is the TIMELY rate. With Burst it is the line rate inside a
// segment and, after a segment's last packet, the rate at which one full frame spans
// the time left until the next segment is due (segStart + segment frames / rate).
func (t *Timely) Rate() units.Rate {
	if !t.p.Burst {
		return units.Rate(math.Round(t.rate))
	}
	if t.inBurst {
		return units.Rate(t.lineRate)
	}
	due := t.segStart + units.Time(float64(t.segFrames)*8e9/t.rate)
	left := due - t.lastSend
	if left <= t.pktSer {
		return units.Rate(t.lineRate)
	}
	return units.Rate(math.Round(float64(t.pkt) * 8e9 / float64(left)))
}

// TargetRate is the TIMELY rate (bit/s of frames), what Rate averages to over segments.
func (t *Timely) TargetRate() units.Rate { return units.Rate(math.Round(t.rate)) }
