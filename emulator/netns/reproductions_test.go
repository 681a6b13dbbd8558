package netns

import (
	"context"
	"maps"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	_ "reef/cc/all"
	"reef/emulator/analysis"
	"reef/emulator/comparison"
	"reef/emulator/runner"
	_ "reef/emulator/sim/simbackend"
)

// Sim against netns, per long-lived flow (issue 7): in a run the experiment settles,
// every long-lived flow's goodput must agree within maxEmulationError. A run is settled
// when simSeeds seeds on the sim give each of its long-lived flows within maxSeedSpread;
// where they do not (HPCC's split before it converges, TIMELY's flows sharing an incast),
// the split is the run's chance, not the emulator's, and a flow that agreed on a few
// seeds among others that did not is a coincidence. HPCC is compared and logged, not
// asserted: how its flows split depends on the phase of a join at the nanosecond, which
// seeds do not move (they only break ties). On the sim, a 1% change of the link delay
// moves HPCC's convergence after poseidon-convergence's first join from 0.1 ms to 2 ms
// or never (its additive increase evens out a split over 2-5 ms), so HPCC's per-flow
// goodputs differ from netns by up to 26% there while group totals agree within 4%.
const (
	maxEmulationError = 0.10
	maxSeedSpread     = 0.03
	simSeeds          = 3
	// netnsRetries is how many more times a netns run whose fidelity is degraded runs
	// (reef run --retry-degraded): these VMs share their hosts, whose other work comes
	// and goes.
	netnsRetries = 1
)

// TestReproductionsOnNetns runs every reproduction (issue 7) on real namespaces, with
// its netns time scale. Every run must complete and report its fidelity. An expectation
// of a run whose fidelity verdict is ok must hold, and a check comparing runs must hold
// when all its runs were ok; where the emulator could not keep up on this machine, the
// run says so in its summary and the test logs the verdicts instead of asserting them.
func TestReproductionsOnNetns(t *testing.T) {
	needRoot(t)
	for _, name := range []string{"poseidon-multihop", "poseidon-reverse-path", "poseidon-convergence", "poseidon-brownfield",
		"oscar-convergence", "mswift-spraying", "timely-incast", "websearch-fct"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("..", "..", "experiments", name+".yaml")
			o, err := runner.Run(context.Background(), file, runner.Options{Backend: BackendName, OutDir: t.TempDir(), NoFigures: true,
				RetryDegraded: netnsRetries})
			if err != nil {
				t.Fatal(err)
			}
			ok := map[string]bool{} // run vars (as a map key) → fidelity ok
			allOK := true
			for _, s := range o.Summaries {
				v := s.Fidelity.Verdict
				if v != "ok" && v != "degraded" {
					t.Errorf("run %s: fidelity verdict %q, want ok or degraded", s.Run, v)
				}
				ok[key(s.Vars)] = v == "ok"
				allOK = allOK && v == "ok"
				t.Logf("run %s: fidelity %s after %d attempt(s) (skew %.2f× what %s may have, %d stale timers; lateness p50 %.0fµs p99 %.0fµs, %.2f× what %s may have)",
					s.Run, v, max(s.Attempts, 1), s.Fidelity.SkewRatio, s.Fidelity.WorstPort, s.Fidelity.StaleTimers,
					s.Fidelity.LatenessP50US, s.Fidelity.LatenessP99US, s.Fidelity.LateRatio, s.Fidelity.LatePort)
			}
			if len(o.Summaries) == 0 {
				t.Fatal("no run completed")
			}
			asserted := 0
			for _, r := range o.Results {
				runOK, perRun := ok[key(r.Vars)]
				if (perRun && runOK) || (!perRun && allOK) {
					asserted++
					if !r.Pass {
						t.Errorf("%s %v: %s, bound %s (%s)", r.Name, r.Vars, r.ValueText, r.BoundText, r.Claim)
					}
					continue
				}
				t.Logf("not asserted (emulator degraded): %s %v: %s, bound %s, pass=%v", r.Name, r.Vars, r.ValueText, r.BoundText, r.Pass)
			}
			t.Logf("%d of %d expectations asserted", asserted, len(o.Results))
			compareWithSim(t, file, o.Summaries)
		})
	}
}

