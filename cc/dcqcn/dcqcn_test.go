package dcqcn

import (
	"math"
	"testing"

	"reef/cc"
	"reef/cc/internal/cctest"
	"reef/units"
)

const (
	line = 40 * units.Gbps
	us   = units.Microsecond
)

// ccTest drives one DCQCN reaction point through cctest.Flow (x/net/quic's
// congestion-test style: a fixed start time, a log of every step, checks in between);
// its Advance runs the rate timer as a transport would.
type ccTest struct {
	*cctest.Flow
	d *DCQCN
}

func newTest(t *testing.T, mod func(*Params)) *ccTest {
	t.Helper()
	p := DefaultParams()
	if mod != nil {
		mod(p)
	}
	d, err := New(cc.Env{MSS: 1000, LineRate: line, BaseRTT: 10 * us}, *p)
	if err != nil {
		t.Fatal(err)
	}
	return &ccTest{Flow: cctest.New(t, d, units.Millisecond), d: d}
}

func (c *ccTest) cnp() {
	c.T.Helper()
	c.Feedback(cc.Feedback{Kind: cc.CNP})
}

func (c *ccTest) send(b units.Bytes) {
	c.T.Helper()
	c.d.OnSend(c.Now, 0, b)
	c.T.Logf("%v sent %v: R_C %v R_T %v", c.Now, b, c.d.Rate(), c.d.TargetRate())
}

func (c *ccTest) wantRates(reason string, rc, rt float64) {
	c.T.Helper()
	gc, gt := float64(c.d.Rate()), float64(c.d.TargetRate())
	if math.Abs(gc-rc) > 1 || math.Abs(gt-rt) > 1 {
		c.T.Errorf("%s: R_C = %.0f, R_T = %.0f; want %.0f, %.0f", reason, gc, gt, rc, rt)
	}
}

func (c *ccTest) wantAlpha(reason string, want float64) {
	c.T.Helper()
	if got := c.d.Alpha(c.Now); math.Abs(got-want) > 1e-12 {
		c.T.Errorf("%s: α = %.12f, want %.12f", reason, got, want)
	}
}

const g = 1.0 / 256

func TestStartAtLineRate(t *testing.T) {
	// spec baselines.md §3.3: "Flows start at line rate; there is no slow start."
	c := newTest(t, nil)
	c.wantRates("start", float64(line), float64(line))
	if c.d.Window() != units.MaxBytes || c.d.Deadline() != units.Never {
		t.Errorf("window %v deadline %v: want unlimited, no timer", c.d.Window(), c.d.Deadline())
	}
	c.d.OnFeedback(c.Now, &cc.Feedback{Kind: cc.Ack, ECE: true})
	c.send(20 * units.Megabyte)
	c.d.OnLoss(c.Now, 1000)
	c.d.OnTimeout(c.Now)
	c.wantRates("ACKs (even with ECE), sends, losses and timeouts change nothing", float64(line), float64(line))
}

func TestCutOnCNP(t *testing.T) {
	// "on CNP: R_T = R_C; R_C = R_C(1-α/2); α = (1-g)α + g" with α = 1 at start.
	c := newTest(t, nil)
	c.cnp()
	c.wantRates("α = 1 halves the rate", float64(line)/2, float64(line))
	c.wantAlpha("(1-g)·1 + g", 1)
	if got := c.d.Deadline(); got != c.Now+55*us {
		t.Errorf("rate timer = %v, want now + T = %v", got, c.Now+55*us)
	}
	c.cnp()
	c.wantRates("second CNP at once: R_T = R_C", float64(line)/4, float64(line)/2)
}

func TestAlphaTimer(t *testing.T) {
	// "With no CNP for τ' = 55 µs: α = (1-g)α" (and every τ' after).
	c := newTest(t, func(p *Params) { p.InitAlpha = 0.5 })
	c.cnp()
	a := (1-g)*0.5 + g
	c.wantAlpha("CNP raises α", a)
	c.Advance(54 * us)
	c.wantAlpha("less than τ'", a)
	c.Advance(3 * 55 * us) // 219 µs after the CNP: three whole periods
	c.wantAlpha("three periods", a*math.Pow(1-g, 3))
	rc := float64(c.d.Rate())
	c.cnp()
	c.wantRates("the cut uses the decayed α", rc*(1-a*math.Pow(1-g, 3)/2), rc)
	c.wantAlpha("and restarts the timer", (1-g)*a*math.Pow(1-g, 3)+g)
}

