package oscar

import (
	"math"
	"testing"

	"reef/cc"
	"reef/cc/internal/cctest"
	"reef/units"
)

// ccTest drives one OSCAR flow through cctest.Flow (x/net/quic's congestion-test
// style: a fixed start time, a log line per event, and want* checks).
type ccTest struct {
	*cctest.Flow
	o *Oscar
}

// paperEnv is the paper's setting (spec §2.2): 100 Gbps, 12 µs base RTT, so BDP_base =
// 150 KB, D_target = 18 µs and τ = 6 µs. Frames equal payloads to keep numbers round.
func paperEnv() cc.Env {
	return cc.Env{MSS: 1000, PacketSize: 1000, LineRate: 100 * units.Gbps, BaseRTT: 12 * units.Microsecond}
}

func newTest(t *testing.T, edit func(*Params)) *ccTest {
	t.Helper()
	p := DefaultParams()
	if edit != nil {
		edit(p)
	}
	o, err := New(paperEnv(), p)
	if err != nil {
		t.Fatal(err)
	}
	return &ccTest{Flow: cctest.New(t, o, units.Second), o: o}
}

// ack delivers the ACK of a packet sent at sent, with its RTT and echoed in-flight.
func (c *ccTest) ack(sent, rtt units.Time, inflight units.Bytes) {
	c.T.Helper()
	c.Now = max(c.Now, sent+rtt)
	c.Feedback(cc.Feedback{Kind: cc.Ack, AckedPackets: 1, AckedBytes: 1000, SendTime: sent, RTT: rtt, InflightEcho: inflight})
	c.T.Logf("sent=%v infl=%v -> u %.5f", sent, inflight, c.o.u)
}

// batch feeds one batch of n packets sent evenly over τ = 6 µs after from, all with the
// same delay and in-flight, and returns the send time that closed it.
func (c *ccTest) batch(from units.Time, n int, delay units.Time, infl units.Bytes) units.Time {
	c.T.Helper()
	var s units.Time
	for i := 1; i <= n; i++ {
		s = from + units.Time(i)*6*units.Microsecond/units.Time(n)
		c.ack(s, delay, infl)
	}
	return s
}

func (c *ccTest) wantU(why string, want float64) {
	c.T.Helper()
	if got := c.o.Ratio(); math.Abs(got-want) > 1e-9 {
		c.T.Errorf("%s: u = %.6f, want %.6f", why, got, want)
	}
}

// spec oscar.md §2.5, Eq. (7): "gradient = (counts*sumXY - sumX*sumY) /
// (counts*sumXX - sumX*sumX)", and "if (sendTs - startTs >= tau) and (counts >= 3)".
func TestEstimator(t *testing.T) {
	e := estimator{tau: 30, idle: 1000, minPts: 3}
	if e.add(100, 5, 0, 1, 8000) {
		t.Fatal("first sample closed a batch; it only sets startTs (spec A4)")
	}
	// (10,1) (20,3) (30,2): the third point reaches span τ = 30 with 3 points.
	for i, y := range []float64{1, 3, 2} {
		closed := e.add(100+units.Time(10*(i+1)), y, 0, 1, 8000)
		if want := i == 2; closed != want {
			t.Fatalf("sample %d: closed = %v, want %v", i, closed, want)
		}
	}
	if math.Abs(e.gradient-0.05) > 1e-12 || e.delay != 2 {
		t.Errorf("batch of 3: gradient %g delay %g, want 0.05 and 2", e.gradient, e.delay)
	}
	if e.start != 130 || e.nPts != 0 {
		t.Errorf("after closing: start %v with %d points, want the closing send time 130 and 0", e.start, e.nPts)
	}
	// A clean known series, all in one batch.
	e = estimator{tau: 40, idle: 1000, minPts: 3}
	e.add(0, 0, 0, 1, 8000)
	xs, ys := []units.Time{10, 20, 30, 40}, []float64{1, 3, 2, 6}
	for i := range xs {
		e.add(xs[i], ys[i], 2000, 1, 8000)
	}
	if math.Abs(e.gradient-0.14) > 1e-12 || e.delay != 3 || e.inflight != 2000 {
		t.Errorf("LS over (10,1)(20,3)(30,2)(40,6): gradient %g delay %g inflight %g; want 0.14, 3, 2000",
			e.gradient, e.delay, e.inflight)
	}
	// "rate = counts * MTU / (sendTs - startTs)": 4 packets of 1000 B in 40 ns = 800 Gbps.
	if e.rateBs != 800e9 {
		t.Errorf("rate = %g bit/s, want 8e11", e.rateBs)
	}
	// The slope is invariant under a shift of x (spec §2.5 "Center x"): the same series
	// one hour into the run.
	e = estimator{tau: 40, idle: 1000, minPts: 3}
	h := 3600 * units.Second
	e.add(h, 0, 0, 1, 8000)
	for i := range xs {
		e.add(h+xs[i], ys[i], 0, 1, 8000)
	}
	if math.Abs(e.gradient-0.14) > 1e-12 {
		t.Errorf("gradient an hour in = %g, want 0.14", e.gradient)
	}
	// "At least 3 samples are required, otherwise the computation is postponed."
	e = estimator{tau: 10, idle: 1000, minPts: 3}
	e.add(0, 0, 0, 1, 8000)
	if e.add(100, 1, 0, 1, 8000) || e.add(200, 1, 0, 1, 8000) {
		t.Error("a batch closed with fewer than 3 samples")
	}
}

