package experiment

import (
	"path/filepath"
	"testing"

	_ "reef/cc/all"
)

// Every shipped experiment loads and compiles for the sim and the netns backend (its
// backend_time_scale), so a change in the format or a package never breaks them silently.
func TestShippedExperimentsCompile(t *testing.T) {
	files, err := filepath.Glob("../../experiments/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("found %d experiments, want the eight reproductions", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			x, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range []string{"sim", "netns"} {
				runs, err := x.CompileAll(CompileOptions{Backend: b})
				if err != nil {
					t.Fatalf("%s: %v", b, err)
				}
				for _, r := range runs {
					if len(r.Scenario.Flows) == 0 || len(r.Expectations) == 0 {
						t.Fatalf("%s %s: %d flows, %d expectations", b, r.Scenario.Name, len(r.Scenario.Flows), len(r.Expectations))
					}
					if r.Point.File.Paper.Claim == "" {
						t.Fatalf("%s: no paper claim", r.Scenario.Name)
					}
				}
			}
		})
	}
}
