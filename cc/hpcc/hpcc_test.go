package hpcc

import (
	"math"
	"testing"

	"reef/cc"
	"reef/cc/internal/cctest"
	"reef/units"
	"reef/wire"
)

// The test flow: 100 Gb/s NIC and bottleneck, T = 10 µs, so BDP = 125000 B and one hop
// at full rate transmits 12500 B per µs.
const (
	testLine = 100 * units.Gbps
	testRTT  = 10 * units.Microsecond
	testBDP  = 125000.0
	testKbps = 100_000_000
)

// ccTest drives one HPCC flow through cctest.Flow (x/net/quic's congestion-test style:
// it starts at a fixed time, logs what it does and checks the window after each step).
type ccTest struct {
	*cctest.Flow
	h *HPCC
}

func newTest(t *testing.T, mod func(*Params)) *ccTest {
	t.Helper()
	p := DefaultParams()
	if mod != nil {
		mod(p)
	}
	h, err := New(cc.Env{MSS: 1000, PacketSize: 1054, LineRate: testLine, BaseRTT: testRTT}, *p)
	if err != nil {
		t.Fatal(err)
	}
	return &ccTest{Flow: cctest.New(t, h, 1*units.Millisecond), h: h}
}

// sent advances snd_nxt by n packets.
func (c *ccTest) sent(n int) {
	c.T.Helper()
	c.Sent(n, 1000)
}

// ack delivers an ACK for packet seq carrying hops.
func (c *ccTest) ack(seq uint64, hops ...wire.Hop) {
	c.T.Helper()
	c.T.Logf("hops %+v", hops)
	c.Feedback(cc.Feedback{Kind: cc.Ack, AckedBytes: 1000, AckedPackets: 1,
		AckSeq: seq, NextSeq: c.Next, Hops: hops})
}

func (c *ccTest) wantWindow(reason string, want float64) {
	c.T.Helper()
	c.WantWindow(reason, want, 1)
}

func (c *ccTest) wantU(reason string, want float64) {
	c.T.Helper()
	if got := c.h.Utilisation(); math.Abs(got-want) > 1e-9 {
		c.T.Errorf("%s: U = %.9f, want %.9f", reason, got, want)
	}
}

// hop builds an INT record at time ts (µs) with cumulative bytes tx and queue q.
func hop(tsUs float64, tx uint64, q uint32) wire.Hop {
	return wire.Hop{TS: int64(tsUs * 1000), TxBytes: tx, QLen: q, RateKbps: testKbps}
}

func TestFirstAckOnlyRecords(t *testing.T) {
	// spec oscar.md §4.1: "Initial state: U = 1, R_c = line rate"; W_init = line rate * T.
	// alibaba UpdateRateHp: the first RTT only stores the INT records.
	c := newTest(t, nil)
	c.wantWindow("initial window is one BDP", testBDP)
	if got := c.h.Rate(); got != testLine {
		t.Errorf("initial rate = %v, want line rate %v", got, testLine)
	}
	c.sent(10)
	c.Advance(testRTT)
	c.ack(0, hop(100, 5_000_000, 500_000)) // a huge queue, but nothing to difference yet
	c.wantWindow("first ACK has no previous record", testBDP)
	c.wantU("first ACK leaves U", 1)
	c.ack(1) // no hops: not an INT ACK
	c.wantWindow("ACK without INT", testBDP)
}

func TestMultiplicativeDecrease(t *testing.T) {
	c := newTest(t, nil)
	c.sent(10)
	c.ack(0, hop(0, 0, 12500))
	// One µs later the hop sent 12500 B (line rate) and still holds 12500 B of queue:
	// "u' = min(qlen, L.qlen)/(B*T) + txRate/B" = 12500/125000 + 1 = 1.1, tau = 1 µs,
	// "U = (1 - tau/T)*U + (tau/T)*u" = 0.9*1 + 0.1*1.1 = 1.01.
	c.Advance(units.Microsecond)
	c.ack(10, hop(1, 12500, 20000))
	c.wantU("EWMA over one µs of ten", 1.01)
	// "if U >= eta: W = W_c/(U/eta) + W_AI", W_AI = 0.0005*BDP = 62.5 B.
	want := testBDP/(1.01/0.95) + 62.5
	c.wantWindow("MD towards eta", want)
	if got, wantR := float64(c.h.Rate()), want*8e9/float64(testRTT); math.Abs(got-wantR) > 1e6 { // Window is truncated to whole bytes
		t.Errorf("rate = %v bit/s, want W/T = %.0f", got, wantR)
	}
}

