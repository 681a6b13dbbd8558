package mswift

import (
	"math"
	"testing"

	"reef/cc"
	"reef/cc/internal/cctest"
	"reef/units"
)

// ccTest drives one MSwift flow through cctest.Flow (x/net/quic's congestion-test
// style: a fixed start time, a log line per event, and want* checks).
type ccTest struct {
	*cctest.Flow
	m *MSwift
}

// paperEnv is htsim's setting as the paper used it: 100 Gbps, 4000 B packets.
func paperEnv() cc.Env {
	return cc.Env{MSS: 4000, PacketSize: 4000, LineRate: 100 * units.Gbps, BaseRTT: 10 * units.Microsecond}
}

// flat makes the target exactly 20 µs (no flow scaling), as in spec §3.9's oracles.
func flat(p *Params) { p.BaseTarget, p.FsRange, p.InitCwnd = 20*units.Microsecond, 0, 50 }

func newTest(t *testing.T, def func() *Params, edit func(*Params)) *ccTest {
	t.Helper()
	p := def()
	if edit != nil {
		edit(p)
	}
	m, err := New(paperEnv(), p)
	if err != nil {
		t.Fatal(err)
	}
	return &ccTest{Flow: cctest.New(t, m, units.Second), m: m}
}

// ack delivers an ACK of one new packet with RTT rtt.
func (c *ccTest) ack(rtt units.Time) {
	c.T.Helper()
	c.Feedback(cc.Feedback{Kind: cc.Ack, AckedPackets: 1, AckedBytes: 4000, RTT: rtt})
	c.T.Logf("median %v cwnd %.4f", units.Time(c.m.lastMedian), c.m.cwnd)
}

func (c *ccTest) wantCwnd(why string, want float64) {
	c.T.Helper()
	c.WantCwnd(why, want, 1e-9)
}

// spec mswift.md §3.9: "median([10, 10, 50]) = 10", "median([50, 50, 10]) = 50",
// "median([10, 50]) = 30"; spec A1 for even lengths.
func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{10, 10, 50}, 10},
		{[]float64{50, 50, 10}, 50},
		{[]float64{10, 50}, 30},
		{[]float64{7}, 7},
		{[]float64{5, 1, 4, 2, 3, 9, 8, 7, 6, 10}, 5.5},
		{[]float64{20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 10},
	} {
		if got := median(append([]float64(nil), tc.in...)); got != tc.want {
			t.Errorf("median(%v) = %g, want %g", tc.in, got, tc.want)
		}
	}
}

// The ring keeps the last K samples across wrap-around: push's median must equal the
// median of the last min(H, stored) samples computed the slow way.
func TestHistoryRing(t *testing.T) {
	c := newTest(t, DefaultParams, nil)
	var all []float64
	for i := 0; i < 57; i++ {
		v := float64((i * 37) % 23)
		all = append(all, v)
		h := 3 + i%8
		got := c.m.push(v, h)
		n := min(h, len(all), 10)
		if want := median(append([]float64(nil), all[len(all)-n:]...)); got != want {
			t.Fatalf("sample %d, H %d: median %g, want %g", i, h, got, want)
		}
	}
}

// spec §3.9: "History size, bounded mode with α = 0.5, K = 10: cwnd 0.3 → H = 3;
// cwnd 7.9 → 3; cwnd 8 → 4; cwnd 19.9 → 9; cwnd 20 → 10; cwnd 500 → 10."
func TestHistorySize(t *testing.T) {
	c := newTest(t, DefaultParams, nil)
	for _, tc := range []struct {
		cwnd float64
		want int
	}{{0.3, 3}, {7.9, 3}, {8, 4}, {19.9, 9}, {20, 10}, {500, 10}} {
		c.m.cwnd = tc.cwnd
		if got := c.m.historySize(); got != tc.want {
			t.Errorf("bounded: cwnd %g → H = %d, want %d", tc.cwnd, got, tc.want)
		}
	}
	w := newTest(t, DefaultParams, func(p *Params) { p.History = HistoryWindow })
	w.m.cwnd = 500
	if got := w.m.historySize(); got != 250 {
		t.Errorf("window mode: cwnd 500 → H = %d, want 250 (no bound K)", got)
	}
	l := newTest(t, DefaultLSwiftParams, nil)
	l.m.cwnd = 500
	if got := l.m.historySize(); got != 1 {
		t.Errorf("LSwift: H = %d, want 1 (the latest sample)", got)
	}
}