func TestRateTimerStages(t *testing.T) {
	// "F = 5 fast-recovery stages (R_C = (R_T+R_C)/2), then additive (R_T += R_AI)";
	// spec oscar.md §4.6: "both > F: hyper increase Rt += R_HAI; one > F: additive".
	c := newTest(t, nil)
	c.cnp()
	rc, rt := float64(line)/2, float64(line)
	for i := 1; i <= 5; i++ {
		c.Advance(55 * us)
		rc = (rt + rc) / 2
		c.wantRates("fast recovery: R_C halfway to R_T", rc, rt)
	}
	// Cut again from the recovered rate, then run the timer past F.
	c.cnp()
	// α was 1 after the first CNP and decayed over five periods τ' = T.
	rt, rc = rc, rc*(1-math.Pow(1-g, 5)/2)
	c.wantRates("second cut", rc, rt)
	for i := 1; i <= 5; i++ {
		c.Advance(55 * us)
		rc = (rt + rc) / 2
	}
	c.wantRates("five fast-recovery events", rc, rt)
	c.Advance(55 * us)
	rt += 40e6
	rc = (rt + rc) / 2
	c.wantRates("sixth timer event: additive increase", rc, rt)
}

func TestByteCounterAndHyperIncrease(t *testing.T) {
	// The byte counter counts B = 10 MB sent per event; with both counts past F the
	// target rises by R_HAI.
	c := newTest(t, func(p *Params) { p.FastRecovery = 1; p.ByteCounter = 1 * units.Megabyte })
	c.cnp()
	rc, rt := float64(line)/2, float64(line)/1
	c.send(999_999)
	c.wantRates("below B", rc, rt)
	c.send(1)
	rc = (rt + rc) / 2
	c.wantRates("byte-counter event 1: fast recovery", rc, rt)
	c.d.rt = float64(line) / 2 // a lower target, so increases are visible
	rt = float64(line) / 2
	c.send(units.Megabyte)
	rt += 40e6
	rc = (rt + rc) / 2
	c.wantRates("iB = 2 > F, iT = 0: additive", rc, rt)
	c.Advance(2 * 55 * us)
	rt += 40e6
	rc = (rt + rc) / 2 // iT = 1: additive (iB > F)
	rt += 400e6
	rc = (rt + rc) / 2 // iT = 2: hyper
	c.wantRates("iT = 2 and iB = 2 both > F: hyper", rc, rt)
}

func TestLateDeadlineAndStop(t *testing.T) {
	c := newTest(t, nil)
	c.cnp()
	start := c.Now
	c.Now += 3*55*us + 10*us // the transport wakes late once
	c.d.OnDeadline(c.Now)
	rc := float64(line) / 2
	for range 3 {
		rc = (float64(line) + rc) / 2
	}
	c.wantRates("three missed periods run in order", rc, float64(line))
	if got := c.d.Deadline(); got != start+4*55*us {
		t.Errorf("next timer = %v, want on the original grid %v", got, start+4*55*us)
	}
	c.Advance(10 * units.Millisecond)
	c.wantRates("back at line rate", float64(line), float64(line))
	if c.d.Deadline() != units.Never {
		t.Errorf("deadline at line rate = %v, want never", c.d.Deadline())
	}
}

func TestMinRate(t *testing.T) {
	c := newTest(t, nil)
	for range 20 {
		c.cnp()
	}
	if got := c.d.Rate(); got != 40*units.Mbps {
		t.Errorf("rate after 20 CNPs = %v, want the 40Mbps floor", got)
	}
	if c.d.CNPs() != 20 {
		t.Errorf("CNPs = %d, want 20", c.d.CNPs())
	}
}