// spec §2.6, Alg. 2 with the paper's parameters (D_target 18 µs, ε 1 µs).
func TestControlLaw(t *testing.T) {
	t.Run("initial state", func(t *testing.T) {
		// spec A24: "u = 1, so w = BDP_base and r = line rate".
		c := newTest(t, nil)
		if c.o.Window() != 150000 || c.o.Rate() != 100*units.Gbps {
			t.Errorf("initial window %v rate %v, want 150KB and 100Gbps", c.o.Window(), c.o.Rate())
		}
	})
	t.Run("decelerate", func(t *testing.T) {
		// delay ≥ D_target: "u = min(u_w, u_r)", then "u = u + U_AI".
		c := newTest(t, nil)
		c.ack(0, 36*units.Microsecond, 450000) // sets startTs
		for i := 1; i <= 6; i++ {
			s := units.Time(i) * units.Microsecond
			c.ack(s, 36*units.Microsecond+s, 450000) // delay rises 1 ns per ns sent: g = 1
		}
		if be := c.o.be; math.Abs(be.gradient-1) > 1e-9 || be.delay != 39500 {
			t.Fatalf("gradient %g delay %g, want 1 and 39.5µs", be.gradient, be.delay)
		}
		// u_w = 450KB·8/(39.5µs·100G) = 0.911; 6 packets of 1000 B in 6 µs is 8 Gbps, so
		// u_r = 0.08/(1+1) = 0.04.
		c.wantU("min(u_w, u_r) + U_AI", 0.041)
		// spec §2.3: the artifact rounds the window up to whole packets.
		if got, want := c.o.Window(), units.Bytes(10000); got != want {
			t.Errorf("Window = %v, want u·D_target·μ = 0.041·225KB = 9.225KB rounded up to 10 packets", got)
		}
		if got := c.o.Rate(); got != 4100*units.Mbps {
			t.Errorf("Rate = %v, want u·μ = 4.1Gbps", got)
		}
	})
	t.Run("accelerate", func(t *testing.T) {
		// RTT_base+ε ≤ delay 15µs < D_target: "u = max(u_w, u_r)" + U_AI.
		// u_w = 120KB·8/(15µs·100G) = 0.64; 60 packets in 6 µs = 80 Gbps, g = 0: u_r = 0.8.
		c := newTest(t, func(p *Params) { p.InitRatio = 0.3 })
		c.ack(0, 15*units.Microsecond, 120000)
		c.batch(0, 60, 15*units.Microsecond, 120000)
		c.wantU("max(0.64, 0.8) + 0.001", 0.801)
	})
	t.Run("hyper increase", func(t *testing.T) {
		// "if BE.delay < RTT_base + epsilon: u = u + U_HAI" (no U_AI).
		c := newTest(t, func(p *Params) { p.InitRatio = 0.5 })
		c.ack(0, 12500, 1000)
		end := c.batch(0, 3, 12500, 1000)
		c.wantU("u + U_HAI", 0.51)
		end = c.batch(end, 3, 12500, 1000)
		c.wantU("again one batch later", 0.52)
		for i := 0; i < 60; i++ {
			end = c.batch(end, 3, 12500, 1000)
		}
		c.wantU("bounded by u_max", 1)
	})
	t.Run("stale signals are idempotent", func(t *testing.T) {
		// spec §2.7: "if batch k+1 still reflects pre-update sending, it recomputes (about)
		// the same target instead of compounding the cut".
		c := newTest(t, nil)
		c.ack(0, 36*units.Microsecond, 225000)
		end := c.batch(0, 60, 36*units.Microsecond, 225000)
		c.wantU("min(u_w 0.5, u_r 0.8) + 0.001", 0.501)
		c.batch(end, 60, 36*units.Microsecond, 225000)
		c.wantU("second batch with the same reference and signal", 0.501)
	})
	t.Run("floor", func(t *testing.T) {
		c := newTest(t, func(p *Params) { p.AI = 0 })
		c.ack(0, units.Millisecond, 100)
		c.batch(0, 3, units.Millisecond, 100)
		c.wantU("bounded by u_min (spec A6)", 0.001)
		if w := c.o.Window(); w != 1000 {
			t.Errorf("Window = %v, want one packet: the artifact's smallest window (spec §2.3)", w)
		}
	})
}

