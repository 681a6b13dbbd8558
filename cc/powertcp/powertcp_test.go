package powertcp

import (
	"math"
	"testing"

	"reef/cc"
	"reef/cc/internal/cctest"
	"reef/units"
	"reef/wire"
)

// The test flow: 100 Gb/s (12.5 B/ns) NIC and bottleneck, τ = 10 µs, BDP = 125000 B,
// β = 0.006·BDP = 750 B.
const (
	testLine = 100 * units.Gbps
	testTau  = 10 * units.Microsecond
	testBDP  = 125000.0
	testBeta = 750.0
	testKbps = 100_000_000
)

var testEnv = cc.Env{MSS: 1000, PacketSize: 1054, LineRate: testLine, BaseRTT: testTau}

// ccTest drives one flow of either variant through cctest.Flow (x/net/quic's
// congestion-test style: a fixed start time, a log of every step, checks in between).
type ccTest struct {
	*cctest.Flow
	w *window
}

func newINT(t *testing.T) (*ccTest, *PowerTCP) {
	t.Helper()
	return newINTWith(t, *DefaultParams())
}

func newINTWith(t *testing.T, p Params) (*ccTest, *PowerTCP) {
	t.Helper()
	c, err := New(testEnv, p)
	if err != nil {
		t.Fatal(err)
	}
	return &ccTest{Flow: cctest.New(t, c, units.Millisecond), w: &c.window}, c
}

