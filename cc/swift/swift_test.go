package swift

import (
	"math"
	"testing"

	"reef/cc"
	"reef/cc/internal/cctest"
	"reef/units"
)

const mss = 1000

// ccTest drives one Swift instance through cctest.Flow (x/net/quic's congestion-test
// style: a fixed clock, logged events and expectations on the window).
type ccTest struct {
	*cctest.Flow
	s *Swift
}

func newTest(t *testing.T, cwnd float64, mod func(*Params)) *ccTest {
	t.Helper()
	p := DefaultParams()
	p.InitCwnd = cwnd
	if mod != nil {
		mod(p)
	}
	s, err := New(cc.Env{MSS: mss, BaseRTT: 10 * units.Microsecond}, *p)
	if err != nil {
		t.Fatal(err)
	}
	return &ccTest{Flow: cctest.New(t, s, units.Second), s: s}
}

// ack delivers an ACK of pkts packets whose fabric delay (and RTT) is delay.
func (c *ccTest) ack(pkts int, delay units.Time) {
	c.T.Helper()
	c.Feedback(cc.Feedback{Kind: cc.Ack, AckedBytes: units.Bytes(pkts * mss), AckedPackets: pkts,
		RTT: delay, FabricDelay: delay})
}

func (c *ccTest) wantCwnd(why string, want float64) {
	c.T.Helper()
	c.WantCwnd(why, want, 1e-9)
}

func TestTarget(t *testing.T) {
	// spec poseidon.md §4.4 [DERIVED]: "The flow-scaling term is 100 us at cwnd <= 0.1,
	// 29.4 us at cwnd 1, 11.3 us at 5, 7.1 us at 10, 1.4 us at 50 and 0 at cwnd >= 100."
	for _, tc := range []struct {
		cwnd float64
		hops int
		fs   float64 // µs
	}{{0.05, 0, 100}, {0.1, 0, 100}, {1, 0, 29.39}, {5, 0, 11.34}, {10, 0, 7.06}, {50, 0, 1.35}, {100, 0, 0}, {500, 3, 0}, {10, 4, 7.06}} {
		c := newTest(t, tc.cwnd, nil)
		got := c.s.Target(tc.hops).Microseconds()
		// target = base_target + hops·h + flow term, base 25µs, h 1µs (Poseidon §5)
		want := 25 + float64(tc.hops) + tc.fs
		if math.Abs(got-want) > 0.01 {
			t.Errorf("cwnd %g, %d hops: target %.3fµs, want %.3fµs", tc.cwnd, tc.hops, got, want)
		}
		// The method is the exported pure function over the flow's window (cc/mswift
		// shares the same law through FlowScaling).
		if pure := TargetDelay(*DefaultParams(), tc.hops, c.s.Cwnd()); pure != c.s.Target(tc.hops) {
			t.Errorf("cwnd %g, %d hops: TargetDelay = %v, Swift.Target = %v; want equal", tc.cwnd, tc.hops, pure, c.s.Target(tc.hops))
		}
	}
}

func TestFlowScalingEnds(t *testing.T) {
	// The curve passes through (fs_min_cwnd, fs_range) and (fs_max_cwnd, 0) and is
	// clamped outside them; Ns keeps the fraction of a ns that TargetDelay rounds away.
	fs := NewFlowScaling(100*units.Microsecond, 0.1, 100)
	for _, tc := range []struct {
		cwnd, want float64 // pkts, ns
	}{{0.01, 100000}, {0.1, 100000}, {100, 0}, {1000, 0}} {
		if got := fs.Ns(tc.cwnd); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("Ns(%g) = %.6f ns, want %.0f", tc.cwnd, got, tc.want)
		}
	}
	if got := fs.Ns(1); got == math.Trunc(got) {
		t.Errorf("Ns(1) = %v: want the unrounded term (29.39µs and a fraction)", got)
	}
}

