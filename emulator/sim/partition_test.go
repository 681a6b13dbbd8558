package sim

import (
	"reflect"
	"strings"
	"testing"

	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/fabric"
	"reef/internal/parallel"
	"reef/units"
)

// partitionedLab runs samplingLab's run (drops, marks, ties, samples every 20 µs) with
// the given options, after edit (if not nil) has changed the plan and scenario.
func partitionedLab(t testing.TB, d units.Time, opts Options, edit func(*plan.Plan, *scenario.Scenario)) (*results.Run, *Sim) {
	s := samplingSim(t, d, 20*units.Microsecond, opts, edit)
	s.RunUntil(d)
	return s.Results(), s
}

// workers is an executor for Options.Each on w goroutines.
func workers(w int) fabric.Each {
	return func(n int, fn func(int)) { parallel.Each(n, w, fn) }
}

// A split lab's results depend on its partitions, never on how many goroutines run
// them: 1, 2 and 3 workers give the same run, sample for sample.
func TestPartitionedRunIndependentOfWorkers(t *testing.T) {
	const d = 5 * units.Millisecond
	want, s := partitionedLab(t, d, Options{Partitions: 4}, nil)
	if s.Partitions() != 4 {
		t.Fatalf("%d partitions; want 4", s.Partitions())
	}
	for _, w := range []int{2, 3} {
		got, _ := partitionedLab(t, d, Options{Partitions: 4, Each: workers(w)}, nil)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d workers: the run differs from one worker's", w)
		}
	}
}

// A split lab runs exactly the run of the whole one: a node's events never depend on
// the order of simultaneous events elsewhere, so the windows change nothing, with the
// timeline, snapshots and samples between them. The lab drops, marks, ties and changes
// a link's rate mid-run; a flow stops early; it has a warm-up.
func TestPartitionedRunMatchesWhole(t *testing.T) {
	const d = 10 * units.Millisecond
	edit := func(p *plan.Plan, sc *scenario.Scenario) {
		sc.Warmup = 1 * units.Millisecond
		sc.Flows[2].Stop = 4*units.Millisecond + 3
		for i, l := range p.Links {
			if !l.A.IsHost && !l.B.IsHost && strings.HasPrefix(l.B.Node, "core") {
				sc.Events = append(sc.Events, scenario.Event{At: 3 * units.Millisecond, Kind: scenario.EventRate, Link: i, Rate: 200 * units.Mbps})
				break
			}
		}
	}
	run := func(opts Options) (*results.Run, *Sim) { return partitionedLab(t, d, opts, edit) }
	whole, s := run(Options{Partitions: 1})
	if s.Partitions() != 1 {
		t.Fatalf("%d partitions; want 1", s.Partitions())
	}
	split, s := run(Options{Partitions: 4, Each: workers(2)})
	if s.Partitions() != 4 {
		t.Fatalf("%d partitions; want 4", s.Partitions())
	}
	var drops, marks int64
	for _, p := range whole.Ports {
		drops, marks = drops+p.Drops, marks+p.Marks
	}
	if drops == 0 || marks == 0 || len(whole.Flows[2].Edges) != 3 {
		t.Fatalf("the lab should drop, mark and stop a flow: %d drops, %d marks, %d edges of the stopped flow", drops, marks, len(whole.Flows[2].Edges))
	}
	if !reflect.DeepEqual(split, whole) {
		for i := range whole.Flows {
			if !reflect.DeepEqual(split.Flows[i], whole.Flows[i]) {
				a, b := split.Flows[i], whole.Flows[i]
				t.Errorf("flow %s differs: acked %d split, %d whole; samples equal %v, edges equal %v (%v, %v), egress equal %v",
					b.Name, a.Acked, b.Acked, reflect.DeepEqual(a.Samples, b.Samples), reflect.DeepEqual(a.Edges, b.Edges), a.Edges, b.Edges, reflect.DeepEqual(a.Egress, b.Egress))
			}
		}
		for i := range whole.Ports {
			if !reflect.DeepEqual(split.Ports[i], whole.Ports[i]) {
				t.Errorf("port %s:%d differs", whole.Ports[i].Switch, whole.Ports[i].Port)
			}
		}
		t.Fatal("the split run differs from the whole one")
	}
}
