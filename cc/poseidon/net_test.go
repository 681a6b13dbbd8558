package poseidon_test

import (
	"math"
	"testing"

	"reef/cc"
	"reef/cc/internal/dumbbell"
	"reef/cc/poseidon"
	"reef/hostd"
	"reef/hostd/hosttest"
	"reef/units"
)

// Behaviour on a dumbbell (cc/internal/dumbbell): 10 Gbps NICs, a 1 Gbps bottleneck with
// 1500 B frames and 100 µs links (base RTT ≈ 0.41 ms, BDP ≈ 35 packets). The paper's
// parameters are scaled by the packet-time ratio τ = 73.24 (spec poseidon.md §7.3,
// config B: k = 146 µs, p = 2.93 ms, MPD unit 18.75 µs), max_rate = the bottleneck.
const tau = 73.24

func newNet(t *testing.T, starts []units.Time) (*dumbbell.Net, []*poseidon.Poseidon) {
	t.Helper()
	return newNetMPD(t, starts, units.Time(256).Scale(tau))
}

// newNetMPD is newNet with the switch's MPD unit (0: no INT switch at all).
func newNetMPD(t *testing.T, starts []units.Time, mpdUnit units.Time) (*dumbbell.Net, []*poseidon.Poseidon) {
	t.Helper()
	var algs []*poseidon.Poseidon
	n, err := dumbbell.New(dumbbell.Config{Starts: starts, NIC: 10 * units.Gbps, Bottleneck: units.Gbps,
		Delay: 100 * units.Microsecond, Buffer: 4 * units.Megabyte, MPDUnit: mpdUnit},
		func(_ int, env cc.Env) (cc.Algorithm, error) {
			p := poseidon.DefaultParams()
			if err := cc.ScaleParams(p, tau); err != nil {
				return nil, err
			}
			p.MaxRate = units.Gbps
			a, err := poseidon.New(env, p)
			algs = append(algs, a)
			return a, err
		})
	if err != nil {
		t.Fatal(err)
	}
	return n, algs
}

// target is T(rate) for these parameters, rate in bit/s.
func target(rate float64) units.Time {
	k, p := 2*units.Microsecond.Scale(tau), 40*units.Microsecond.Scale(tau)
	return k + units.Time(float64(p)*(log10(1e9)-log10(rate))/4)
}

