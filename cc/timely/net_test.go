package timely_test

import (
	"testing"

	"reef/cc"
	"reef/cc/internal/dumbbell"
	"reef/cc/timely"
	"reef/units"
)

// Behaviour on a dumbbell (cc/internal/dumbbell): 2 Gbps NICs, a 1 Gbps bottleneck with
// 1500 B frames and 100 µs links (base RTT ≈ 0.41 ms). The paper's 10 Gbps parameters
// are scaled by k = 10 (spec timely.md §6.2: Tlow 500 µs, Thigh 5 ms, minRTT 200 µs,
// δ 1 Mbps), thresholds above the base RTT (§6.3).
//
// TIMELY starts at line rate and has no slow start. With NICs much faster than the
// bottleneck the first RTTs build a queue far above Thigh, the rate collapses to MinRate
// and climbs back by δ per completion for hundreds of ms ([Z] §4.2 reports the same for
// 64 KB bursts). The lone flow therefore has a 2 Gbps NIC; the shared tests use 1 Gbps
// NICs, as in the paper's incast (NICs at link rate, the bottleneck oversubscribed by
// the number of senders).
const tau = 10

func newNet(t *testing.T, def func() *timely.Params, nic units.Rate, starts []units.Time) *dumbbell.Net {
	t.Helper()
	n, err := dumbbell.New(dumbbell.Config{Starts: starts, NIC: nic, Bottleneck: units.Gbps,
		Delay: 100 * units.Microsecond, Buffer: 4 * units.Megabyte},
		func(_ int, env cc.Env) (cc.Algorithm, error) {
			p := def()
			if err := cc.ScaleParams(p, tau); err != nil {
				return nil, err
			}
			return timely.New(env, p)
		})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var variants = []struct {
	name string
	def  func() *timely.Params
}{{"timely", timely.DefaultParams}, {"timely-patched", timely.DefaultPatchedParams}}

func TestLoneFlowFillsBottleneck(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			n := newNet(t, v.def, 2*units.Gbps, []units.Time{0})
			g, err := n.Goodput(500*units.Millisecond, 1000*units.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("goodput %.1f Mbps of %.1f; rate %v", g[0]/1e6, n.Capacity()/1e6, n.Alg(0).Rate())
			if g[0] < 0.95*n.Capacity() {
				t.Errorf("lone flow got %.1f Mbps of %.1f; want ≥ 95%%", g[0]/1e6, n.Capacity()/1e6)
			}
		})
	}
}

// Patched TIMELY has a unique fixed point (spec §7.4): equal rates C/N and a queue
// q* = N·δ·q'/(β·C) + q' with q' = C·Tlow, i.e. a queuing delay of Tlow·(1 + N·δ/(β·C)).
func TestPatchedFourFlowsShareFairly(t *testing.T) {
	n := newNet(t, timely.DefaultPatchedParams, units.Gbps, []units.Time{0, 5 * units.Millisecond, 10 * units.Millisecond, 15 * units.Millisecond})
	g, err := n.Goodput(300*units.Millisecond, 600*units.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	mean, peak, err := n.Queue(0, 650*units.Millisecond, 500*units.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	jain, util := dumbbell.Jain(g), dumbbell.Sum(g)/n.Capacity()
	want := units.Time(float64(500*units.Microsecond) * (1 + 4*1e6/(0.008*1e9)))
	t.Logf("goodputs %.1f %.1f %.1f %.1f Mbps; Jain %.4f, utilisation %.3f; queue mean %v peak %v, q* %v",
		g[0]/1e6, g[1]/1e6, g[2]/1e6, g[3]/1e6, jain, util, mean, peak, want)
	if jain < 0.95 {
		t.Errorf("Jain index %.4f over 4 flows, want ≥ 0.95", jain)
	}
	if util < 0.95 {
		t.Errorf("utilisation %.3f, want ≥ 0.95", util)
	}
	if mean < want*3/4 || mean > want*5/4 {
		t.Errorf("mean queuing delay %v, want within 25%% of q* = %v", mean, want)
	}
}

// Original TIMELY has no fixed point ([Z] §4.2, spec §7.2): rates cycle and the split
// between flows is arbitrary, so no fairness bound is asserted, only that the link is
// used and the queue stays bounded by the Thigh guard.
func TestOriginalFourFlows(t *testing.T) {
	n := newNet(t, timely.DefaultParams, units.Gbps, []units.Time{0, 5 * units.Millisecond, 10 * units.Millisecond, 15 * units.Millisecond})
	g, err := n.Goodput(1500*units.Millisecond, 2500*units.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	mean, peak, err := n.Queue(0, 2600*units.Millisecond, 500*units.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	jain, util := dumbbell.Jain(g), dumbbell.Sum(g)/n.Capacity()
	t.Logf("goodputs %.1f %.1f %.1f %.1f Mbps; Jain %.4f, utilisation %.3f; queue mean %v peak %v",
		g[0]/1e6, g[1]/1e6, g[2]/1e6, g[3]/1e6, jain, util, mean, peak)
	if util < 0.8 {
		t.Errorf("utilisation %.3f, want ≥ 0.8", util)
	}
	if peak > 5*units.Millisecond {
		t.Errorf("peak queuing delay %v, want below Thigh (5ms)", peak)
	}
}

// A second Patched TIMELY flow joins a lone one; convergence is when both flows'
// goodput over a sliding 10 ms window enters and stays within 10% of the fair share.
func TestPatchedConvergenceAfterJoin(t *testing.T) {
	const join = 500 * units.Millisecond
	n := newNet(t, timely.DefaultPatchedParams, units.Gbps, []units.Time{0, join})
	if err := n.Run(join); err != nil {
		t.Fatal(err)
	}
	conv, err := n.Converged(join+time(1000), units.Millisecond, 10*units.Millisecond, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("converged %v after the join", conv)
	// [Z] §4.3: "always exponentially converges"; with β = 0.008 and δ = 1 Mbps per
	// completion the rate gap closes by about β·w·error per completion.
	if conv > 500*units.Millisecond {
		t.Errorf("converged %v after the join, want ≤ 500ms", conv)
	}
}

func time(ms int) units.Time { return units.Time(ms) * units.Millisecond }
