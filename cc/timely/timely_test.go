package timely

import (
	"math"
	"testing"

	"reef/cc"
	"reef/cc/internal/cctest"
	"reef/units"
)

// ccTest drives one TIMELY flow through cctest.Flow (x/net/quic's congestion-test
// style: a fixed start time, a log line per event, and want* checks).
type ccTest struct {
	*cctest.Flow
	tl *Timely
}

// paperEnv is the paper's setting: 10 Gbps NICs; 1024 B frames (1000 B payload) keep
// the arithmetic round: a 16 KiB segment is 16 frames.
func paperEnv() cc.Env {
	return cc.Env{MSS: 1000, PacketSize: 1024, LineRate: 10 * units.Gbps}
}

// literal turns off the spec's interpretations that get in the way of checking
// Algorithm 1's arithmetic one event at a time.
func literal(p *Params) { p.ScaleUpdates, p.AppLimitFraction, p.InitRate = false, 0, 5*units.Gbps }

func newTest(t *testing.T, env cc.Env, def func() *Params, edit func(*Params)) *ccTest {
	t.Helper()
	p := def()
	if edit != nil {
		edit(p)
	}
	tl, err := New(env, p)
	if err != nil {
		t.Fatal(err)
	}
	return &ccTest{Flow: cctest.New(t, tl, units.Second), tl: tl}
}

// send puts n new 1024 B frames on the wire back to back at line rate.
func (c *ccTest) send(n int) (last uint64) {
	for i := 0; i < n; i++ {
		c.tl.OnSend(c.Now, c.Next, 1024)
		c.Next++
		c.Now += c.tl.pktSer
	}
	c.T.Logf("sent %d packets, up to %d", n, c.Next-1)
	return c.Next - 1
}

// ack acknowledges packets up to seq with an RTT whose completion sample is rtt
// (the frame's serialisation at line rate is added, as the transport would measure it).
func (c *ccTest) ack(seq uint64, rtt units.Time) {
	c.T.Helper()
	c.Feedback(cc.Feedback{Kind: cc.Ack, AckSeq: seq, AckedPackets: 1, AckedBytes: 1000, RTT: rtt + c.tl.pktSer})
	c.T.Logf("target rate %v", c.tl.TargetRate())
}

// complete sends one 16-frame segment and, rtt later, acknowledges its last packet.
func (c *ccTest) complete(rtt units.Time) {
	c.T.Helper()
	last := c.send(16)
	c.Advance(rtt)
	c.ack(last, rtt)
}

func (c *ccTest) wantRate(why string, want float64) {
	c.T.Helper()
	if got := float64(c.tl.TargetRate()); math.Abs(got-want) > 1 {
		c.T.Errorf("%s: rate = %.0f bit/s, want %.0f", why, got, want)
	}
}