func TestLoneFlowFillsBottleneck(t *testing.T) {
	n, algs := newNet(t, []units.Time{0})
	g, err := n.Goodput(100*units.Millisecond, 300*units.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	mean, peak, err := n.Queue(0, 400*units.Millisecond, 100*units.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("goodput %.1f Mbps of %.1f; cwnd %.2f pkts; queue mean %v peak %v; T(1G) %v",
		g[0]/1e6, n.Capacity()/1e6, algs[0].Cwnd(), mean, peak, target(1e9))
	if g[0] < 0.95*n.Capacity() {
		t.Errorf("lone flow got %.1f Mbps of %.1f; want ≥ 95%%", g[0]/1e6, n.Capacity()/1e6)
	}
	// The standing queue sits near the flow's target T(rate) (§2.3): the flow stops
	// growing once MPD exceeds it. Allow the MPD quantum and a packet time around it.
	if lo, hi := target(1e9)*3/4, target(1e9)*5/4; mean < lo || mean > hi {
		t.Errorf("mean queue %v, want within 25%% of T(1G) = %v", mean, target(1e9))
	}
}

func log10(x float64) float64 { return math.Log10(x) }

func TestFourFlowsShareFairly(t *testing.T) {
	n, algs := newNet(t, []units.Time{0, 5 * units.Millisecond, 10 * units.Millisecond, 15 * units.Millisecond})
	g, err := n.Goodput(200*units.Millisecond, 400*units.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	mean, _, err := n.Queue(0, 450*units.Millisecond, 100*units.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	jain, util := dumbbell.Jain(g), dumbbell.Sum(g)/n.Capacity()
	t.Logf("goodputs %.1f %.1f %.1f %.1f Mbps, cwnd %.2f; Jain %.4f, utilisation %.3f; queue %v, T(250M) %v",
		g[0]/1e6, g[1]/1e6, g[2]/1e6, g[3]/1e6, algs[0].Cwnd(), jain, util, mean, target(250e6))
	if jain < 0.95 {
		t.Errorf("Jain index %.4f over 4 flows, want ≥ 0.95", jain)
	}
	if util < 0.95 {
		t.Errorf("utilisation %.3f, want ≥ 0.95", util)
	}
	// Every flow runs at the fair share, so the shared queue settles at T(C/4) (§1 item 2).
	if lo, hi := target(250e6)*3/4, target(250e6)*5/4; mean < lo || mean > hi {
		t.Errorf("mean queue %v, want within 25%% of T(250 Mbps) = %v", mean, target(250e6))
	}
}

// A second flow joins a lone one at 100 ms. Convergence is when both flows' goodput,
// over a sliding 5 ms window (≈ 5 RTTs), enters and stays within 10% of the fair share.
func TestConvergenceAfterJoin(t *testing.T) {
	const join = 100 * units.Millisecond
	n, _ := newNet(t, []units.Time{0, join})
	if err := n.Run(join); err != nil {
		t.Fatal(err)
	}
	conv, err := n.Converged(join+200*units.Millisecond, units.Millisecond, 5*units.Millisecond, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("converged %v after the join (base RTT %v)", conv, n.Env().BaseRTT)
	// The update shrinks ln(x/r) by 1−m = 0.75 per RTT (§2.4): from the joiner's line-rate
	// start to within 10% takes some 10-20 RTTs of ≈ 1 ms (base RTT plus standing queue),
	// plus the 5 ms averaging window.
	if conv > 40*units.Millisecond {
		t.Errorf("converged %v after the join, want ≤ 40ms (≈ 40 RTTs)", conv)
	}
}

// Without any INT switch (no MPD stamped) Poseidon falls back to the brownfield signal
// (spec §5): the end-to-end queuing, rest = e2e − base_rtt. It still fills the link and
// keeps the queue near T(rate).
func TestNoINTFallsBackToDelay(t *testing.T) {
	n, _ := newNetMPD(t, []units.Time{0, 5 * units.Millisecond}, 0)
	g, err := n.Goodput(200*units.Millisecond, 400*units.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	mean, _, err := n.Queue(0, 450*units.Millisecond, 100*units.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	jain, util := dumbbell.Jain(g), dumbbell.Sum(g)/n.Capacity()
	t.Logf("goodputs %.1f %.1f Mbps; Jain %.4f, utilisation %.3f; queue %v, T(500M) %v", g[0]/1e6, g[1]/1e6, jain, util, mean, target(500e6))
	if util < 0.95 || jain < 0.95 {
		t.Errorf("utilisation %.3f and Jain %.4f without INT, want both ≥ 0.95", util, jain)
	}
	if lo, hi := target(500e6)*3/4, target(500e6)*5/4; mean < lo || mean > hi {
		t.Errorf("mean queue %v, want within 25%% of T(500 Mbps) = %v", mean, target(500e6))
	}
}

// Reverse-path congestion (spec §1 item 5, Fig. 15): a window-limited flow fills the
// port toward the victim's sender, so the victim's ACKs queue for milliseconds. Poseidon
// ignores the reverse path (the forward MPD is its signal) and keeps the victim at the
// forward bottleneck's rate. The flood stays below the buffer: a full buffer also drops
// ACKs (the switch frees a frame's buffer only once it is sent), and the bursts that
// cumulative ACKs then release build a forward queue, which is another test.
func TestReversePathCongestion(t *testing.T) {
	net := hosttest.New(hosttest.Config{Delay: 100 * units.Microsecond, MPDUnit: units.Time(256).Scale(tau)})
	_, victim, err := net.AddHost(10*units.Gbps, hosttest.Port{Rate: units.Gbps, Buffer: 500 * units.Kilobyte}, hostd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rx, _, err := net.AddHost(10*units.Gbps, hosttest.Port{Rate: units.Gbps, Buffer: 4 * units.Megabyte}, hostd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, flood, err := net.AddHost(10*units.Gbps, hosttest.Port{Rate: 10 * units.Gbps}, hostd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := victim.FlowEnv(0)
	env.BaseRTT, env.PathHops = 413*units.Microsecond, 1
	p := poseidon.DefaultParams()
	if err := cc.ScaleParams(p, tau); err != nil {
		t.Fatal(err)
	}
	p.MaxRate = units.Gbps
	alg, err := poseidon.New(env, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := victim.AddFlow(hostd.FlowSpec{ID: 1, Dst: hosttest.Addr(rx), Alg: alg, BaseRTT: env.BaseRTT}); err != nil {
		t.Fatal(err)
	}
	// A window-limited flood into the victim's 1 Gb/s port keeps about 400 KB (3.2 ms)
	// standing in its 500 KB buffer without overflowing it.
	if err := flood.AddFlow(hostd.FlowSpec{ID: 2, Dst: hosttest.Addr(0), Start: 10 * units.Millisecond,
		Alg: &hosttest.Fixed{W: 450 * units.Kilobyte}}); err != nil {
		t.Fatal(err)
	}
	if err := net.Run(50 * units.Millisecond); err != nil {
		t.Fatal(err)
	}
	a := victim.FlowStats()[0]
	if err := net.Run(150 * units.Millisecond); err != nil {
		t.Fatal(err)
	}
	b := victim.FlowStats()[0]
	g := float64(b.BytesAcked-a.BytesAcked) * 8 / 0.1
	capacity := 1e9 * float64(env.MSS) / float64(env.PacketSize)
	t.Logf("victim %.1f Mbps of %.1f; srtt %v (base %v), cwnd %.1f pkts; forward MPD %v", g/1e6, capacity/1e6,
		b.SRTT, env.BaseRTT, alg.Cwnd(), b.MPD)
	if b.SRTT < 2*env.BaseRTT {
		t.Fatalf("srtt %v: the reverse path is not congested, the test proves nothing", b.SRTT)
	}
	if d := net.Overflow(); d != 0 {
		t.Fatalf("%d frames dropped: the test is about reverse-path delay, not lost ACKs", d)
	}
	if g < 0.9*capacity {
		t.Errorf("victim got %.1f Mbps of %.1f under reverse-path congestion; want ≥ 90%%", g/1e6, capacity/1e6)
	}
}
