package mswift_test

import (
	"testing"

	"reef/cc"
	"reef/cc/internal/dumbbell"
	"reef/cc/mswift"
	"reef/units"
)

// Behaviour on a dumbbell (cc/internal/dumbbell): 10 Gbps NICs, a 1 Gbps bottleneck with
// 1500 B frames and 100 µs links (base RTT ≈ 0.41 ms, BDP ≈ 35 packets). The paper's
// htsim parameters (100 Gbps, 4000 B) are scaled by the packet-time ratio τ = 37.5, so
// the end-to-end target base is 15.8 µs·τ = 0.59 ms.
const tau = 37.5

func newNet(t *testing.T, def func() *mswift.Params, starts []units.Time) (*dumbbell.Net, []*mswift.MSwift) {
	t.Helper()
	var algs []*mswift.MSwift
	n, err := dumbbell.New(dumbbell.Config{Starts: starts, NIC: 10 * units.Gbps, Bottleneck: units.Gbps,
		Delay: 100 * units.Microsecond, Buffer: 4 * units.Megabyte},
		func(_ int, env cc.Env) (cc.Algorithm, error) {
			p := def()
			if err := cc.ScaleParams(p, tau); err != nil {
				return nil, err
			}
			a, err := mswift.New(env, p)
			algs = append(algs, a)
			return a, err
		})
	if err != nil {
		t.Fatal(err)
	}
	return n, algs
}

var variants = []struct {
	name string
	def  func() *mswift.Params
}{{"mswift", mswift.DefaultParams}, {"lswift", mswift.DefaultLSwiftParams}}

func TestLoneFlowFillsBottleneck(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			n, algs := newNet(t, v.def, []units.Time{0})
			g, err := n.Goodput(100*units.Millisecond, 300*units.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			mean, peak, err := n.Queue(0, 350*units.Millisecond, 100*units.Microsecond)
			if err != nil {
				t.Fatal(err)
			}
			want := algs[0].Target() - n.Env().BaseRTT
			t.Logf("goodput %.1f Mbps of %.1f; cwnd %.2f; queue mean %v peak %v; target − base RTT %v",
				g[0]/1e6, n.Capacity()/1e6, algs[0].Cwnd(), mean, peak, want)
			if g[0] < 0.95*n.Capacity() {
				t.Errorf("lone flow got %.1f Mbps of %.1f; want ≥ 95%%", g[0]/1e6, n.Capacity()/1e6)
			}
			// Swift's target is end to end: the standing queue is target(cwnd) − base RTT.
			if mean < want*9/10 || mean > want*11/10 {
				t.Errorf("mean queue %v, want within 10%% of target − base RTT = %v", mean, want)
			}
		})
	}
}

func TestFourFlowsShareFairly(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			n, algs := newNet(t, v.def, []units.Time{0, 5 * units.Millisecond, 10 * units.Millisecond, 15 * units.Millisecond})
			g, err := n.Goodput(200*units.Millisecond, 400*units.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			mean, peak, err := n.Queue(0, 450*units.Millisecond, 100*units.Microsecond)
			if err != nil {
				t.Fatal(err)
			}
			jain, util := dumbbell.Jain(g), dumbbell.Sum(g)/n.Capacity()
			want := algs[0].Target() - n.Env().BaseRTT
			t.Logf("goodputs %.1f %.1f %.1f %.1f Mbps, cwnd %.2f; Jain %.4f, utilisation %.3f; queue mean %v peak %v; target − base %v",
				g[0]/1e6, g[1]/1e6, g[2]/1e6, g[3]/1e6, algs[0].Cwnd(), jain, util, mean, peak, want)
			if jain < 0.95 {
				t.Errorf("Jain index %.4f over 4 flows, want ≥ 0.95", jain)
			}
			if util < 0.95 {
				t.Errorf("utilisation %.3f, want ≥ 0.95", util)
			}
			// Flow scaling raises the target as the windows shrink (spec §3.3).
			if mean < want*9/10 || mean > want*11/10 {
				t.Errorf("mean queue %v, want within 10%% of target − base RTT = %v", mean, want)
			}
		})
	}
}

// A second flow joins a lone one; convergence is when both flows' goodput over a
// sliding 5 ms window (≈ 5 RTTs) enters and stays within 10% of the fair share.
func TestConvergenceAfterJoin(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			const join = 100 * units.Millisecond
			n, _ := newNet(t, v.def, []units.Time{0, join})
			if err := n.Run(join); err != nil {
				t.Fatal(err)
			}
			conv, err := n.Converged(join+300*units.Millisecond, units.Millisecond, 5*units.Millisecond, 0.1)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("converged %v after the join", conv)
			// AIMD: the gap closes by the MD factor once per RTT of overshoot, the AI adds
			// one packet per RTT to both (spec §3.2).
			if conv > 150*units.Millisecond {
				t.Errorf("converged %v after the join, want ≤ 150ms", conv)
			}
		})
	}
}