func TestAlgorithm1(t *testing.T) {
	const δ = 10e6
	t.Run("first sample below Tlow", func(t *testing.T) {
		// spec A8: "on the first completion, set prev_rtt = sample, rtt_diff = 0 ... then run
		// the algorithm"; T-Alg 1: "if new_rtt < Tlow: rate ← rate + δ"
		c := newTest(t, paperEnv(), DefaultParams, literal)
		c.complete(30 * units.Microsecond)
		c.wantRate("additive increase below Tlow", 5e9+δ)
	})
	t.Run("Thigh", func(t *testing.T) {
		// T-Alg 1: "if new_rtt > Thigh: rate ← rate · (1 − β·(1 − Thigh/new_rtt))"
		c := newTest(t, paperEnv(), DefaultParams, literal)
		c.complete(1000 * units.Microsecond)
		c.wantRate("1 − 0.8·(1 − 500/1000) = 0.6", 3e9)
	})
	t.Run("gradient decrease", func(t *testing.T) {
		// T-Alg 1: "rtt_diff = (1 − α)·rtt_diff + α·new_rtt_diff; normalized_gradient =
		// rtt_diff / minRTT ... else rate ← rate · (1 − β·normalized_gradient)"
		c := newTest(t, paperEnv(), DefaultParams, literal)
		c.complete(100 * units.Microsecond) // g = 0: + δ
		c.complete(110 * units.Microsecond) // rtt_diff = 0.875·10µs, g = 0.4375
		c.wantRate("(5G+δ)·(1 − 0.8·0.4375)", (5e9+δ)*(1-0.8*0.4375))
	})
	t.Run("HAI", func(t *testing.T) {
		// T-Alg 1: "N = 5 if gradient < 0 for five completion events (HAI mode)";
		// spec A7: consecutive events, HAI active when count ≥ 5 including the current one.
		c := newTest(t, paperEnv(), DefaultParams, literal)
		want := 5e9
		for i, rtt := range []units.Time{200, 190, 180, 170, 160, 150, 140} {
			c.complete(rtt * units.Microsecond)
			if i >= 5 {
				want += 5 * δ
			} else {
				want += δ
			}
			c.wantRate("negative gradient: +δ, then +5δ from the fifth", want)
		}
		// A positive gradient resets the count: the next increase is δ again.
		c.complete(300 * units.Microsecond)
		c.complete(290 * units.Microsecond) // rtt_diff still > 0: decrease
		if c.tl.negCount != 0 {
			t.Errorf("negCount = %d after a positive gradient, want 0", c.tl.negCount)
		}
	})
	t.Run("max decrease", func(t *testing.T) {
		// spec A10: "eRPC's 'at most −50 % per update' clamp as a flag, off by default".
		c := newTest(t, paperEnv(), DefaultParams, func(p *Params) { literal(p); p.MaxDecrease = 0.5 })
		c.complete(100 * units.Microsecond)
		c.complete(400 * units.Microsecond) // factor 1 − 0.8·13.1 < 0: bounded to ½
		c.wantRate("at most half per update", (5e9+δ)/2)
	})
	t.Run("HAI on raw differences", func(t *testing.T) {
		// spec A7 alternative (eRPC): "count raw new_rtt_diff < 0". A flat RTT after a
		// drop keeps the smoothed gradient negative but the raw difference at 0.
		c := newTest(t, paperEnv(), DefaultParams, func(p *Params) { literal(p); p.HAIRawDiff = true })
		for _, rtt := range []units.Time{200, 190, 180, 170, 160, 160} {
			c.complete(rtt * units.Microsecond)
		}
		if c.tl.negCount != 0 {
			t.Errorf("negCount = %d after a zero raw difference, want 0", c.tl.negCount)
		}
	})
	t.Run("rate bounds", func(t *testing.T) {
		// T§5: "we also cap the maximum target rate at 10 Gbps"; spec A10: floor at R_min.
		c := newTest(t, paperEnv(), DefaultParams, func(p *Params) { literal(p); p.InitRate = 0 })
		c.complete(10 * units.Microsecond)
		c.wantRate("capped at line rate", 10e9)
		c.complete(400 * units.Microsecond) // g = 0.875·390/20: factor clamps to 0
		c.wantRate("floored at min_rate", 10e6)
	})
}

// spec timely.md §7.3: "weight ← w(rttGradient); error ← (newRTT − RTT_ref)/RTT_ref;
// rate ← δ·(1 − weight) + rate·(1 − β·weight·error)", RTT_ref = T_low, β = 0.008.
func TestPatched(t *testing.T) {
	for _, tc := range []struct{ g, w float64 }{{-1, 0}, {-0.25, 0}, {0, 0.5}, {0.1, 0.7}, {0.25, 1}, {3, 1}} {
		if got := weight(tc.g); math.Abs(got-tc.w) > 1e-12 {
			t.Errorf("w(%g) = %g, want %g", tc.g, got, tc.w)
		}
	}
	c := newTest(t, paperEnv(), DefaultPatchedParams, literal)
	c.complete(100 * units.Microsecond) // g = 0, w = ½, error = (100 − 50)/50 = 1
	c.wantRate("δ·½ + 5G·(1 − 0.008·½·1)", 10e6*0.5+5e9*(1-0.008*0.5))
	// spec A16: "error = (RTT − (baseRTT + k·Tlow)) / (k·Tlow)".
	env := paperEnv()
	env.BaseRTT = 10 * units.Microsecond
	c = newTest(t, env, DefaultPatchedParams, literal)
	c.complete(100 * units.Microsecond)
	c.wantRate("error = (100 − 60)/50", 10e6*0.5+5e9*(1-0.008*0.5*0.8))
	// No HAI in Patched TIMELY, and one β in the Thigh branch (spec A14).
	c = newTest(t, paperEnv(), DefaultPatchedParams, literal)
	c.complete(1000 * units.Microsecond)
	c.wantRate("Thigh with β = 0.008", 5e9*(1-0.008*0.5))
}