// spec §3.3: "target(cwnd) = base_target + hops·h + clamp(fs_α/√cwnd + fs_β, 0, fs_range)";
// "with ... base + topo = 15.8 µs, the target is 15.8 µs for cwnd ≥ 100 pkts, ≈ 17.5 µs
// at cwnd ≈ 44 pkts, and ≈ 22.9 µs at cwnd = 10 pkts".
func TestTarget(t *testing.T) {
	c := newTest(t, DefaultParams, nil)
	for _, tc := range []struct{ cwnd, want float64 }{
		{100, 15.8}, {1000, 15.8}, {44, 17.5}, {10, 22.9}, {1, 15.8 + 29.39}, {0.1, 115.8}, {0.01, 115.8},
	} {
		if got := c.m.target(tc.cwnd) / 1e3; math.Abs(got-tc.want) > 0.05 {
			t.Errorf("target(%g pkts) = %.3f µs, want %.1f", tc.cwnd, got, tc.want)
		}
	}
}

func TestControlLaw(t *testing.T) {
	t.Run("median hides one long sample", func(t *testing.T) {
		// spec §3.9: "median([10, 10, 50]) = 10 → no MD when target = 20."
		c := newTest(t, DefaultParams, flat)
		c.ack(10 * units.Microsecond)
		c.ack(10 * units.Microsecond)
		c.ack(50 * units.Microsecond)
		c.wantCwnd("three AIs of ai/cwnd", 50+1.0/50+1.0/(50+1.0/50)+1.0/(50+1.0/50+1.0/(50+1.0/50)))
	})
	t.Run("median decrease", func(t *testing.T) {
		// spec §3.9: "median([50, 50, 10]) = 50 → MD factor max(1 − 0.8·30/50, 0.5) = 0.52."
		c := newTest(t, DefaultParams, flat)
		c.ack(50 * units.Microsecond) // median 50: MD (first decrease allowed at once)
		c.wantCwnd("first sample above target", 50*0.52)
		c.Advance(100 * units.Microsecond) // > srtt: decrease allowed again
		c.ack(50 * units.Microsecond)
		c.ack(10 * units.Microsecond) // median(50, 50, 10) = 50, but within an RTT: no change
		c.wantCwnd("within an RTT of the decrease", 50*0.52*0.52)
		if c.m.lastMedian != 50e3 {
			t.Errorf("median = %v, want 50µs", c.m.lastMedian)
		}
	})
	t.Run("round robin with one long path", func(t *testing.T) {
		// spec §3.9: "one T_l sample in every n ≥ 4 samples (RR), with T_s < target < T_l,
		// gives no delay MD for H ≥ 3. LSwift (H = 1) takes a delay MD on long samples."
		for _, tc := range []struct {
			name   string
			def    func() *Params
			wantMD bool
		}{{"mswift", DefaultParams, false}, {"lswift", DefaultLSwiftParams, true}} {
			c := newTest(t, tc.def, flat)
			for i := 0; i < 40; i++ {
				c.Advance(5 * units.Microsecond)
				if i%4 == 3 {
					c.ack(60 * units.Microsecond)
				} else {
					c.ack(10 * units.Microsecond)
				}
			}
			if gotMD := c.m.Cwnd() < 50; gotMD != tc.wantMD {
				t.Errorf("%s: cwnd %.3f after 40 ACKs; decreased = %v, want %v", tc.name, c.m.Cwnd(), gotMD, tc.wantMD)
			}
		}
	})
	t.Run("const H=1 is LSwift", func(t *testing.T) {
		// spec §3.9: "Const mode with H = 1 reproduces LSwift decisions exactly".
		a := newTest(t, DefaultLSwiftParams, flat)
		b := newTest(t, DefaultParams, func(p *Params) { flat(p); p.History, p.HistConst = HistoryConst, 1 })
		for i, rtt := range []units.Time{10, 30, 12, 60, 8, 25, 25, 9, 70, 11} {
			a.Advance(7 * units.Microsecond)
			b.Advance(7 * units.Microsecond)
			a.ack(rtt * units.Microsecond)
			b.ack(rtt * units.Microsecond)
			if a.m.Cwnd() != b.m.Cwnd() {
				t.Fatalf("ACK %d: LSwift cwnd %g, const-1 cwnd %g", i, a.m.Cwnd(), b.m.Cwnd())
			}
		}
	})
	t.Run("first ACK", func(t *testing.T) {
		// spec §3.6: "With one sample, the median is that sample."
		c := newTest(t, DefaultParams, flat)
		c.ack(21 * units.Microsecond)
		c.wantCwnd("one sample above target", 50*(1-0.8*1.0/21))
	})
}

