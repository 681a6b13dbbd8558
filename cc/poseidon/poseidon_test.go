package poseidon

import (
	"fmt"
	"math"
	"testing"

	"reef/cc"
	"reef/cc/internal/cctest"
	"reef/units"
)

// ccTest drives one Poseidon flow through cctest.Flow (x/net/quic's congestion-test
// style: a fixed start time, a log line per event, and want* checks).
type ccTest struct {
	*cctest.Flow
	f *Poseidon
}

// paperEnv is the spec's test-vector setting (§2.11): 200 Gbps, 4096 B MTU.
func paperEnv() cc.Env {
	return cc.Env{MSS: 4096, PacketSize: 4096, LineRate: 200 * units.Gbps, BaseRTT: 10 * units.Microsecond}
}

func newTest(t *testing.T, env cc.Env, edit func(*Params)) *ccTest {
	t.Helper()
	p := DefaultParams()
	if edit != nil {
		edit(p)
	}
	f, err := New(env, p)
	if err != nil {
		t.Fatal(err)
	}
	return &ccTest{Flow: cctest.New(t, f, 1*units.Second), f: f}
}

type ackOpt func(*cc.Feedback)

func withRTT(d units.Time) ackOpt { return func(fb *cc.Feedback) { fb.RTT = d } }
func withMPD(d units.Time) ackOpt {
	return func(fb *cc.Feedback) { fb.MPD, fb.HasMPD = d, true }
}
func withReverseMPD(d units.Time) ackOpt { return func(fb *cc.Feedback) { fb.ReverseMPD = d } }
func noINT() ackOpt                      { return func(fb *cc.Feedback) { fb.HasMPD, fb.MPD = false, 0 } }

// ack delivers one ACK of one new packet (rtt 10µs, MPD 0 unless overridden).
func (c *ccTest) ack(opts ...ackOpt) {
	c.T.Helper()
	fb := cc.Feedback{Kind: cc.Ack, AckedPackets: 1, AckedBytes: 4096, RTT: 10 * units.Microsecond, HasMPD: true}
	for _, o := range opts {
		o(&fb)
	}
	c.T.Logf("mpd=%v(int=%v)", fb.MPD, fb.HasMPD)
	c.Feedback(fb)
}

func (c *ccTest) timeout() {
	c.T.Helper()
	c.f.OnTimeout(c.Now)
	c.T.Logf("timeout -> cwnd %.5f", c.f.cwnd)
}

func (c *ccTest) loss() {
	c.T.Helper()
	c.f.OnLoss(c.Now, 4096)
	c.T.Logf("loss -> cwnd %.5f", c.f.cwnd)
}