func TestAdditiveIncrease(t *testing.T) {
	// spec baselines.md §3.1 (reconstructed): "if delay < target: cwnd += ai * num_acked
	// / cwnd if cwnd >= 1 pkt"
	c := newTest(t, 10, nil)
	c.ack(1, 20*units.Microsecond)
	c.wantCwnd("one packet acked below target adds ai/cwnd", 10.1)
	c.ack(3, 20*units.Microsecond)
	c.wantCwnd("three packets add 3·ai/cwnd", 10.1+3/10.1)
	// "cwnd += ai * num_acked if cwnd < 1 pkt"
	c = newTest(t, 0.5, nil)
	c.ack(1, 20*units.Microsecond)
	c.wantCwnd("below one packet each acked packet adds ai", 1.5)
	// A duplicate ACK (nothing newly acked) below target changes nothing.
	c.ack(0, 20*units.Microsecond)
	c.wantCwnd("nothing acked, nothing added", 1.5)
}

func TestMultiplicativeDecrease(t *testing.T) {
	// spec baselines.md §3.1 (reconstructed): "elif can_decrease: cwnd *= max(1 -
	// beta*(delay - target)/delay, 1 - max_mdf)"; at cwnd 100 the target is 25µs.
	c := newTest(t, 100, nil)
	c.ack(1, 50*units.Microsecond)
	c.wantCwnd("delay 2× target: factor 1 − 0.8·25/50 = 0.6", 60)
	// "can_decrease = (now - t_last_decrease) >= rtt": the RTT is now ≈ 15µs (EWMA of
	// 10µs and 50µs); a second ACK in the same RTT does not decrease again.
	c.Advance(units.Microsecond)
	c.ack(1, 50*units.Microsecond)
	c.wantCwnd("at most one decrease per RTT", 60)
	c.Advance(100 * units.Microsecond)
	c.ack(1, 200*units.Microsecond) // srtt ≈ 42µs < 101µs since the last decrease
	// Target at cwnd 60 ≈ 25.95µs: 1 − 0.8·174/200 = 0.30 is bounded by 1 − max_mdf = 0.5.
	c.wantCwnd("huge overshoot: decrease bounded by max_mdf", 30)
	// A delay exactly at target is not below it, but decreases by 1 − 0 = nothing.
	c = newTest(t, 100, nil)
	c.ack(1, 25*units.Microsecond)
	c.wantCwnd("delay = target: factor 1", 100)
}

func TestLossAndTimeout(t *testing.T) {
	// spec poseidon.md §4.2 (reconstructed): "On fast recovery: retransmit_cnt <- 0; if
	// can_decrease then cwnd <- (1 - max_mdf) * cwnd"
	c := newTest(t, 40, nil)
	c.s.OnLoss(c.Now, mss)
	c.wantCwnd("loss halves", 20)
	c.s.OnLoss(c.Now, mss)
	c.wantCwnd("a second loss in the same RTT does not", 20)
	// "On retransmit timeout: retransmit_cnt++; if retransmit_cnt >=
	// RETX_RESET_THRESHOLD then cwnd <- min_cwnd else if can_decrease then cwnd <-
	// (1 - max_mdf) * cwnd"
	want := 20.0
	for i := 1; i < 5; i++ {
		c.Advance(units.Millisecond)
		c.s.OnTimeout(c.Now)
		want /= 2
		c.wantCwnd("timeout below the reset threshold halves", want)
	}
	c.Advance(units.Millisecond)
	c.s.OnTimeout(c.Now)
	c.wantCwnd("fifth consecutive timeout resets to min_cwnd", 0.001)
	if w := c.s.Window(); w >= mss {
		t.Errorf("window %dB at cwnd 0.001: want below one MSS so the transport paces", w)
	}
	// An ACK resets the count: four more timeouts do not reset the window.
	c = newTest(t, 40, nil)
	for i := 0; i < 4; i++ {
		c.Advance(units.Millisecond)
		c.s.OnTimeout(c.Now)
	}
	c.ack(0, 100*units.Microsecond) // MD in this RTT? cwnd 2.5 target ≈ 43µs
	before := c.s.Cwnd()
	c.Advance(units.Millisecond)
	c.s.OnTimeout(c.Now)
	c.wantCwnd("after an ACK the fifth timeout only halves", before/2)
}

func TestClamp(t *testing.T) {
	// "cwnd = clamp(cwnd, min_cwnd, max_cwnd)"
	c := newTest(t, 999.9, nil)
	c.ack(1000, units.Microsecond)
	c.wantCwnd("capped at max_cwnd", 1000)
	c = newTest(t, 0.0015, nil)
	c.ack(1, units.Second)
	c.wantCwnd("floored at min_cwnd", 0.001)
}