func newTheta(t *testing.T) (*ccTest, *Theta) {
	t.Helper()
	c, err := NewTheta(testEnv, *DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	return &ccTest{Flow: cctest.New(t, c, units.Millisecond), w: &c.window}, c
}

func (c *ccTest) sent(n int) {
	c.T.Helper()
	c.T.Logf("cwnd %.1f", c.w.cwnd)
	c.Sent(n, 1000)
}

func (c *ccTest) ack(seq uint64, rtt units.Time, hops ...wire.Hop) {
	c.T.Helper()
	c.T.Logf("hops %+v", hops)
	c.Feedback(cc.Feedback{Kind: cc.Ack, AckedBytes: 1000, AckedPackets: 1,
		AckSeq: seq, NextSeq: c.Next, RTT: rtt, Hops: hops})
}

func (c *ccTest) wantWindow(reason string, want float64) {
	c.T.Helper()
	c.WantWindow(reason, want, 1)
}

func (c *ccTest) wantPower(reason string, want float64) {
	c.T.Helper()
	if got := c.w.smooth; math.Abs(got-want) > 1e-9 {
		c.T.Errorf("%s: Γ_smooth = %.9f, want %.9f", reason, got, want)
	}
}

// hop builds an INT record at ts ns with cumulative bytes tx and queue q.
func hop(ts int64, tx uint64, q uint32) wire.Hop {
	return wire.Hop{TS: ts, TxBytes: tx, QLen: q, RateKbps: testKbps}
}

func TestINTFirstAckOnlyRecords(t *testing.T) {
	// spec oscar.md §4.2 (artifact): "Initial cwnd = BDP_base; pacing enabled".
	c, _ := newINT(t)
	c.wantWindow("initial window is one BDP", testBDP)
	if got := c.Alg.Rate(); got != testLine {
		t.Errorf("initial rate = %v, want %v", got, testLine)
	}
	c.sent(2)
	c.ack(0, 0, hop(0, 0, 400000))
	c.wantWindow("no previous record to difference", testBDP)
	c.wantPower("first ACK", 1)
	c.ack(1, 0)
	c.wantWindow("ACK without INT", testBDP)
}

func TestINTPowerVector(t *testing.T) {
	// spec oscar.md §4.2 (Algorithm 1): "lam = qdot + mu_i; Gamma' = lam*(qLen + BDP_i);
	// e = B^2*tau_b", "Gamma_smooth = (Gamma_smooth*(tau_b - Dt) + Gamma_norm*Dt)/tau_b",
	// "cwnd = gamma*(cwnd_old/Gamma_smooth + beta) + (1 - gamma)*cwnd".
	c, _ := newINT(t)
	c.sent(10)
	c.ack(0, 0, hop(0, 0, 0))
	// In 1 µs the hop sent 12500 B (line rate) and its queue grew by 12500 B: λ = 2·B,
	// Γ_norm = 2·(12500 + 125000)/125000 = 2.2; Γ_smooth = 0.9·1 + 0.1·2.2 = 1.12.
	c.Advance(units.Microsecond)
	c.ack(1, 0, hop(1000, 12500, 12500))
	c.wantPower("EWMA over 1 µs of 10", 1.12)
	c.wantWindow("MD from the send-time window", 0.9*(testBDP/1.12+testBeta)+0.1*testBDP)
	if got, want := float64(c.Alg.Rate()), float64(c.Alg.Window())*8e9/float64(testTau); math.Abs(got-want) > 1e6 { // Window is truncated to whole bytes
		t.Errorf("rate = %.0f, want cwnd/τ = %.0f", got, want)
	}
}

func TestINTIdealPointHolds(t *testing.T) {
	// "Target state is 100% utilization with an empty queue": Γ = 1, the window stays.
	c, _ := newINT(t)
	c.sent(20)
	c.ack(0, 0, hop(0, 0, 0))
	for i := range 10 {
		c.Advance(units.Microsecond)
		c.ack(uint64(i+1), 0, hop(int64(i+1)*1000, uint64(i+1)*12500, 0))
	}
	c.wantPower("λ = B, q = 0", 1)
	c.wantWindow("cwnd_old + β capped at one BDP", testBDP)
}

func TestINTUsesSendTimeWindow(t *testing.T) {
	// spec oscar.md §4.2: "cwnd_old = window in force when the acked packet was sent
	// (GET_CWND(ack.seq))".
	c, p := newINT(t)
	c.sent(1) // packet 0 under cwnd = 125000
	p.cwnd = 50000
	c.sent(1) // packet 1 under cwnd = 50000
	c.ack(0, 0, hop(0, 0, 0))
	c.Advance(units.Microsecond)
	c.ack(0, 0, hop(1000, 12500, 0)) // Γ = 1
	c.wantWindow("old = 125000, cwnd = 50000", 0.9*(testBDP+testBeta)+0.1*50000)
	p.cwnd = 50000
	c.Advance(units.Microsecond)
	c.ack(1, 0, hop(2000, 25000, 0))
	c.wantWindow("old = 50000: additive increase of 0.9·β", 0.9*(50000+testBeta)+0.1*50000)
	p.cwnd = 60000
	c.Advance(units.Microsecond)
	c.ack(999, 0, hop(3000, 37500, 0))
	c.wantWindow("unknown packet: old = current cwnd", 60000+0.9*testBeta)
}

func TestINTMultiplicativeIncreaseAndFloor(t *testing.T) {
	c, p := newINT(t)
	p.cwnd = 5000
	c.sent(2)
	c.ack(0, 0, hop(0, 0, 0))
	// Over τ the hop ran at 10% with no queue: Γ_norm = 0.1 replaces Γ_smooth.
	c.Advance(testTau)
	c.ack(1, 0, hop(10000, 12500, 0))
	c.wantPower("Dt = τ", 0.1)
	c.wantWindow("MI by 1/Γ", 0.9*(5000/0.1+testBeta)+0.1*5000)
	// Now a 100-BDP queue builds over τ: Γ_norm ≈ 20000 and only β and the (1−γ) term
	// are left of the window.
	w := float64(c.Alg.Window())
	c.Advance(testTau)
	c.ack(1, 0, hop(20000, 12500+12500000, 12500000))
	s := (12500000.0/10000 + 12500000.0/10000) * (12500000 + 125000) / (12.5 * 12.5 * 10000)
	c.wantPower("Dt = τ", s)
	c.wantWindow("MD by 1/Γ", 0.9*(5000/s+testBeta)+0.1*w)
}

func TestINTDrainingQueueCountsAsZero(t *testing.T) {
	// A queue that alternates 0, 1 frame, 0 between records gives λ = 2·B, then λ < 0.
	// The second sample still enters Γ_smooth, as power 0 over its Δt: skipping it would
	// leave only the high samples and bias Γ_smooth upwards.
	c, _ := newINT(t)
	c.sent(3)
	c.ack(0, 0, hop(0, 0, 0))
	c.Advance(units.Microsecond)
	c.ack(1, 0, hop(1000, 12500, 12500)) // Γ_norm = 2.2 (see TestINTPowerVector)
	c.Advance(units.Microsecond)
	c.ack(2, 0, hop(2000, 12500, 0)) // idle and drained: λ = −12.5 B/ns → 0
	c.wantPower("λ < 0 is power 0, weighted by its Δt", (0.9*1+0.1*2.2)*0.9)
}

func TestINTWindowFloor(t *testing.T) {
	// With γ = 1 and β = 0 the window is cwnd_old/Γ: a 100-BDP queue takes it to the
	// floor, min_ratio·BDP.
	p := *DefaultParams()
	p.Gamma, p.BetaRatio = 1, 0
	c, _ := newINTWith(t, p)
	c.sent(2)
	c.ack(0, 0, hop(0, 0, 0))
	c.Advance(testTau)
	c.ack(1, 0, hop(10000, 12500+12500000, 12500000))
	c.wantWindow("floor", 0.001*testBDP)
}

func TestINTMaxOverHops(t *testing.T) {
	// "if Gamma'/e > Gamma_norm: Gamma_norm = Gamma'/e; Dt = dt"
	c, _ := newINT(t)
	c.sent(2)
	c.ack(0, 0, hop(0, 0, 0), hop(0, 0, 0))
	c.Advance(2 * units.Microsecond)
	c.ack(1, 0,
		hop(1000, 6250, 0),     // 50%: Γ = 0.5
		hop(2000, 25000, 5000)) // λ = 15 B/ns over 2 µs: Γ = 15·130000/1562500
	c.wantPower("bottleneck hop, its own Dt", 0.8*1+0.2*1.248)
	w := float64(c.Alg.Window())
	c.ack(1, 0, hop(3000, 37500, 0)) // one hop now: recorded only
	c.wantPower("hop count change", 0.8*1+0.2*1.248)
	c.Alg.OnTimeout(c.Now)
	c.ack(1, 0, hop(4000, 37500, 900000))
	c.wantPower("first ACK after timeout records only", 0.8*1+0.2*1.248)
	c.Alg.OnLoss(c.Now, 1000)
	c.wantWindow("loss and timeout keep the window", w)
}

func TestThetaVector(t *testing.T) {
	// spec oscar.md §4.3 (Algorithm 2): "thetadot = (RTT - prevRTT)/dt;
	// Gamma_norm = (thetadot + 1)*RTT/tau_b"; "per RTT (ack.seq >= lastUpdated):
	// cwnd = gamma*(cwnd_old/Gamma_smooth + beta) + (1-gamma)*cwnd_old".
	c, _ := newTheta(t)
	c.sent(10)
	c.ack(0, 10*units.Microsecond) // lastUpdated = 10
	c.wantWindow("first ACK records only", testBDP)
	// 1 µs later the RTT is 12 µs: θ̇ = 2, Γ_norm = 3·12/10 = 3.6, Γ_smooth = 0.9 + 0.36.
	c.Advance(units.Microsecond)
	c.ack(1, 12*units.Microsecond)
	c.wantPower("EWMA over 1 µs", 1.26)
	c.wantWindow("no update before an RTT has passed", testBDP)
	// 1 µs later the RTT is flat at 12 µs: Γ_norm = 1.2.
	c.sent(1)
	c.Advance(units.Microsecond)
	c.ack(10, 12*units.Microsecond)
	c.wantPower("flat RTT above τ", 0.9*1.26+0.1*1.2)
	s := 0.9*1.26 + 0.1*1.2
	c.wantWindow("per-RTT update", 0.9*(testBDP/s+testBeta)+0.1*testBDP)
}

func TestThetaEdges(t *testing.T) {
	c, th := newTheta(t)
	c.sent(2)
	c.Alg.OnFeedback(c.Now, &cc.Feedback{Kind: cc.Ack, RTT: 15 * units.Microsecond,
		Turnaround: 5 * units.Microsecond, NextSeq: c.Next})
	if th.prevRTT != 10*units.Microsecond {
		t.Errorf("RTT sample = %v, want RTT − turnaround = 10µs", th.prevRTT)
	}
	c.ack(0, 20*units.Microsecond) // same instant: no gradient
	c.wantPower("Δt = 0 is skipped", 1)
	c.ack(0, 0)
	c.wantPower("no RTT sample", 1)
	// The RTT falls by 5 µs in 1 µs: θ̇ + 1 = −4, floored at 0 → Γ_norm = 0.
	c.Advance(units.Microsecond)
	c.ack(0, 5*units.Microsecond)
	c.wantPower("gradient floored at 0", 0.9)
	c.Alg.OnTimeout(c.Now)
	c.Advance(units.Microsecond)
	c.ack(1, 50*units.Microsecond)
	c.wantPower("first ACK after timeout records only", 0.9)
	c.Alg.OnFeedback(c.Now, &cc.Feedback{Kind: cc.CNP})
	c.wantWindow("CNP ignored, window kept", testBDP)
}

func TestParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Params)
		want string
	}{
		{"defaults", func(*Params) {}, ""},
		{"gamma", func(p *Params) { p.Gamma = 0 }, "gamma must be in (0, 1]"},
		{"gamma high", func(p *Params) { p.Gamma = 1.5 }, "gamma"},
		{"beta", func(p *Params) { p.BetaRatio = math.NaN() }, "beta_ratio"},
		{"min", func(p *Params) { p.MinRatio = 2 }, "min_ratio"},
		{"base_rtt", func(p *Params) { p.BaseRTT = -5 }, "base_rtt must be ≥ 0 (time)"},
	} {
		cctest.WantValidate(t, tc.name, DefaultParams, tc.mod, tc.want)
	}
	for _, name := range []string{"powertcp", "theta-powertcp"} {
		a, err := cc.New(name, testEnv)
		if err != nil {
			t.Fatal(err)
		}
		if a.Window() != testBDP || a.Deadline() != units.Never {
			t.Errorf("%s: window %v deadline %v, want one BDP and no timer", name, a.Window(), a.Deadline())
		}
		if _, err := cc.New(name, cc.Env{LineRate: testLine}); err == nil {
			t.Errorf("%s without a base RTT: no error", name)
		}
	}
	if len(newWindowMust(t).hist) != 512 {
		t.Errorf("history holds %d packets, want 512 (4 BDPs of 1000 B, rounded up)", len(newWindowMust(t).hist))
	}
}