// spec §3.2: "if cwnd ≥ 1: cwnd += ai·num_acked/cwnd; else: cwnd += ai·num_acked";
// "if cwnd < 1 pkt: pacing_delay ← rtt / cwnd".
func TestBelowOnePacket(t *testing.T) {
	c := newTest(t, DefaultParams, func(p *Params) { flat(p); p.InitCwnd = 0.25 })
	c.ack(10 * units.Microsecond)
	c.wantCwnd("AI below one packet adds ai·num_acked", 1.25)
	c.m.cwnd = 0.5
	if got, want := c.m.Rate(), units.Rate(0.5*4000*8*1e9/float64(c.m.srtt)); got != want || got == 0 {
		t.Errorf("Rate = %v, want one packet every srtt/cwnd = %v", got, want)
	}
	if got := c.m.Window(); got != 2000 {
		t.Errorf("Window = %v, want half a packet (2000B)", got)
	}
}

// spec §3.5: "Apply the loss MD cwnd ← (1 − max_mdf)·cwnd (if can_decrease) only when
// the newly declared hole belongs to a run of ≥ 5"; "setting LazyRun = 1 gives Swift".
// spec §3.2: RTO reaction and RETX_RESET_THRESHOLD.
func TestLossAndTimeout(t *testing.T) {
	c := newTest(t, DefaultParams, flat)
	for i := 0; i < 4; i++ {
		c.m.OnLoss(c.Now, 4000)
		c.ack(10 * units.Microsecond) // an ACK of new data in between: runs stay short
	}
	if c.m.Cwnd() < 50 {
		t.Errorf("isolated losses decreased cwnd to %g; LSwift only retransmits", c.m.Cwnd())
	}
	before := c.m.Cwnd()
	for i := 0; i < 5; i++ {
		c.m.OnLoss(c.Now, 4000)
	}
	c.wantCwnd("a run of 5 lost packets", before/2)

	s := newTest(t, DefaultParams, func(p *Params) { flat(p); p.LazyRun = 1 })
	s.m.OnLoss(s.Now, 4000)
	s.wantCwnd("LazyRun 1 (Swift): any loss", 25)

	r := newTest(t, DefaultParams, flat)
	for i := 0; i < 4; i++ {
		r.Advance(20 * units.Microsecond)
		r.m.OnTimeout(r.Now)
	}
	r.wantCwnd("four timeouts an RTT apart", 50.0/16)
	r.m.OnTimeout(r.Now)
	r.wantCwnd("fifth consecutive timeout: min_cwnd", 0.0025)
	if r.m.Rate() == 0 {
		t.Error("cwnd 0.0025: Rate = 0, want pacing")
	}
}

func TestValidateAndRegistry(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Params)
		want string
	}{
		{func(p *Params) { p.History = "median" }, "history must be one of"},
		{func(p *Params) { p.MaxMDF = 1 }, "max_mdf"},
		{func(p *Params) { p.BaseTarget = 0 }, "base_target must be > 0"},
		{func(p *Params) { p.HistK = 2 }, "hist_k"},
		{func(p *Params) { p.LazyRun = 0 }, "lazy_run must be ≥ 1 packets"},
		{func(p *Params) { p.MinCwnd = 0 }, "min_cwnd"},
	} {
		cctest.WantValidate(t, tc.want, DefaultParams, tc.edit, tc.want)
	}
	for _, name := range []string{"mswift", "lswift"} {
		spec, err := cc.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		p := spec.Defaults()
		if err := cc.ScaleParams(p, 100); err != nil {
			t.Fatal(err)
		}
		if got := p.(*Params).BaseTarget; got != 1580*units.Microsecond {
			t.Errorf("%s: base_target scaled by 100 = %v, want 1.58ms", name, got)
		}
		if _, err := spec.New(cc.Env{MSS: 1460, PacketSize: 1500, LineRate: units.Gbps, BaseRTT: units.Millisecond}, p); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkOnFeedback(b *testing.B) {
	m, err := New(paperEnv(), DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	m.cwnd = 40 // H = 10: the costliest bounded median
	fb := cc.Feedback{Kind: cc.Ack, AckedPackets: 1, AckedBytes: 4000}
	now := units.Second
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now += 320
		fb.RTT = units.Time(10+(i*7)%13) * units.Microsecond
		m.OnFeedback(now, &fb)
	}
}
