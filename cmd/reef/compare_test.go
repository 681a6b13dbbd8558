package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"reef/emulator/analysis"
)

// writeSummary writes a summary.json with one long-lived flow and one busy port.
func writeSummary(t *testing.T, dir string, goodput, qdelay float64) string {
	t.Helper()
	s := analysis.Summary{Experiment: "x", Run: "x", Backend: "sim",
		Flows: []analysis.Flow{{Name: "f1", Group: "g", GoodputBps: goodput, RTTUS: &analysis.Pct{Count: 1, P50: 10, P99: 20}}},
		Queues: []analysis.Queue{{Name: "s1:p1", Utilisation: 0.9, QueueDelayUS: &analysis.Pct{Count: 1, Mean: qdelay, P50: qdelay, P99: qdelay},
			QueueBytes: &analysis.Pct{Count: 1, Mean: 100 * qdelay, P50: 100 * qdelay, P99: 100 * qdelay}}},
	}
	b, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, analysis.SummaryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCompareExitStatus(t *testing.T) {
	d := t.TempDir()
	a := writeSummary(t, filepath.Join(d, "a"), 100e6, 50)
	b := writeSummary(t, filepath.Join(d, "b"), 92e6, 56)
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"compare", a, b}, 0},
		{[]string{"compare", a, b, "--max-goodput-diff", "10%"}, 0},     // 8% off
		{[]string{"compare", a, b, "--max-goodput-diff", "0.05"}, 1},    // more than 5%
		{[]string{"compare", a, b, "--max-queue-delay-diff", "10%"}, 1}, // 12% off
		{[]string{"compare", a, b, "--max-queue-delay-diff", "15%", "--json"}, 0},
		{[]string{"compare", a, b, "--max-goodput-diff", "ten"}, 2},
		{[]string{"compare", a, filepath.Join(d, "missing")}, 2},
	}
	for _, tt := range tests {
		if got := run(context.Background(), tt.args); got != tt.want {
			t.Errorf("reef %v = exit %d, want %d", tt.args[3:], got, tt.want)
		}
	}
}

func TestParseFraction(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want float64
		ok   bool
	}{{"10%", 0.1, true}, {"0.1", 0.1, true}, {" 5 % ", 0, false}, {"5%", 0.05, true}, {"-1%", 0, false}, {"x", 0, false}, {"NaN", 0, false}} {
		got, err := parseFraction("f", tt.in)
		if (err == nil) != tt.ok || (tt.ok && math.Abs(got-tt.want) > 1e-12) {
			t.Errorf("parseFraction(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func FuzzParseFraction(f *testing.F) {
	f.Add("10%")
	f.Add("0.1")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseFraction("f", s)
		if err == nil && (v < 0 || math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("parseFraction(%q) = %v", s, v)
		}
	})
}