// spec A11: "f = min(1, Δt_since_last_update/minRTT), multiplying δ, N·δ and β".
func TestScaleUpdates(t *testing.T) {
	c := newTest(t, paperEnv(), DefaultParams, func(p *Params) {
		p.AppLimitFraction, p.InitRate, p.SegmentSize = 0, 5*units.Gbps, 1024
	})
	c.send(2)
	c.Advance(30 * units.Microsecond)
	c.ack(0, 30*units.Microsecond) // first completion: f = 1
	c.Advance(5 * units.Microsecond)
	c.ack(1, 30*units.Microsecond) // 5µs later: f = 5/20
	c.wantRate("δ + δ/4", 5e9+10e6+2.5e6)
}

// spec §2.2: one RTT per segment, "RTT = t_completion − t_send − seg_size/NIC_line_rate";
// spec A17: "exactly one completion event per segment ... Never sample retransmitted
// segments"; spec §2.6: "the last segment ... can be smaller".
func TestSegments(t *testing.T) {
	c := newTest(t, paperEnv(), DefaultParams, literal)
	last := c.send(16)
	c.Advance(30 * units.Microsecond)
	c.ack(last-1, 30*units.Microsecond)
	c.wantRate("ACK inside a segment: no completion", 5e9)
	c.ack(last, 30*units.Microsecond)
	c.wantRate("ACK of the segment's last packet completes it", 5e9+10e6)
	c.ack(last, 30*units.Microsecond)
	c.wantRate("a duplicate ACK completes nothing", 5e9+10e6)

	// Two segments covered by one ACK: one completion.
	c.send(32)
	c.Advance(30 * units.Microsecond)
	c.ack(c.Next-1, 30*units.Microsecond)
	c.wantRate("one ACK, two segments, one event", 5e9+20e6)

	// Karn: a segment holding a retransmission gives no sample.
	last = c.send(16)
	c.tl.OnSend(c.Now, last-3, 1024)
	c.Advance(30 * units.Microsecond)
	c.ack(last, 30*units.Microsecond)
	c.wantRate("retransmitted segment: no sample", 5e9+20e6)

	// A paused sender's short segment completes once its last packet is acknowledged.
	last = c.send(3)
	c.Advance(100 * units.Microsecond)
	c.ack(last, 30*units.Microsecond)
	c.wantRate("short final segment completes", 5e9+30e6)

	// The sample excludes the receiver's turnaround (spec A4).
	c2 := newTest(t, paperEnv(), DefaultParams, literal)
	last = c2.send(16)
	c2.Advance(80 * units.Microsecond)
	fb := cc.Feedback{Kind: cc.Ack, AckSeq: last, RTT: 80*units.Microsecond + c2.tl.pktSer, Turnaround: 40 * units.Microsecond}
	c2.tl.OnFeedback(c2.Now, &fb)
	c2.wantRate("40µs after turnaround: below Tlow, increase", 5e9+10e6)

	if c.tl.Window() != units.MaxBytes {
		t.Errorf("Window = %v, want unlimited (rate-based)", c.tl.Window())
	}
}

// T§5: "we let the target rate increase only if the application is sending at more
// than 80% of the target rate".
func TestAppLimited(t *testing.T) {
	c := newTest(t, paperEnv(), DefaultParams, func(p *Params) { p.ScaleUpdates, p.InitRate = false, 5*units.Gbps })
	c.complete(30 * units.Microsecond) // first: increase
	c.wantRate("first completion", 5.01e9)
	c.Advance(units.Millisecond) // idle: 16 KiB over ~1 ms is far below 80% of 5 Gbps
	c.complete(30 * units.Microsecond)
	c.wantRate("app-limited: no increase", 5.01e9)
	c.complete(1000 * units.Microsecond)
	c.wantRate("decreases still apply", 5.01e9*0.6)
}