func TestFastReactUsesSameReference(t *testing.T) {
	// spec oscar.md §4.1: "every other ACK: react, but from the same W_c".
	c := newTest(t, nil)
	c.sent(10)
	c.ack(0, hop(0, 0, 0)) // lastUpdateSeq = 10
	c.sent(10)
	c.Advance(units.Microsecond)
	c.ack(10, hop(1, 12500, 12500)) // covers packet 10: reference update, Wc = W, lastUpdateSeq = 20
	w1 := float64(c.h.Window())
	// The next ACKs are of packets sent before the update: same signal, no compounding.
	c.Advance(units.Microsecond)
	c.ack(11, hop(2, 25000, 12500))
	u := c.h.Utilisation()
	c.wantWindow("fast react from Wc, not from W", w1/(u/0.95)+62.5)
	if w1 >= testBDP {
		t.Fatalf("first update did not decrease: %v", w1)
	}
}

func TestAdditiveThenMultiplicativeIncrease(t *testing.T) {
	// spec oscar.md §4.1: "else: W = W_c + W_AI; if updateWc: incStage += 1", and
	// "if U >= eta or incStage >= maxStage: W = W_c/(U/eta) + W_AI" (MI after 5 RTTs).
	c := newTest(t, func(p *Params) { p.MaxStage = 2 })
	c.h.w, c.h.wc = 10000, 10000 // a flow that was cut to 10 KB
	ts, tx := 0.0, uint64(0)
	c.sent(1)
	c.ack(0, hop(ts, tx, 0))
	// Each RTT the hop carries 10% of line rate with no queue: u = 0.1, tau = T.
	rtt := func() {
		c.Advance(testRTT)
		ts += 10
		tx += 12500
		c.sent(1)
		c.ack(c.Next-2+1, hop(ts, tx, 0)) // covers the packet sent after the last update
	}
	rtt()
	c.wantU("tau = T replaces U", 0.1)
	c.wantWindow("AI stage 1", 10000+62.5)
	rtt()
	c.wantWindow("AI stage 2", 10000+2*62.5)
	rtt()
	c.wantWindow("MI after max_stage RTTs", (10000+2*62.5)/(0.1/0.95)+62.5)
	mi := (10000+2*62.5)/(0.1/0.95) + 62.5
	rtt()
	c.wantWindow("MI resets incStage: AI again", mi+62.5)
	c.h.incStage = 2
	rtt()
	c.wantWindow("MI past one BDP is capped", testBDP)
}

func TestWindowFloor(t *testing.T) {
	// The window never drops below min_ratio*BDP (artifact MinRateRatio 0.001).
	c := newTest(t, nil)
	c.sent(2)
	c.ack(0, hop(0, 0, 4_000_000_000))
	c.Advance(testRTT)
	c.ack(2, hop(10, 125000, 4_000_000_000)) // a 32000-BDP queue: U = 32001
	c.wantWindow("floor", 0.001*testBDP)
	if c.h.Window() <= 0 || c.h.Rate() <= 0 {
		t.Errorf("window %v, rate %v: want > 0", c.h.Window(), c.h.Rate())
	}
}

func TestMaxOverHops(t *testing.T) {
	// "for each hop i: ... if u' > u: u = u'; tau = ack.L[i].ts - L[i].ts"
	c := newTest(t, nil)
	c.sent(2)
	c.ack(0, hop(0, 0, 0), hop(0, 0, 25000), hop(0, 0, 0))
	c.Advance(2 * units.Microsecond)
	c.ack(2,
		hop(2, 12500, 0),       // 50% busy: u' = 0.5
		hop(4, 50000, 25000),   // 25000/125000 + 1 = 1.2 over 4 µs: the bottleneck
		hop(1, 12500, 1250000)) // q min(0, ..) = 0: u' = 1.0
	c.wantU("max hop, its own tau (4 µs)", 0.6*1+0.4*1.2)
}

func TestTauCappedAtT(t *testing.T) {
	// "tau = min(tau, T)": a record older than T replaces U outright.
	c := newTest(t, nil)
	c.sent(2)
	c.ack(0, hop(0, 0, 0))
	c.Advance(5 * testRTT)
	c.ack(2, hop(50, 125000, 0)) // 20% utilisation over 5 T
	c.wantU("tau capped at T", 0.2)
}

func TestStaleHopSkipped(t *testing.T) {
	// A record whose clock did not advance has no rate; the ACK changes nothing.
	c := newTest(t, nil)
	c.sent(2)
	c.ack(0, hop(3, 1000, 0))
	c.ack(2, hop(3, 1000, 0))
	c.wantU("no usable hop", 1)
	c.wantWindow("no usable hop", testBDP)
	c.Advance(units.Microsecond)
	c.ack(3, hop(4, 10, 0)) // the switch restarted its counter
	c.wantU("counter went backwards", 1)
}

