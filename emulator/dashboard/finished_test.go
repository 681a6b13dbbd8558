package dashboard

import (
	"path/filepath"
	"testing"

	"reef/emulator/results"
	"reef/units"
)

// finishedRunDir writes a finished dumbbell run to a results directory as reef run
// leaves it (results.json and its CSV series, plan.json, summary.json with the measurement window) and
// opens it: one DCTCP flow h1 → h9 over s1–s2 from 3 ms to the end at 40 ms, measured
// over [20 ms, 40 ms]. Like a netns run's switch daemons, which sample until they are
// stopped, the ports go on sampling 10 ms past the end with nothing left to send.
func finishedRunDir(t *testing.T) (*RunDir, int) {
	t.Helper()
	const end = 40 * units.Millisecond
	p, s := dumbbellSim(t, end, 3*units.Millisecond)
	s.RunUntil(end)
	run := s.Results()
	for i := range run.Ports {
		pt := &run.Ports[i]
		last := pt.Samples[len(pt.Samples)-1]
		for k := 1; k <= 100; k++ {
			idle := last
			idle.T, idle.QueueBytes, idle.QueueDelay = last.T+units.Time(k)*100*units.Microsecond, 0, 0
			pt.Samples = append(pt.Samples, idle)
		}
	}
	dir := t.TempDir()
	if err := results.WriteDir(dir, run); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "plan.json"), p)
	writeFile(t, filepath.Join(dir, "summary.json"), map[string]any{"run": "dumbbell/finished", "window_us": [2]float64{20000, 40000}})
	rd, err := OpenRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rd, linkBetween(t, p, "s1", "s2")
}

// A finished run is shown over its measurement window, whatever its last samples say,
// and at any time of the run on request.
func TestFinishedRunViews(t *testing.T) {
	rd, mid := finishedRunDir(t)
	snap := rd.Snapshot()
	if snap.Live || snap.Window != [2]units.Time{20 * units.Millisecond, 40 * units.Millisecond} {
		t.Fatalf("snapshot live %v, window %v; want finished with the summary's window", snap.Live, snap.Window)
	}
	busy := func(st *State) bool {
		return st.Links[mid].Util > 0.9 && st.Flows[0].Goodput > float64(900*units.Mbps)
	}
	for _, c := range []struct {
		name     string
		v        view
		view     string
		at       units.Time
		wantBusy bool
	}{
		// the ports' last samples are idle: the old view drew the bottleneck idle
		{"latest", latest, "latest", 40 * units.Millisecond, false},
		{"window", defaultView(snap), "window", 40 * units.Millisecond, true},
		{"before the flow", view{to: 2 * units.Millisecond}, "at", 2 * units.Millisecond, false},
		{"mid-run", view{to: 25 * units.Millisecond}, "at", 25 * units.Millisecond, true},
	} {
		st := stateIn(snap, 1, c.v)
		if st.View != c.view || st.At != int64(c.at) {
			t.Errorf("%s: view %q at %v, want %q at %v", c.name, st.View, units.Time(st.At), c.view, c.at)
		}
		if c.name == "latest" {
			// only the links: the flow's own samples end with the run
			if st.Links[mid].Util > 0.01 {
				t.Errorf("latest: s1–s2 utilisation %.2f, want the idle last samples' 0", st.Links[mid].Util)
			}
			continue
		}
		if got := busy(st); got != c.wantBusy {
			t.Errorf("%s: s1–s2 utilisation %.3f, flow goodput %.3g; busy %v, want %v", c.name, st.Links[mid].Util, st.Flows[0].Goodput, got, c.wantBusy)
		}
	}
	if st := stateOf(snap, 1); st.View != "window" || st.Step != int64(100*units.Microsecond) || st.Window != [2]int64{20e6, 40e6} {
		t.Errorf("default state: view %q, step %d, window %v; want the window, 100µs, [20ms, 40ms]", st.View, st.Step, st.Window)
	}
	// queues in the window are averages: positive with DCTCP's standing queue, and no
	// larger than the largest sample
	st := stateOf(snap, 1)
	var maxQ int64
	for _, i := range st.Links[mid].Ports {
		for _, x := range snap.Run.Ports[i].Samples {
			maxQ = max(maxQ, int64(x.QueueBytes))
		}
	}
	if q := st.Links[mid].Queue; q <= 0 || q > maxQ {
		t.Errorf("window queue %d, want in (0, %d]", q, maxQ)
	}
}
