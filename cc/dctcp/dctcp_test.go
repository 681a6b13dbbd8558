package dctcp

import (
	"math"
	"testing"

	"reef/cc"
	"reef/cc/internal/cctest"
	"reef/units"
)

const mss = 1000

// ccTest drives one DCTCP flow through cctest.Flow (x/net/quic's congestion-test style).
type ccTest struct {
	*cctest.Flow
	d   *DCTCP
	una uint64 // next packet to acknowledge
}

func newTest(t *testing.T, mod func(*Params)) *ccTest {
	t.Helper()
	p := DefaultParams()
	if mod != nil {
		mod(p)
	}
	d, err := New(cc.Env{MSS: mss, PacketSize: 1054, LineRate: 10 * units.Gbps, BaseRTT: 100 * units.Microsecond}, *p)
	if err != nil {
		t.Fatal(err)
	}
	return &ccTest{Flow: cctest.New(t, d, units.Millisecond), d: d}
}

func (c *ccTest) sent(n int) {
	c.T.Helper()
	c.Sent(n, mss)
}

// acks acknowledges the next n packets one by one; the first marked of them carry ECE.
func (c *ccTest) acks(n, marked int) {
	c.T.Helper()
	c.T.Logf("%v ack %d..%d, %d with ECE", c.Now, c.una, c.una+uint64(n)-1, marked)
	for i := range n {
		c.una++
		c.d.OnFeedback(c.Now, &cc.Feedback{Kind: cc.Ack, AckedBytes: mss, AckedPackets: 1,
			AckSeq: c.una - 1, NextSeq: c.Next, ECE: i < marked, Inflight: c.inflight()})
	}
}

// inflight is what the transport reports after an ACK: packets sent and not acked.
func (c *ccTest) inflight() units.Bytes {
	if c.Next < c.una {
		return 0
	}
	return units.Bytes(c.Next-c.una) * mss
}

func (c *ccTest) set(cwnd float64) {
	c.d.cwnd, c.d.ssthresh = cwnd, cwnd
}

func (c *ccTest) wantWindow(reason string, want float64) {
	c.T.Helper()
	c.WantWindow(reason, want, 1)
}

func (c *ccTest) wantAlpha(reason string, want float64) {
	c.T.Helper()
	if got := c.d.Alpha(); math.Abs(got-want) > 1e-12 {
		c.T.Errorf("%s: α = %.12f, want %.12f", reason, got, want)
	}
}

func TestAlphaPerWindow(t *testing.T) {
	// spec timely.md §4.2: "Per-window estimate α_d ← (1 − g)·α_d + g·F, where F is the
	// fraction of marked bytes in the last window"; g = 1/16, α starts at 1.
	c := newTest(t, nil)
	c.set(1e9) // keep growth out of the way
	c.sent(10)
	c.acks(1, 0) // the first ACK opens a window that ends with packet 9 (snd_nxt = 10)
	c.wantAlpha("window not over", 1)
	c.acks(8, 0)
	c.sent(8)
	c.acks(1, 0) // packet 9: the window ends; the next one ends with packet 17
	c.wantAlpha("an unmarked window: α·15/16", 15.0/16)
	c.acks(7, 2)
	c.wantAlpha("window not over after 7 of 8 ACKs", 15.0/16)
	c.sent(4)
	c.acks(1, 0)
	a := 15.0/16*15.0/16 + 0.25/16
	c.wantAlpha("2 of 8 marked: F = 0.25", a)
	c.acks(4, 4)
	c.wantAlpha("all marked: F = 1", a*15/16+1.0/16)
}

func TestCutOncePerWindow(t *testing.T) {
	// spec timely.md §4.2: "Once per window with marks: cwnd ← cwnd·(1 − α_d/2)".
	c := newTest(t, nil)
	c.set(100 * mss)
	c.sent(100)
	c.acks(1, 1) // α = 1 still: the window is halved
	c.wantWindow("first mark, α = 1", 50*mss)
	c.acks(50, 50)
	c.wantWindow("more marks in the same window: no second cut, no growth", 50*mss)
	c.acks(49, 0)
	c.wantWindow("no growth until the cut window is acknowledged", 50*mss)
	c.sent(50)
	c.acks(1, 0) // covers packet 100, sent after the cut: recovery over, CA again
	c.wantWindow("congestion avoidance: + MSS·acked/cwnd", 50*mss+mss/50.0)
	c.d.alpha = 0.2
	c.acks(1, 1)
	c.wantWindow("second window's mark, α = 0.2: × 0.9", (50*mss+mss/50.0)*0.9)
}

func TestSlowStartAndFloor(t *testing.T) {
	c := newTest(t, nil)
	c.wantWindow("RFC 6928 initial window", 10*mss)
	c.sent(10)
	c.acks(4, 0)
	c.wantWindow("slow start: + acked bytes", 14*mss)
	c.set(3 * mss)
	c.acks(1, 1)
	c.wantWindow("floor of 2 packets (RFC 5681)", 2*mss)
	if c.d.Rate() != 0 || c.d.Deadline() != units.Never {
		t.Errorf("rate %v deadline %v, want 0 and never", c.d.Rate(), c.d.Deadline())
	}
}