func (c *ccTest) wantCwnd(why string, want float64) {
	c.T.Helper()
	c.WantCwnd(why, want, 1e-4)
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// spec poseidon.md §2.11 / §2.3: "T(rate) = 2 us + 10 us * log10(200 Gbps / rate)".
func TestTargetFunction(t *testing.T) {
	c := newTest(t, paperEnv(), nil)
	for _, tc := range []struct {
		rate units.Rate
		want float64 // µs
	}{
		{200 * units.Gbps, 2.000},
		{100 * units.Gbps, 5.010},
		{50 * units.Gbps, 8.021},
		{20 * units.Gbps, 12.000},
		{1 * units.Gbps, 25.010},
		{20 * units.Mbps, 42.000},
		// spec A6: "clamp rate into [min_rate, max_rate] before evaluating"
		{400 * units.Gbps, 2.000},
		{1 * units.Mbps, 42.000},
		{0, 42.000},
	} {
		if got := c.f.target(float64(tc.rate)) / 1e3; !near(got, tc.want, 0.001) {
			t.Errorf("T(%v) = %.4f µs, want %.3f", tc.rate, got, tc.want)
		}
	}
}

// spec poseidon.md §2.11: "U(T, T) = 1 for any T. U(12, 13) = 0.9441. U(12, 2) = 1.7783."
// and §2.4's table "U = 10 ^ ((T - D) / 40us)".
func TestUpdateFunction(t *testing.T) {
	c := newTest(t, paperEnv(), nil)
	for _, tc := range []struct{ t, d, want float64 }{
		{12, 12, 1},
		{30, 30, 1},
		{12, 13, 0.9441},
		{12, 2, 1.7783},
		{22, 2, 3.1623},
		{7, 12, 0.7499},
		// spec A7: "clamp update_ratio into [min_md, max_mi]" (min_md 0.5)
		{2, 42, 0.5},
	} {
		if got := c.f.ratio(tc.t*1e3, tc.d*1e3); !near(got, tc.want, 1e-4) {
			t.Errorf("U(%g, %g) = %.5f, want %.4f", tc.t, tc.d, got, tc.want)
		}
	}
	// spec §2.11 "Eq. 11 check: U(T(a),D)/U(T(b),D) = (b/a)^0.25. For a = 10G and b = 160G
	// that is 16^0.25 = 2."
	ta, tb := c.f.target(10e9), c.f.target(160e9)
	for _, d := range []float64{0, 5e3, 14e3} { // U stays above min_md for these D
		if got := c.f.ratio(ta, d) / c.f.ratio(tb, d); !near(got, 2, 1e-9) {
			t.Errorf("D=%gns: U(T(10G))/U(T(160G)) = %.6f, want 2", d, got)
		}
	}
}

func TestReceiveACK(t *testing.T) {
	cwnd10 := func(p *Params) { p.InitCwnd = 10 }
	t.Run("increase", func(t *testing.T) {
		// spec §2.11: "cwnd = 10, rtt = 10 us ... T = 9.8558 us. Echoed MPD = 19 units ...
		// mpd = 4.864 us. U = 1.33289. One ACK with num_acked = 1 gives cwnd = 10.3329."
		c := newTest(t, paperEnv(), cwnd10)
		if got := c.f.target(10*4096*8/10e-6) / 1e3; !near(got, 9.8558, 1e-4) {
			t.Errorf("T(32.768 Gbps) = %.5f µs, want 9.8558", got)
		}
		c.ack(withMPD(19 * 256))
		c.wantCwnd("MI per ACK", 10.3329)
	})
	t.Run("decrease", func(t *testing.T) {
		// spec §2.11: "Echoed MPD = 58 units, i.e. mpd = 14.848 us. U = 0.75023. If a
		// decrease is allowed, cwnd = 7.5023; otherwise it stays at 10."
		// spec A14: t_last_decrease starts at minus infinity, so the first ACK may decrease.
		c := newTest(t, paperEnv(), cwnd10)
		c.ack(withMPD(58 * 256))
		c.wantCwnd("first decrease allowed at once", 7.5023)
		// Alg. 1 l.7: "if now - t_last_decrease > rtt then cwnd <- cwnd * update_ratio"
		c.Advance(10 * units.Microsecond)
		c.ack(withMPD(58 * 256))
		c.wantCwnd("mpd > mpt within an RTT of the last decrease: no change", 7.5023)
		c.Advance(1)
		c.ack(withMPD(58 * 256))
		if c.f.Cwnd() >= 7.5023 {
			t.Errorf("one RTT after the decrease cwnd = %.4f, want a further decrease", c.f.Cwnd())
		}
	})
	t.Run("equal", func(t *testing.T) {
		// spec §2.7: "Equality mpd == mpt counts as the increase branch, with U = 1"
		c := newTest(t, paperEnv(), cwnd10)
		mpt := c.f.target(10 * 4096 * 8 / 10e-6)
		c.ack(withMPD(units.Time(math.Round(mpt))))
		c.wantCwnd("mpd == mpt", 10)
	})
	t.Run("clamp", func(t *testing.T) {
		// Alg. 1 l.18: "cwnd <- clamp(cwnd, min_cwnd, max_cwnd)"
		c := newTest(t, paperEnv(), func(p *Params) { p.InitCwnd, p.MaxCwnd = 10, 10.2 })
		c.ack(withMPD(0))
		c.wantCwnd("clamped at max_cwnd", 10.2)
	})
}

// spec A11: "offer an optional knob that caps the per-ACK growth to cwnd *= max_mi".
func TestCapPerACK(t *testing.T) {
	for _, tc := range []struct {
		cap   bool
		maxMI float64
		want  float64
	}{
		// Literal Alg. 1 l.5 at cwnd 0.01 (32.8 Mbps at rtt 10µs) with MPD 0:
		// U = 10^(T/40µs), T = 2µs + 10µs·log10(200G/32.8M) = 39.85µs, so one ACK adds
		// U − 1 ≈ 8.9 packets.
		{false, 0, 0.01 + math.Pow(10, (2+10*math.Log10(200e9/32.768e6))/40) - 1},
		// max_mi = 2 alone clamps U to 2 (spec A7): +1 packet; with the cap, ×2.
		{false, 2, 1.01},
		{true, 2, 0.02},
	} {
		c := newTest(t, paperEnv(), func(p *Params) { p.InitCwnd, p.MaxMI, p.CapPerACK = 0.01, tc.maxMI, tc.cap })
		c.ack(withMPD(0))
		c.wantCwnd(fmt.Sprintf("cap_per_ack=%v max_mi=%g", tc.cap, tc.maxMI), tc.want)
	}
}

// spec §2.8: "cwnd < 1: send one packet every pacing_delay = rtt / cwnd".
func TestPacingBelowOnePacket(t *testing.T) {
	c := newTest(t, paperEnv(), func(p *Params) { p.InitCwnd = 2 })
	c.ack()
	if r := c.f.Rate(); r != 0 {
		t.Errorf("cwnd ≥ 1: Rate = %v, want 0 (window-limited)", r)
	}
	c.f.cwnd = 0.5
	c.ack(withRTT(20*units.Microsecond), withMPD(40*units.Microsecond))
	// The decrease is clamped to min_md: 0.5 → 0.25 packets, one packet every 80 µs.
	c.wantCwnd("decrease below one packet", 0.25)
	if got, want := c.f.Window(), units.Bytes(1024); got != want {
		t.Errorf("Window = %v, want %v (a quarter packet)", got, want)
	}
	if got, want := c.f.Rate(), units.Rate(4096*8*1e6/80); got != want {
		t.Errorf("Rate = %v, want %v (one 4096 B packet every 80µs)", got, want)
	}
}

// spec §2.9 / Alg. 2.
func TestLossAndTimeout(t *testing.T) {
	c := newTest(t, paperEnv(), func(p *Params) { p.InitCwnd = 16 })
	c.ack() // rtt 10µs
	start := c.f.Cwnd()
	// Alg. 2 l.11: "if now - t_last_decrease > rtt then cwnd' <- cwnd * min_md"
	c.loss()
	c.wantCwnd("fast recovery halves", start/2)
	c.loss()
	c.wantCwnd("second loss within an RTT: unchanged (spec A10)", start/2)
	for i := 0; i < 3; i++ {
		c.Advance(11 * units.Microsecond)
		c.timeout()
	}
	c.wantCwnd("three timeouts, each an RTT apart", start/16)
	c.Advance(11 * units.Microsecond)
	c.timeout()
	c.Advance(11 * units.Microsecond)
	// Alg. 2 l.3: "if retransmit_count >= RETX_RESET_THRESHOLD then cwnd' <- min_cwnd"
	c.timeout()
	c.wantCwnd("fifth consecutive timeout resets to min_cwnd", 0.001)
	if c.f.Rate() == 0 {
		t.Error("cwnd 0.001: Rate = 0, want pacing")
	}

	// spec A9: "reset retransmit_count on ACKs of new data".
	c2 := newTest(t, paperEnv(), func(p *Params) { p.InitCwnd = 16 })
	for i := 0; i < 4; i++ {
		c2.Advance(11 * units.Microsecond)
		c2.timeout()
	}
	c2.ack(withMPD(40 * units.Microsecond)) // no increase, and within an RTT: unchanged
	c2.Advance(11 * units.Microsecond)
	c2.timeout()
	c2.wantCwnd("ACK of new data reset the timeout count", 0.5)
}

// spec §5: "rest = max(0, e2e - base_rtt - mpd_fwd - mpd_rev); signal = max(mpd_fwd, rest)".
func TestBrownfield(t *testing.T) {
	env := paperEnv() // base RTT 10µs
	for _, tc := range []struct {
		name       string
		brownfield bool
		opts       []ackOpt
		signal     units.Time // the delay the update must have used
	}{
		{"no INT hop: the non-INT queuing is the signal", false,
			[]ackOpt{noINT(), withRTT(30 * units.Microsecond)}, 20 * units.Microsecond},
		{"no INT hop, reverse INT subtracted", false,
			[]ackOpt{noINT(), withRTT(30 * units.Microsecond), withReverseMPD(5 * units.Microsecond)}, 15 * units.Microsecond},
		{"full deployment ignores the rest of the RTT", false,
			[]ackOpt{withMPD(3 * units.Microsecond), withRTT(30 * units.Microsecond)}, 3 * units.Microsecond},
		{"brownfield: rest larger than MPD", true,
			[]ackOpt{withMPD(3 * units.Microsecond), withRTT(30 * units.Microsecond)}, 17 * units.Microsecond},
		{"brownfield: MPD larger than rest", true,
			[]ackOpt{withMPD(12 * units.Microsecond), withRTT(30 * units.Microsecond)}, 12 * units.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTest(t, env, func(p *Params) { p.InitCwnd, p.Brownfield = 10, tc.brownfield })
			mpt := c.f.target(10 * 4096 * 8 / 30e-6)
			u := c.f.ratio(mpt, float64(tc.signal))
			want := 10 + (u - 1)
			if float64(tc.signal) > mpt {
				want = 10 * u
			}
			c.ack(tc.opts...)
			c.wantCwnd("update driven by the brownfield signal", want)
		})
	}
	// base_rtt is min-filtered: an RTT below the planner's base lowers it.
	c := newTest(t, env, func(p *Params) { p.InitCwnd = 10 })
	c.ack(noINT(), withRTT(8*units.Microsecond))
	if c.f.baseRTT != 8*units.Microsecond {
		t.Errorf("base RTT = %v, want the 8µs sample", c.f.baseRTT)
	}
}