// Artifact (spec A7): "If a batch spans more than 3*tau (idle periods), gradient := 0 and
// rate := 0 for that batch", and then "u_r := u_w". The batch still updates, so a flow
// whose packets are further apart than 3τ (u near u_min) keeps adapting.
func TestIdle(t *testing.T) {
	c := newTest(t, func(p *Params) { p.InitRatio = 0.5 })
	c.ack(0, 15*units.Microsecond, 150000)
	for i := 1; i <= 3; i++ {
		s := units.Time(i) * 30 * units.Microsecond
		c.ack(s, 15*units.Microsecond+s/100, 150000) // rising delay, 30 µs apart
	}
	if be := c.o.be; be.gradient != 0 || be.rateBs != 0 {
		t.Errorf("batch over 90µs > 3τ: gradient %g rate %g, want 0 and 0", be.gradient, be.rateBs)
	}
	// delay 15.6 µs < D_target: u = max(u_w, u_r = u_w) + U_AI, u_w = 1.2e6/(15.6µs·100G).
	c.wantU("u_w alone", 1.2e6/(15600*100)+0.001)
}

func TestValidateAndRegistry(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Params)
		want string
	}{
		{func(p *Params) { p.TargetRatio = 1 }, "target_ratio must be > 1"},
		{func(p *Params) { p.BatchRatio = 0 }, "batch_ratio"},
		{func(p *Params) { p.AI = -1 }, "u_ai"},
		{func(p *Params) { p.MinSamples = 1 }, "min_samples must be ≥ 2 ACKs"},
		{func(p *Params) { p.GradientFloor = -1 }, "gradient_floor"},
		{func(p *Params) { p.MaxRatio = 2 }, "u_max"},
		{func(p *Params) { p.Epsilon = -1 }, "epsilon must be ≥ 0"},
	} {
		cctest.WantValidate(t, tc.want, DefaultParams, tc.edit, tc.want)
	}
	spec, err := cc.Lookup("oscar")
	if err != nil {
		t.Fatal(err)
	}
	p := spec.Defaults()
	if err := cc.ScaleParams(p, 100); err != nil {
		t.Fatal(err)
	}
	if got := p.(*Params).Epsilon; got != 100*units.Microsecond {
		t.Errorf("epsilon scaled by 100 = %v, want 100µs", got)
	}
	if _, err := spec.New(cc.Env{MSS: 1000, LineRate: units.Gbps}, p); err == nil {
		t.Error("New without a base RTT succeeded; OSCAR needs RTT_base")
	}
	alg, err := spec.New(cc.Env{MSS: 1460, PacketSize: 1500, LineRate: units.Gbps, BaseRTT: units.Millisecond}, p)
	if err != nil {
		t.Fatal(err)
	}
	// BDP_base = 125 KB of frames = 83.3 payload packets, rounded up to 84.
	if got, want := alg.Window(), units.Bytes(84*1460); got != want {
		t.Errorf("initial window %v, want BDP_base in whole payload packets %v", got, want)
	}
}

func BenchmarkOnFeedback(b *testing.B) {
	o, err := New(paperEnv(), DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	fb := cc.Feedback{Kind: cc.Ack, AckedPackets: 1, AckedBytes: 1000, InflightEcho: 150000}
	var sent units.Time
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sent += 80 // 100 Gbps, 1000 B frames
		fb.SendTime = sent
		fb.RTT = 12*units.Microsecond + units.Time(i%50)*100
		o.OnFeedback(sent+fb.RTT, &fb)
	}
}

// spec §2.10 / A19: "no CC reaction to loss"; OSCAR reacts to the delay a loss causes.
func TestLossAndTimeout(t *testing.T) {
	c := newTest(t, func(p *Params) { p.InitRatio = 0.5 })
	c.o.OnLoss(c.Now, 1000)
	c.o.OnTimeout(c.Now)
	c.wantU("loss and timeout leave u alone", 0.5)
	if c.o.Deadline() != units.Never {
		t.Error("OSCAR wants no timer: batches close on ACK send times")
	}
}
