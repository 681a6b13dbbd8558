package runner

import (
	"path/filepath"
	"testing"
)

// TestTraceReplayOnSim replays the example trace of 1011 flows (experiments/examples)
// on sim: every flow of the trace runs, and the summary reports FCT slowdowns per size
// bucket for the finished ones, as for a generated workload.
func TestTraceReplayOnSim(t *testing.T) {
	path := filepath.Join("..", "..", "experiments", "examples", "trace-replay.yaml")
	o, err := Run(t.Context(), path, Options{Backend: "sim", OutDir: t.TempDir(), NoFigures: true, Only: []string{"cc=swift"}})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Pass || len(o.Summaries) != 1 {
		t.Fatalf("pass %v with %d summaries: %+v", o.Pass, len(o.Summaries), o.Failed())
	}
	s := o.Summaries[0]
	if len(s.Flows) < 1000 {
		t.Fatalf("%d flows replayed, want the trace's 1011", len(s.Flows))
	}
	finished := 0
	for _, f := range s.Flows {
		if f.Slowdown != nil {
			finished++
		}
	}
	inBuckets := 0
	for _, b := range s.FCTBuckets {
		if b.Slowdown == nil || b.Slowdown.Count == 0 || !(b.Slowdown.P50 >= 1) || b.Slowdown.P99 < b.Slowdown.P50 {
			t.Errorf("bucket %s: slowdown %+v, want p50 ≥ 1 and p99 ≥ p50", b.Name, b.Slowdown)
			continue
		}
		inBuckets += b.Slowdown.Count
		t.Logf("%-6s n=%4d slowdown p50 %.2f p99 %.2f", b.Name, b.Slowdown.Count, b.Slowdown.P50, b.Slowdown.P99)
	}
	if len(s.FCTBuckets) != 3 || inBuckets != finished || finished < 1000 {
		t.Errorf("%d buckets hold %d flows; want small, medium and large holding all %d finished flows (≥ 1000)", len(s.FCTBuckets), inBuckets, finished)
	}
}