func TestValidateAndRegistry(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Params)
		want string
	}{
		{func(p *Params) { p.P = 0 }, "p must be > 0"},
		{func(p *Params) { p.K = -1 }, "k must be > 0"},
		{func(p *Params) { p.M = 2 }, "m must be in (0, 2)"},
		{func(p *Params) { p.MinMD = 0 }, "min_md"},
		{func(p *Params) { p.MaxMI = 0.5 }, "max_mi"},
		{func(p *Params) { p.MinCwnd = 0 }, "min_cwnd must be > 0 packets"},
		{func(p *Params) { p.MaxRate, p.MinRate = units.Gbps, units.Gbps }, "min_rate must be < max_rate"},
		{func(p *Params) { p.RetxResetThreshold = 0 }, "retx_reset_threshold"},
		{func(p *Params) { p.CapPerACK = true }, "cap_per_ack needs max_mi"},
	} {
		cctest.WantValidate(t, tc.want, DefaultParams, tc.edit, tc.want)
	}
	spec, err := cc.Lookup("poseidon")
	if err != nil {
		t.Fatal(err)
	}
	p := spec.Defaults()
	if err := cc.ScaleParams(p, 200); err != nil {
		t.Fatal(err)
	}
	if got := p.(*Params).P; got != 8*units.Millisecond {
		t.Errorf("p scaled by 200 = %v, want 8ms (spec §7.3 config A)", got)
	}
	alg, err := spec.New(cc.Env{MSS: 1460, PacketSize: 1500, LineRate: units.Gbps, BaseRTT: units.Millisecond}, p)
	if err != nil {
		t.Fatal(err)
	}
	// InitCwnd 0 = one BDP: 125000 B / 1460 B = 85.6 packets.
	if got, want := alg.Window(), units.Bytes(125000); got < want-1 || got > want {
		t.Errorf("initial window %v, want one BDP (%v)", got, want)
	}
	if alg.Deadline() != units.Never {
		t.Error("Poseidon wants no timer")
	}
}

func BenchmarkOnFeedback(b *testing.B) {
	f, err := New(paperEnv(), DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	fb := cc.Feedback{Kind: cc.Ack, AckedPackets: 1, AckedBytes: 4096, RTT: 10 * units.Microsecond, HasMPD: true}
	now := units.Second
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now += 100
		fb.MPD = units.Time(i%64) * 256 // below and above the target
		f.OnFeedback(now, &fb)
	}
}