func TestNotificationPoint(t *testing.T) {
	// spec baselines.md §3.3: "NP: send a CNP at most once per τ = 50 µs per flow when
	// marked packets arrive".
	np := NotificationPoint{Interval: 50 * us}
	for _, s := range []struct {
		at   units.Time
		ce   bool
		want bool
	}{
		{0, false, false},     // unmarked: never
		{10 * us, true, true}, // first mark: at once
		{20 * us, true, false},
		{59 * us, true, false},
		{60 * us, false, false},
		{60 * us, true, true}, // 50 µs after the last CNP
		{200 * us, true, true},
	} {
		if got := np.OnData(s.at, s.ce); got != s.want {
			t.Errorf("OnData(%v, ce=%v) = %v, want %v", s.at, s.ce, got, s.want)
		}
	}
}

func TestParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Params)
		want string
	}{
		{"defaults", func(*Params) {}, ""},
		{"g", func(p *Params) { p.G = 2 }, "g must be in (0, 1]"},
		{"alpha", func(p *Params) { p.InitAlpha = -1 }, "init_alpha"},
		{"alpha timer", func(p *Params) { p.AlphaTimer = 0 }, "alpha_timer must be > 0 (time)"},
		{"rate timer", func(p *Params) { p.RateTimer = -1 }, "rate_timer"},
		{"bytes", func(p *Params) { p.ByteCounter = 0 }, "byte_counter must be > 0 (bytes)"},
		{"F", func(p *Params) { p.FastRecovery = -1 }, "fast_recovery"},
		{"ai", func(p *Params) { p.RateAI = 0 }, "rate_ai must be > 0 (bit/s)"},
		{"hai", func(p *Params) { p.RateHAI = 0 }, "rate_hai"},
		{"min", func(p *Params) { p.MinRate = 0 }, "min_rate"},
		{"cnp", func(p *Params) { p.CNPInterval = 0 }, "cnp_interval"},
	} {
		cctest.WantValidate(t, tc.name, DefaultParams, tc.mod, tc.want)
	}
	s, err := cc.Lookup("dcqcn")
	if err != nil {
		t.Fatal(err)
	}
	p := s.Defaults()
	if err := cc.ScaleParams(p, 40); err != nil {
		t.Fatal(err)
	}
	dp := p.(*Params)
	if dp.RateTimer != 2200*us || dp.CNPInterval != 2000*us || dp.RateAI != units.Mbps || dp.ByteCounter != 10*units.Megabyte {
		t.Errorf("scaled by 40: %+v; want timers ×40, rates ÷40, bytes unchanged", dp)
	}
	if _, err := s.New(cc.Env{}, p); err == nil {
		t.Error("New without a line rate succeeded")
	}
}

func TestAllocatesNothing(t *testing.T) {
	c := newTest(t, nil)
	ack, cnp := &cc.Feedback{Kind: cc.Ack}, &cc.Feedback{Kind: cc.CNP}
	now := units.Time(0)
	a := testing.AllocsPerRun(100, func() {
		now += us
		c.d.OnFeedback(now, ack)
		c.d.OnSend(now, 0, 1000)
		c.d.OnFeedback(now, cnp)
		c.d.OnDeadline(now + 55*us)
	})
	if a != 0 {
		t.Errorf("allocates %v per ACK+send+CNP+timer", a)
	}
}

// BenchmarkOnFeedback measures the per-ACK path: one ACK and one data packet sent (the
// byte counter), with the increase process running.
func BenchmarkOnFeedback(b *testing.B) {
	d, _ := New(cc.Env{LineRate: line}, *DefaultParams())
	d.OnFeedback(0, &cc.Feedback{Kind: cc.CNP})
	fb := &cc.Feedback{Kind: cc.Ack}
	b.ReportAllocs()
	for b.Loop() {
		d.OnFeedback(1, fb)
		d.OnSend(1, 0, 1000)
	}
}

// BenchmarkCNPAndTimer measures one CNP (with the lazy α decay) and one timer event.
func BenchmarkCNPAndTimer(b *testing.B) {
	d, _ := New(cc.Env{LineRate: line}, *DefaultParams())
	fb := &cc.Feedback{Kind: cc.CNP}
	now := units.Time(0)
	b.ReportAllocs()
	for b.Loop() {
		now += 120 * us
		d.OnFeedback(now, fb)
		d.OnDeadline(now + 55*us)
	}
}
