package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	_ "reef/cc/all"
)

// TestTimelyIncastOnSim runs experiments/timely-incast.yaml (TIMELY Table 1) on the sim
// backend. It takes minutes (six runs of 40 flows), so it runs only with
// REEF_EXPERIMENTS=1. Every expectation must hold: the paper's claims at α = 0.02 and, at
// the spec's default α = 0.875, the fairness collapse the spec predicts (alpha-sensitivity).
func TestTimelyIncastOnSim(t *testing.T) {
	if os.Getenv("REEF_EXPERIMENTS") == "" {
		t.Skip("set REEF_EXPERIMENTS=1 to run the experiment reproductions (minutes)")
	}
	o, err := Run(context.Background(), filepath.Join("..", "..", "experiments", "timely-incast.yaml"),
		Options{Backend: "sim", OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Summaries) != 6 {
		t.Fatalf("%d runs, want 2 α × 3 cc", len(o.Summaries))
	}
	sensitivity := false
	for _, r := range o.Results {
		t.Logf("%-26s %v: %s (bound %s) pass=%v", r.Name, r.Vars, r.ValueText, r.BoundText, r.Pass)
		sensitivity = sensitivity || r.Name == "alpha-sensitivity"
		if !r.Pass {
			t.Errorf("%s %v failed: %s, bound %s (%s)", r.Name, r.Vars, r.ValueText, r.BoundText, r.Claim)
		}
	}
	if !sensitivity {
		t.Error("the α = 0.875 TIMELY run was not checked (alpha-sensitivity)")
	}
}