func TestTimeoutAndPathChangeReinitialise(t *testing.T) {
	c := newTest(t, nil)
	c.sent(2)
	c.ack(0, hop(0, 0, 0))
	c.h.OnTimeout(c.Now)
	c.wantWindow("timeout keeps the window (lossless design, paper silent)", testBDP)
	c.Advance(units.Microsecond)
	c.ack(1, hop(1, 12500, 500000)) // would be U = 1.4: but only recorded after a timeout
	c.wantU("first ACK after timeout records only", 1)
	c.Advance(units.Microsecond)
	c.ack(2, hop(2, 25000, 0), hop(2, 0, 0)) // two hops now: a new path
	c.wantU("hop count change records only", 1)
	c.h.OnLoss(c.Now, 1000)
	c.wantWindow("loss does not change the window", testBDP)
}

func TestParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Params)
		want string // substring of the error, "" for valid
	}{
		{"defaults", func(*Params) {}, ""},
		{"eta", func(p *Params) { p.Eta = 0 }, "eta must be > 0"},
		{"eta NaN", func(p *Params) { p.Eta = math.NaN() }, "eta"},
		{"max_stage", func(p *Params) { p.MaxStage = -1 }, "max_stage"},
		{"ai_ratio", func(p *Params) { p.AIRatio = -0.1 }, "ai_ratio"},
		{"min_ratio", func(p *Params) { p.MinRatio = 0 }, "min_ratio"},
		{"base_rtt", func(p *Params) { p.BaseRTT = -1 }, "base_rtt must be ≥ 0 (time)"},
	} {
		cctest.WantValidate(t, tc.name, DefaultParams, tc.mod, tc.want)
	}
	if _, err := New(cc.Env{LineRate: testLine}, *DefaultParams()); err == nil {
		t.Error("New without a base RTT succeeded")
	}
}

func TestRegistered(t *testing.T) {
	s, err := cc.Lookup("hpcc")
	if err != nil {
		t.Fatal(err)
	}
	p := s.Defaults()
	p.(*Params).BaseRTT = 12 * units.Microsecond
	if err := cc.ScaleParams(p, 100); err != nil {
		t.Fatal(err)
	}
	if got := p.(*Params).BaseRTT; got != 1200*units.Microsecond {
		t.Errorf("scaled base_rtt = %v, want 1.2ms", got)
	}
	a, err := s.New(cc.Env{MSS: 1000, LineRate: units.Gbps, BaseRTT: testRTT}, p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.Window(), units.BDP(units.Gbps, 1200*units.Microsecond); got != want {
		t.Errorf("window with base_rtt override = %v, want %v", got, want)
	}
}

func TestAckAllocatesNothing(t *testing.T) {
	c := newTest(t, nil)
	fb := benchFeedback()
	allocs := testing.AllocsPerRun(100, func() { ackOnce(c.h, fb) })
	if allocs != 0 {
		t.Errorf("OnFeedback allocates %v times per ACK, want 0", allocs)
	}
}

func benchFeedback() *cc.Feedback {
	return &cc.Feedback{Kind: cc.Ack, AckedBytes: 1000, AckedPackets: 1,
		Hops: []wire.Hop{hop(0, 0, 0), hop(0, 0, 3000), hop(0, 0, 0), hop(0, 0, 100), hop(0, 0, 0)}}
}

// ackOnce advances every hop by 80 ns at 95% of line rate and acks the next packet.
func ackOnce(h *HPCC, fb *cc.Feedback) {
	for i := range fb.Hops {
		fb.Hops[i].TS += 80
		fb.Hops[i].TxBytes += 950
	}
	fb.AckSeq++
	fb.NextSeq = fb.AckSeq + 100
	h.OnFeedback(units.Time(fb.Hops[0].TS), fb)
}

// BenchmarkOnFeedback measures the per-ACK cost with a 5-hop INT stack.
func BenchmarkOnFeedback(b *testing.B) {
	h, err := New(cc.Env{MSS: 1000, LineRate: testLine, BaseRTT: testRTT}, *DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	fb := benchFeedback()
	b.ReportAllocs()
	for b.Loop() {
		ackOnce(h, fb)
	}
}

// T is, in order: Params.BaseRTT, the network's largest base RTT (cc.Env.NetworkRTT, the
// reference's GLOBAL_T), the flow's own base RTT. The first window is one BDP over T.
func TestBaseRTTChoice(t *testing.T) {
	const rtt, net, set = 10 * units.Microsecond, 25 * units.Microsecond, 40 * units.Microsecond
	for _, tc := range []struct {
		name       string
		param, env units.Time
		want       units.Time
	}{
		{"own RTT when the network's is unknown", 0, 0, rtt},
		{"the network's largest", 0, net, net},
		{"the parameter over both", set, net, set},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.BaseRTT = tc.param
			h, err := New(cc.Env{MSS: 1000, PacketSize: 1054, LineRate: units.Gbps, BaseRTT: rtt, NetworkRTT: tc.env}, *p)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := h.Window(), units.BDP(units.Gbps, tc.want); got != want {
				t.Errorf("first window %v, want one BDP over %v: %v", got, tc.want, want)
			}
		})
	}
}