func newWindowMust(t *testing.T) window {
	w, err := newWindow(testEnv, *DefaultParams(), "test")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestAckAllocatesNothing(t *testing.T) {
	p, _ := New(testEnv, *DefaultParams())
	fb := intFeedback()
	if a := testing.AllocsPerRun(100, func() { intAck(p, fb) }); a != 0 {
		t.Errorf("powertcp allocates %v per ACK", a)
	}
	th, _ := NewTheta(testEnv, *DefaultParams())
	fb = &cc.Feedback{Kind: cc.Ack}
	if a := testing.AllocsPerRun(100, func() { thetaAck(th, fb) }); a != 0 {
		t.Errorf("theta-powertcp allocates %v per ACK", a)
	}
}

func intFeedback() *cc.Feedback {
	return &cc.Feedback{Kind: cc.Ack, AckedBytes: 1000, AckedPackets: 1,
		Hops: []wire.Hop{hop(0, 0, 0), hop(0, 0, 3000), hop(0, 0, 0), hop(0, 0, 100), hop(0, 0, 0)}}
}

// intAck sends one packet and acks the one sent 100 packets earlier; every hop advanced
// 80 ns at line rate.
func intAck(p *PowerTCP, fb *cc.Feedback) {
	for i := range fb.Hops {
		fb.Hops[i].TS += 80
		fb.Hops[i].TxBytes += 1000
	}
	fb.NextSeq++
	p.OnSend(units.Time(fb.Hops[0].TS), fb.NextSeq, 1000)
	fb.AckSeq = fb.NextSeq - 100
	p.OnFeedback(units.Time(fb.Hops[0].TS), fb)
}

func thetaAck(th *Theta, fb *cc.Feedback) {
	fb.NextSeq++
	fb.SendTime += 80
	th.OnSend(fb.SendTime, fb.NextSeq, 1000)
	fb.AckSeq = fb.NextSeq - 100
	fb.RTT = testTau + units.Time(fb.NextSeq%7)*100
	th.OnFeedback(fb.SendTime+fb.RTT, fb)
}

// BenchmarkPowerTCP measures one OnSend plus one OnFeedback with a 5-hop INT stack.
func BenchmarkPowerTCP(b *testing.B) {
	p, _ := New(testEnv, *DefaultParams())
	fb := intFeedback()
	b.ReportAllocs()
	for b.Loop() {
		intAck(p, fb)
	}
}

// BenchmarkThetaPowerTCP measures one OnSend plus one OnFeedback on an RTT sample.
func BenchmarkThetaPowerTCP(b *testing.B) {
	th, _ := NewTheta(testEnv, *DefaultParams())
	fb := &cc.Feedback{Kind: cc.Ack}
	b.ReportAllocs()
	for b.Loop() {
		thetaAck(th, fb)
	}
}
