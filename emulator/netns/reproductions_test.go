package netns

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	_ "reef/cc/all"
	"reef/emulator/runner"
)

// TestReproductionsOnNetns runs on real namespaces, with their netns time scale, the
// reproductions that hold there (issue 7): the four Poseidon ones, OSCAR's and MSwift's. Every
// run must complete and report its fidelity. An expectation of a run whose fidelity
// verdict is ok must hold, and a check comparing runs must hold when all its runs were
// ok; where the emulator could not keep up on this machine, the run says so in its
// summary and the test logs the verdicts instead of asserting them. Not here, and why
// (experiments/README.md): timely-incast (41 hosts on 2 cores: degraded), websearch-fct
// (passes, but degraded and 2 minutes long).
func TestReproductionsOnNetns(t *testing.T) {
	needRoot(t)
	for _, name := range []string{"poseidon-multihop", "poseidon-reverse-path", "poseidon-convergence", "poseidon-brownfield", "oscar-convergence", "mswift-spraying"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("..", "..", "experiments", name+".yaml")
			o, err := runner.Run(context.Background(), file, runner.Options{Backend: BackendName, OutDir: t.TempDir()})
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
				t.Logf("run %s: fidelity %s (skew %.2f× what %s may have, %d stale timers; lateness p50 %.0fµs p99 %.0fµs)",
					s.Run, v, s.Fidelity.SkewRatio, s.Fidelity.WorstPort, s.Fidelity.StaleTimers, s.Fidelity.LatenessP50US, s.Fidelity.LatenessP99US)
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