func TestRTTSignal(t *testing.T) {
	// Params.Delay = "rtt" compares the raw RTT; "fabric" (default) FabricDelay.
	for _, tc := range []struct {
		delay string
		want  float64
	}{{"fabric", 100 + 1.0/100}, {"rtt", 60}} {
		c := newTest(t, 100, func(p *Params) { p.Delay = tc.delay })
		c.s.OnFeedback(c.Now, &cc.Feedback{Kind: cc.Ack, AckedBytes: mss, RTT: 50 * units.Microsecond,
			FabricDelay: 10 * units.Microsecond})
		c.wantCwnd("delay signal "+tc.delay, tc.want)
	}
}

func TestInitialWindow(t *testing.T) {
	s, err := New(cc.Env{MSS: 1000, LineRate: 10 * units.Gbps, BaseRTT: 8 * units.Microsecond}, *DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Cwnd(); got != 10 { // 10Gbps × 8µs = 10KB
		t.Errorf("init cwnd %g pkts, want one BDP = 10", got)
	}
}

func TestValidate(t *testing.T) {
	for field, mod := range map[string]func(*Params){
		"base_target":          func(p *Params) { p.BaseTarget = 0 },
		"hop_scaling":          func(p *Params) { p.HopScaling = -1 },
		"fs_min_cwnd":          func(p *Params) { p.FsMinCwnd = 200 },
		"ai":                   func(p *Params) { p.AI = math.NaN() },
		"beta":                 func(p *Params) { p.Beta = 1.5 },
		"max_mdf":              func(p *Params) { p.MaxMDF = 1 },
		"min_cwnd":             func(p *Params) { p.MinCwnd = 0 },
		"retx_reset_threshold": func(p *Params) { p.RetxResetThreshold = 0 },
		"delay":                func(p *Params) { p.Delay = "fabirc" },
	} {
		cctest.WantValidate(t, "bad "+field, DefaultParams, mod, field)
	}
	cctest.WantValidate(t, "defaults", DefaultParams, func(*Params) {}, "")
}

func TestRegistered(t *testing.T) {
	alg, err := cc.New("swift", cc.Env{MSS: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := alg.(*Swift); !ok {
		t.Errorf("cc.New(swift) built %T", alg)
	}
	p := DefaultParams()
	if err := cc.ScaleParams(p, 10); err != nil || p.BaseTarget != 250*units.Microsecond || p.FsRange != units.Millisecond {
		t.Errorf("time scale 10: base_target %v fs_range %v (%v), want 250µs and 1ms", p.BaseTarget, p.FsRange, err)
	}
}

func TestPLB(t *testing.T) {
	// PLB (Qureshi et al. 2022, with Swift in Poseidon §5.4): after plb_rounds
	// consecutive rounds in which ≥ half the ACKs saw delay ≥ target, move the flow.
	c := newTest(t, 100, func(p *Params) { p.PLB = true })
	round := func(seq uint64, delay units.Time) {
		c.Advance(100 * units.Microsecond)
		c.s.OnFeedback(c.Now, &cc.Feedback{Kind: cc.Ack, AckedBytes: mss, AckSeq: seq, NextSeq: seq + 1,
			RTT: delay, FabricDelay: delay})
	}
	for i := uint64(0); i < 4; i++ {
		round(i, 200*units.Microsecond)
		if c.s.Repath() {
			t.Fatalf("repath after %d congested rounds, want 5", i+1)
		}
	}
	round(4, 20*units.Microsecond) // an uncongested round resets the count
	for i := uint64(5); i < 9; i++ {
		round(i, 200*units.Microsecond)
	}
	if c.s.Repath() {
		t.Fatal("repath after 4 congested rounds following a clean one")
	}
	round(9, 200*units.Microsecond)
	if !c.s.Repath() || c.s.Repath() {
		t.Error("the fifth consecutive congested round must ask for exactly one repath")
	}
	c.s.OnTimeout(c.Now)
	if !c.s.Repath() {
		t.Error("a timeout must ask for a repath")
	}
	// Off by default.
	c = newTest(t, 100, nil)
	for i := uint64(0); i < 10; i++ {
		round(i, 200*units.Microsecond)
	}
	if c.s.Repath() {
		t.Error("repath with PLB off")
	}
}