func TestValidateAndRegistry(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Params)
		want string
	}{
		{func(p *Params) { p.SegmentSize = 0 }, "segment_size must be > 0 bytes"},
		{func(p *Params) { p.THigh = p.TLow }, "t_high must be > t_low"},
		{func(p *Params) { p.Beta = 0 }, "beta must be in (0, 1]"},
		{func(p *Params) { p.Alpha = 2 }, "alpha"},
		{func(p *Params) { p.MinRTT = 0 }, "min_rtt"},
		{func(p *Params) { p.MinRate = 0 }, "min_rate must be > 0 bit/s"},
		{func(p *Params) { p.Delta = -1 }, "delta"},
		{func(p *Params) { p.MaxDecrease = 1 }, "max_decrease"},
	} {
		cctest.WantValidate(t, tc.want, DefaultParams, tc.edit, tc.want)
	}
	for _, name := range []string{"timely", "timely-patched"} {
		spec, err := cc.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		p := spec.Defaults()
		if err := cc.ScaleParams(p, 10); err != nil {
			t.Fatal(err)
		}
		if got := p.(*Params).TLow; got != 500*units.Microsecond {
			t.Errorf("%s: t_low scaled by 10 = %v, want 500µs (spec §6.2)", name, got)
		}
		if got := p.(*Params).Delta; got != units.Mbps {
			t.Errorf("%s: delta scaled by 10 = %v, want 1Mbps (spec §6.2)", name, got)
		}
		alg, err := spec.New(cc.Env{MSS: 1460, PacketSize: 1500, LineRate: units.Gbps}, p)
		if err != nil {
			t.Fatal(err)
		}
		if alg.Rate() != units.Gbps {
			t.Errorf("%s: initial rate %v, want the line rate", name, alg.Rate())
		}
	}
}

func BenchmarkOnFeedback(b *testing.B) {
	tl, err := New(paperEnv(), DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	fb := cc.Feedback{Kind: cc.Ack, AckedPackets: 1, AckedBytes: 1000}
	now := units.Second
	var seq uint64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now += 820
		tl.OnSend(now, seq, 1024)
		fb.AckSeq = seq
		fb.RTT = units.Time(40+i%32) * units.Microsecond
		tl.OnFeedback(now, &fb)
		seq++
	}
}

// spec §3.2 item 10 and §2.1: TIMELY "is not concerned with reliability": losses and
// timeouts leave the rate alone; a timeout forgets the segments in flight, so the
// retransmitted data gives no sample.
func TestLossAndTimeout(t *testing.T) {
	c := newTest(t, paperEnv(), DefaultParams, literal)
	last := c.send(16)
	c.tl.OnLoss(c.Now, 1000)
	c.tl.OnTimeout(c.Now)
	c.wantRate("loss and timeout: rate unchanged", 5e9)
	c.tl.OnSend(c.Now, last, 1024) // the retransmission
	c.Advance(30 * units.Microsecond)
	c.ack(last, 30*units.Microsecond)
	c.wantRate("no sample from the forgotten segment", 5e9)
	c.complete(30 * units.Microsecond)
	c.wantRate("new segments complete again", 5e9+10e6)
}

// Spec §2.6, §3.2 item 6: a segment leaves as a line-rate burst and the next segment
// starts seg/rate after this one started; Burst false spreads packets at the rate.
func TestBurstPacing(t *testing.T) {
	for _, burst := range []bool{true, false} {
		c := newTest(t, paperEnv(), DefaultParams, func(p *Params) { literal(p); p.Burst = burst })
		start := c.Now
		for i := 0; i < 15; i++ { // 15 of the segment's 16 frames
			c.send(1)
			want := 5 * units.Gbps
			if burst {
				want = 10 * units.Gbps
			}
			if got := c.tl.Rate(); got != want {
				t.Fatalf("burst=%v: rate after packet %d of the segment = %v, want %v", burst, i+1, got, want)
			}
		}
		c.tl.OnSend(c.Now, c.Next, 1024) // the last frame closes the segment
		last := c.Now
		gap := c.tl.Rate().TxTime(1024)
		next := (5 * units.Gbps).TxTime(16 * 1024) // 26.2144 µs
		if burst {
			if got := last + gap; got < start+next-2 || got > start+next+2 {
				t.Errorf("burst: next segment due %v after the first, want %v", got-start, next)
			}
		} else if want := (5 * units.Gbps).TxTime(1024); gap != want {
			t.Errorf("no burst: gap %v, want %v", gap, want)
		}
		if got := c.tl.TargetRate(); got != 5*units.Gbps {
			t.Errorf("burst=%v: target rate %v, want 5Gbps", burst, got)
		}
	}
}
