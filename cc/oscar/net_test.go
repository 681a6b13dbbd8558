package oscar_test

import (
	"testing"

	"reef/cc"
	"reef/cc/internal/dumbbell"
	"reef/cc/oscar"
	"reef/units"
)

// Behaviour on a dumbbell (cc/internal/dumbbell): a 1 Gbps bottleneck with 1500 B
// frames and 100 µs links (base RTT ≈ 0.41 ms, BDP ≈ 35 packets). OSCAR's targets are
// ratios of the base RTT; its one absolute time, ε = 1 µs at 12 µs, is scaled by the
// RTT ratio (spec oscar.md §6.2).
//
// The switch adds 0-2 µs of random delay per frame. Without it the noise-free
// simulation locks OSCAR into unfair fixed points: u is re-derived each batch from the
// in-flight the window allowed, the window is whole packets, and U_AI (0.05 packets of
// window here) cannot move a flow to the next packet, so any split whose delay sits just
// above D_target repeats itself exactly. Real fabrics jitter far more than 2 µs.
const tau = 413.0 / 12

func newNet(t *testing.T, nic units.Rate, starts []units.Time) (*dumbbell.Net, []*oscar.Oscar) {
	t.Helper()
	return newNetSeed(t, nic, starts, 1)
}

// newNetSeed is newNet with the jitter drawn from seed.
func newNetSeed(t *testing.T, nic units.Rate, starts []units.Time, seed uint64) (*dumbbell.Net, []*oscar.Oscar) {
	t.Helper()
	var algs []*oscar.Oscar
	n, err := dumbbell.New(dumbbell.Config{Starts: starts, NIC: nic, Bottleneck: units.Gbps,
		Delay: 100 * units.Microsecond, Buffer: 4 * units.Megabyte, Jitter: 2 * units.Microsecond, Seed: seed},
		func(_ int, env cc.Env) (cc.Algorithm, error) {
			p := oscar.DefaultParams()
			if err := cc.ScaleParams(p, tau); err != nil {
				return nil, err
			}
			a, err := oscar.New(env, p)
			algs = append(algs, a)
			return a, err
		})
	if err != nil {
		t.Fatal(err)
	}
	return n, algs
}

func TestLoneFlowFillsBottleneck(t *testing.T) {
	for _, nic := range []units.Rate{units.Gbps, 2 * units.Gbps} {
		t.Run(nic.String(), func(t *testing.T) {
			n, algs := newNet(t, nic, []units.Time{0})
			g, err := n.Goodput(50*units.Millisecond, 150*units.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			mean, peak, err := n.Queue(0, 200*units.Millisecond, 100*units.Microsecond)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("goodput %.1f Mbps of %.1f; u %.3f; queue mean %v peak %v", g[0]/1e6, n.Capacity()/1e6, algs[0].Ratio(), mean, peak)
			if g[0] < 0.95*n.Capacity() {
				t.Errorf("lone flow got %.1f Mbps of %.1f; want ≥ 95%%", g[0]/1e6, n.Capacity()/1e6)
			}
			// With a NIC faster than the bottleneck the flow must build the queue OSCAR
			// aims for: D_target − RTT_base = 0.5·RTT_base (spec §2.2).
			if want := n.Env().BaseRTT / 2; nic > units.Gbps && (mean < want*3/4 || mean > want*5/4) {
				t.Errorf("mean queue %v, want within 25%% of 0.5·RTT_base = %v", mean, want)
			}
		})
	}
}

func TestFourFlowsShareFairly(t *testing.T) {
	n, algs := newNet(t, units.Gbps, []units.Time{0, 5 * units.Millisecond, 10 * units.Millisecond, 15 * units.Millisecond})
	g, err := n.Goodput(100*units.Millisecond, 300*units.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	mean, peak, err := n.Queue(0, 350*units.Millisecond, 100*units.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	jain, util := dumbbell.Jain(g), dumbbell.Sum(g)/n.Capacity()
	want := n.Env().BaseRTT / 2
	t.Logf("goodputs %.1f %.1f %.1f %.1f Mbps, u %.3f; Jain %.4f, utilisation %.3f; queue mean %v peak %v, target %v",
		g[0]/1e6, g[1]/1e6, g[2]/1e6, g[3]/1e6, algs[0].Ratio(), jain, util, mean, peak, want)
	if jain < 0.95 {
		t.Errorf("Jain index %.4f over 4 flows, want ≥ 0.95", jain)
	}
	if util < 0.95 {
		t.Errorf("utilisation %.3f, want ≥ 0.95", util)
	}
	// MIMD plus U_AI sits "slightly above target" (spec §2.8).
	if mean < want*3/4 || mean > want*5/4 {
		t.Errorf("mean queue %v, want within 25%% of Q_target/μ = 0.5·RTT_base = %v", mean, want)
	}
}

// A second flow joins a lone one; convergence is when both flows' goodput over a
// sliding 5 ms window (≈ 8 RTTs) enters and stays within 15% of the fair share.
//
// Whether a run converges fast depends on the jitter's random draws: with some the
// noise-free fixed points described above hold the split for over 100 ms (seeds 1, 2,
// 8 and 9 of 1-12 here; seeds 6 and 10 with hosttest's former switch model, whose
// draws came in another order). So the test runs eight seeds and asks most of them to
// converge within 20 ms; a regression that slows convergence fails all of them.
func TestConvergenceAfterJoin(t *testing.T) {
	const join = 50 * units.Millisecond
	const seeds = 8
	fast := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		n, _ := newNetSeed(t, units.Gbps, []units.Time{0, join}, seed)
		if err := n.Run(join); err != nil {
			t.Fatal(err)
		}
		conv, err := n.Converged(join+200*units.Millisecond, units.Millisecond, 5*units.Millisecond, 0.15)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: converged %v after the join (base RTT %v)", seed, conv, n.Env().BaseRTT)
		// OSCAR's MIMD reaches the total target in O(1) steps (§2.6); the split between
		// the flows then equalises through U_AI (§2.8), which is slower.
		if conv <= 20*units.Millisecond {
			fast++
		}
	}
	if fast <= seeds/2 {
		t.Errorf("%d of %d seeds converged within 20ms (≈ 30 RTTs) after the join; want most", fast, seeds)
	}
}
