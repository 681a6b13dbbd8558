package lab

import (
	"os"
	"path/filepath"
	"testing"

	"reef/emulator/report"
)

// summariesOf reads the summaries of the runs under a runner's results directory.
func summariesOf(t *testing.T, dir string) []*report.Summary {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []*report.Summary
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), report.SummaryFile)); !e.IsDir() || err != nil {
			continue
		}
		s, err := report.ReadSummary(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		t.Fatalf("no runs in %s", dir)
	}
	return out
}