func TestLossAndTimeout(t *testing.T) {
	c := newTest(t, nil)
	c.set(40 * mss)
	c.sent(40)
	c.d.OnLoss(c.Now, mss)
	c.wantWindow("loss halves (RFC 8257 §3.5)", 20*mss)
	c.d.OnLoss(c.Now, mss)
	c.wantWindow("once per window", 20*mss)
	c.acks(40, 0)
	c.sent(20)
	c.acks(1, 0)
	c.wantWindow("recovered: congestion avoidance", 20*mss+mss/20.0)
	c.d.OnTimeout(c.Now)
	c.wantWindow("timeout: one packet (RFC 5681 loss window)", mss)
	if got := c.d.ssthresh; math.Abs(got-(20*mss+mss/20.0)/2) > 1e-9 {
		t.Errorf("ssthresh after timeout = %v, want half the window", got)
	}
	c.sent(2)
	c.acks(1, 0)
	c.wantWindow("slow start after timeout", 2*mss)
}

func TestGrowOnlyWhenWindowLimited(t *testing.T) {
	// RFC 7661 / Linux tcp_is_cwnd_limited: a window that does not limit sending (the
	// NIC or the application does) does not grow.
	c := newTest(t, nil)
	c.sent(3) // 3 of 10 packets: NIC-limited
	c.acks(1, 0)
	c.wantWindow("slow start: 2 in flight + 1 acked, window 10 ≥ 2·3", 10*mss)
	c.sent(4) // 6 in flight
	c.acks(1, 0)
	c.wantWindow("slow start: 5 in flight + 1 acked, 10 < 2·6", 11*mss)
	c.set(20 * mss)
	c.sent(12) // 17 in flight
	c.acks(1, 0)
	c.wantWindow("congestion avoidance: 16 + 1 + 1 < 20", 20*mss)
	c.sent(3) // 19 in flight
	c.acks(1, 0)
	c.wantWindow("congestion avoidance: 18 + 1 + 1 ≥ 20", 20*mss+mss/20.0)
}

func TestInitWindowBDP(t *testing.T) {
	c := newTest(t, func(p *Params) { p.InitWindow = 0; p.MaxWindow = 100 * units.Kilobyte })
	c.wantWindow("one BDP of 10 Gb/s × 100 µs, under the cap", 100000)
	c = newTest(t, func(p *Params) { p.InitWindow = 0 })
	c.wantWindow("one BDP of 10 Gb/s × 100 µs", 125000)
}

func TestParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Params)
		want string
	}{
		{"defaults", func(*Params) {}, ""},
		{"g", func(p *Params) { p.G = 0 }, "g must be in (0, 1]"},
		{"alpha", func(p *Params) { p.InitAlpha = 2 }, "init_alpha"},
		{"init", func(p *Params) { p.InitWindow = -1 }, "init_window must be ≥ 0 (packets"},
		{"min", func(p *Params) { p.MinWindow = 0 }, "min_window"},
		{"max", func(p *Params) { p.MaxWindow = -1 }, "max_window must be ≥ 0 (bytes"},
	} {
		cctest.WantValidate(t, tc.name, DefaultParams, tc.mod, tc.want)
	}
	a, err := cc.New("dctcp", cc.Env{MSS: mss})
	if err != nil {
		t.Fatal(err)
	}
	if a.Window() != 10*mss {
		t.Errorf("registered dctcp window = %v, want 10 packets", a.Window())
	}
	if _, err := cc.New("dctcp", cc.Env{}); err == nil {
		t.Error("New without an MSS succeeded")
	}
}

func TestAckAllocatesNothing(t *testing.T) {
	c := newTest(t, nil)
	fb := &cc.Feedback{Kind: cc.Ack, AckedBytes: mss, AckedPackets: 1}
	if a := testing.AllocsPerRun(100, func() { ackOnce(c.d, fb) }); a != 0 {
		t.Errorf("OnFeedback allocates %v per ACK", a)
	}
}

func ackOnce(d *DCTCP, fb *cc.Feedback) {
	fb.AckSeq++
	fb.NextSeq = fb.AckSeq + 64
	fb.ECE = fb.AckSeq%16 == 0
	d.OnSend(0, fb.NextSeq, mss)
	d.OnFeedback(0, fb)
}

// BenchmarkOnFeedback measures one OnSend plus one OnFeedback (1 in 16 ACKs marked).
func BenchmarkOnFeedback(b *testing.B) {
	d, _ := New(cc.Env{MSS: mss}, *DefaultParams())
	fb := &cc.Feedback{Kind: cc.Ack, AckedBytes: mss, AckedPackets: 1}
	b.ReportAllocs()
	for b.Loop() {
		ackOnce(d, fb)
	}
}