// key turns a run's sweep variables into a map key.
func key(vars map[string]string) string {
	k := ""
	for _, n := range slices.Sorted(maps.Keys(vars)) {
		k += n + "=" + vars[n] + ";"
	}
	return k
}

// compareWithSim runs the experiment on the sim with its own seed and simSeeds-1 more,
// and checks every long-lived flow of each fidelity-ok, settled netns run against the
// first (see maxSeedSpread).
func compareWithSim(t *testing.T, file string, netns []*analysis.Summary) {
	t.Helper()
	longLived := func(f analysis.Flow) bool { return f.SizeBytes == 0 }
	if !slices.ContainsFunc(netns, func(s *analysis.Summary) bool { return slices.ContainsFunc(s.Flows, longLived) }) {
		t.Log("sim vs netns: no long-lived flows to compare")
		return
	}
	sim := func(seed uint64) map[string]*analysis.Summary {
		// The netns runs are over: the sim's sweep points may take every CPU.
		o, err := runner.Run(context.Background(), file, runner.Options{Backend: "sim", OutDir: t.TempDir(), Seed: seed, NoFigures: true,
			Jobs: runtime.NumCPU()})
		if err != nil {
			t.Fatalf("sim: %v", err)
		}
		m := map[string]*analysis.Summary{}
		for _, s := range o.Summaries {
			m[s.Run] = s
		}
		return m
	}
	ref := sim(0)
	var seed uint64
	for _, s := range ref {
		seed = s.Seed
	}
	spread := map[string]float64{} // run → largest long-lived flow difference from ref over the seeds
	for k := uint64(1); k < simSeeds; k++ {
		for run, s := range sim(seed + k) {
			if r := ref[run]; r != nil {
				for _, f := range comparison.Compare(r, s).Flows {
					if !f.LongLived {
						continue
					}
					d := math.Abs(f.Goodput.Rel)
					if math.IsNaN(d) {
						d = math.Inf(1) // a flow one seed did not measure: not settled
					}
					spread[run] = max(spread[run], d)
				}
			}
		}
	}
	compared, unsettled := 0, 0
	worst, worstFlow := 0.0, "none"
	for _, n := range netns {
		r := ref[n.Run]
		if r == nil || n.Fidelity.Verdict != "ok" || !slices.ContainsFunc(n.Flows, longLived) {
			continue
		}
		if sp := spread[n.Run]; sp > maxSeedSpread {
			unsettled++
			t.Logf("%s: not compared, the sim's seeds give its flows up to %.1f%% apart", n.Run, 100*sp)
			continue
		}
		hpcc := n.Vars["cc"] == "hpcc"
		for _, f := range comparison.Compare(r, n).Flows {
			d := math.Abs(f.Goodput.Rel)
			switch {
			case !f.LongLived || math.IsNaN(d):
			case hpcc:
				t.Logf("%s %s: HPCC, not asserted: netns %+.1f%% off the sim", n.Run, f.Name, 100*f.Goodput.Rel)
			default:
				compared++
				if d >= worst {
					worst, worstFlow = d, n.Run+" "+f.Name
				}
				if d > maxEmulationError {
					t.Errorf("%s %s: netns goodput %.4g bit/s (paper units) is %+.1f%% off the sim's %.4g, want within %.0f%%",
						n.Run, f.Name, f.Goodput.B, 100*f.Goodput.Rel, f.Goodput.A, 100*maxEmulationError)
				}
			}
		}
	}
	t.Logf("sim vs netns: %d long-lived flows compared, the farthest %.1f%% off (%s); %d runs left out as unsettled on the sim",
		compared, 100*worst, worstFlow, unsettled)
}
