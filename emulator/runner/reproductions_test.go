package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	_ "reef/cc/all"
)

// TestReproductionsOnSim runs every reproduction in experiments/ on the sim backend and
// requires every expectation to hold: this is issue 7's "each reproduction passes on
// sim", checked on every CI run. timely-incast has its own test (TestTimelyIncastOnSim):
// its default-α half is the documented failing reproduction and it takes minutes.
func TestReproductionsOnSim(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "experiments", "*.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("found %d experiment files (%v), want the eight reproductions", len(files), err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if name == "timely-incast" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o, err := Run(context.Background(), f, Options{Backend: "sim", OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Results) == 0 {
				t.Fatal("no expectation was evaluated")
			}
			for _, r := range o.Results {
				if !r.Pass {
					t.Errorf("%s %v: %s, bound %s (%s)", r.Name, r.Vars, r.ValueText, r.BoundText, r.Claim)
				}
			}
			t.Logf("%d runs, %d expectations held", len(o.Summaries), len(o.Results))
		})
	}
}
