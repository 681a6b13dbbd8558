package dashboard

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"reef/emulator/expect"
	"reef/emulator/netns"
	"reef/emulator/results"
	"reef/switchd"
	"reef/switchd/shard"
	"reef/units"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A feed publishes every update: the channel taken before it closes, the version grows,
// and snapshots handed out earlier do not change.
func TestFeed(t *testing.T) {
	f := NewFeed("exp")
	ch := f.Changed()
	s0 := f.Snapshot()
	if closed(ch) || !s0.Live || s0.Title != "exp" {
		t.Fatalf("fresh feed: closed %v, %+v", closed(ch), s0)
	}
	p := loadPlan(t, "dumbbell")
	f.Begin("exp/run1", p)
	if !closed(ch) {
		t.Fatal("Begin did not signal")
	}
	ch = f.Changed()
	f.Push(5*units.Millisecond, &results.Run{Duration: 5 * units.Millisecond})
	if !closed(ch) {
		t.Fatal("Push did not signal")
	}
	f.Decide(expect.Result{Name: "a", Pass: true})
	s1 := f.Snapshot()
	f.Decide(expect.Result{Name: "b"})
	s2 := f.Snapshot()
	if len(s1.Verdicts) != 1 || len(s2.Verdicts) != 2 || s2.Verdicts[1].Name != "b" {
		t.Fatalf("verdicts: %v then %v", s1.Verdicts, s2.Verdicts)
	}
	if !(s0.Version < s1.Version && s1.Version < s2.Version) {
		t.Fatalf("versions %d %d %d do not grow", s0.Version, s1.Version, s2.Version)
	}
	if s2.Plan != p || s2.Now != 5*units.Millisecond || s2.Title != "exp/run1" {
		t.Fatalf("snapshot %+v", s2)
	}
	// a new run drops the samples, keeps the verdicts
	f.Begin("exp/run2", p)
	f.Finish()
	s3 := f.Snapshot()
	if s3.Run != nil || len(s3.Verdicts) != 2 || s3.Live {
		t.Fatalf("after run2 and Finish: %+v", s3)
	}
}

// RunSim pushes a real sim run: samples grow, the s1–s2 link is used, the feed ends
// finished.
func TestRunSimFeeds(t *testing.T) {
	p, s := dumbbellSim(t, 3*units.Millisecond, 0)
	f := NewFeed("sim")
	f.Begin("sim", p)
	v0 := f.Snapshot().Version
	if err := RunSim(context.Background(), s, f, 10*units.Millisecond, units.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	snap := f.Snapshot()
	if snap.Live || snap.Now != 3*units.Millisecond {
		t.Fatalf("end: live %v at %v, want finished at the scenario's 3ms", snap.Live, snap.Now)
	}
	// at least the first and the last chunk (more when the machine is slow), then Finish
	if pushes := snap.Version - v0 - 1; pushes < 2 || pushes > 3 {
		t.Fatalf("%d pushes, want 2 or 3", pushes)
	}
	if n := len(snap.Run.Flows[0].Samples); n < 20 {
		t.Fatalf("flow has %d samples, want ≥ 20 (every 100µs over 3ms)", n)
	}
	st := stateOf(snap, 1)
	mid := linkBetween(t, p, "s1", "s2")
	if st.Links[mid].Util < 0.5 {
		t.Fatalf("s1–s2 utilisation %.2f with one DCTCP flow, want ≥ 0.5", st.Links[mid].Util)
	}
	if st.Flows[0].Goodput < float64(500*units.Mbps) {
		t.Fatalf("flow goodput %v, want ≥ 500Mbps", st.Flows[0].Goodput)
	}
}

func writeFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A finished run directory as reef run writes it: results, plan and summary.
func TestRunDir(t *testing.T) {
	p, s := dumbbellSim(t, 2*units.Millisecond, 0)
	s.RunUntil(2 * units.Millisecond)
	exp := t.TempDir()
	dir := filepath.Join(exp, "cc=dctcp")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "results.json"), s.Results())
	writeFile(t, filepath.Join(dir, "input.json"), map[string]any{"plan": p})
	writeFile(t, filepath.Join(dir, "summary.json"), map[string]any{"run": "dumbbell/cc=dctcp",
		"expectations": []expect.Result{{Name: "fair", Check: "jain >= 0.9", ValueText: "0.99", BoundText: "0.9", Pass: true}}})
	for _, d := range []string{dir, exp} { // the run, or the experiment holding it
		rd, err := OpenRunDir(d)
		if err != nil {
			t.Fatal(err)
		}
		snap := rd.Snapshot()
		if rd.Changed() != nil || snap.Live {
			t.Fatal("a finished run is live")
		}
		if snap.Title != "dumbbell/cc=dctcp" || len(snap.Verdicts) != 1 || !snap.Verdicts[0].Pass {
			t.Fatalf("summary not read: %q %v", snap.Title, snap.Verdicts)
		}
		if snap.Plan == nil || len(snap.Plan.Links) != len(p.Links) || len(snap.Run.Flows[0].Samples) == 0 {
			t.Fatal("plan or samples missing")
		}
	}
	// the sweep's verdicts, when there is one, include those comparing runs
	writeFile(t, filepath.Join(exp, "sweep.json"), map[string]any{"expectations": []expect.Result{
		{Name: "fair", Pass: true}, {Name: "faster", Check: "fct(a) < fct(b)"}}})
	if rd, err := OpenRunDir(dir); err != nil || len(rd.Snapshot().Verdicts) != 2 {
		t.Fatalf("sweep verdicts not read: %v", err)
	}
	// two runs: the experiment directory is ambiguous, RunDirs lists both
	dir2 := filepath.Join(exp, "cc=swift")
	if err := os.Mkdir(dir2, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir2, "results.json"), s.Results())
	if _, err := OpenRunDir(exp); err == nil || !strings.Contains(err.Error(), "2 runs") {
		t.Fatalf("two runs: err %v", err)
	}
	dirs, err := RunDirs(exp)
	if err != nil || len(dirs) != 2 || filepath.Base(dirs[0]) != "cc=dctcp" {
		t.Fatalf("RunDirs %v %v", dirs, err)
	}
	// without plan and summary: samples only, and a note saying so
	rd, err := OpenRunDir(dir2)
	if err != nil {
		t.Fatal(err)
	}
	if snap := rd.Snapshot(); snap.Plan != nil || !strings.Contains(snap.Note, "topology unavailable") {
		t.Fatalf("no plan: %+v", snap.Note)
	}
	// plan.json, as older runs and other tools write it
	writeFile(t, filepath.Join(dir2, "plan.json"), p)
	if rd, err := OpenRunDir(dir2); err != nil || rd.Snapshot().Plan == nil {
		t.Fatalf("plan.json not read: %v", err)
	}
	if _, err := OpenRunDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "results.json") {
		t.Fatalf("empty dir: %v", err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "results.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRunDir(bad); err == nil {
		t.Fatal("malformed results.json accepted")
	}
}

// fakeLab writes what netns.Up leaves in a lab's directory for h1–s1–s2–h2: state.json,
// each switch's configuration and a stats file per switch.
func fakeLab(t *testing.T) (runDir string, write func(node string, now units.Time, txBytes uint64, final bool)) {
	runDir = t.TempDir()
	dir := filepath.Join(runDir, "line")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st := netns.State{Lab: "line", Ready: true, Namespaces: []netns.NodeNS{{Node: "h1"}, {Node: "h2"},
		{Node: "s1", Switch: true}, {Node: "s2", Switch: true}}}
	writeFile(t, filepath.Join(dir, "state.json"), st)
	port := func(name, peer string, host bool) switchd.PortConfig {
		return switchd.PortConfig{Name: name, Peer: peer, PeerIsHost: host, Rate: units.Gbps, Buffer: 100000, MTU: 1500}
	}
	writeFile(t, filepath.Join(dir, "s1.json"), switchd.Config{Name: "s1", Ports: []switchd.PortConfig{port("p1", "h1:eth0", true), port("p2", "s2:p2", false)}})
	writeFile(t, filepath.Join(dir, "s2.json"), switchd.Config{Name: "s2", Ports: []switchd.PortConfig{port("p1", "h2:eth0", true), port("p2", "s1:p2", false)}})
	write = func(node string, now units.Time, txBytes uint64, final bool) {
		r := shard.Report{Node: node, Time: now, Final: final, Ports: []switchd.PortStats{
			{Name: "p1", Rate: units.Gbps, TxBytes: txBytes / 10, TxPackets: txBytes / 15000},
			{Name: "p2", Rate: units.Gbps, TxBytes: txBytes, TxPackets: txBytes / 1500, QueueBytes: 30000, ECNMarks: 7}}}
		writeFile(t, filepath.Join(dir, node+".stats.json"), r)
	}
	return runDir, write
}

// A lab's graph comes from its files; each new stats file adds a sample.
func TestLab(t *testing.T) {
	runDir, write := fakeLab(t)
	write("s1", units.Second, 0, false)
	l, err := OpenLab(runDir, "line", 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	snap := l.Snapshot()
	if p := snap.Plan; len(p.Hosts) != 2 || len(p.Switches) != 2 || len(p.Links) != 3 {
		t.Fatalf("plan: %d hosts, %d switches, %d links; want 2, 2, 3 (h1–s1, s1–s2, s2–h2)", len(p.Hosts), len(p.Switches), len(p.Links))
	}
	if snap.Run == nil || len(snap.Run.Ports) != 4 || len(snap.Run.Ports[1].Samples) != 1 {
		t.Fatal("first stats file not read")
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { l.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()
	ch := l.Changed()
	// 125 MB in one second on s1's p2 (towards s2): 1 Gbit/s, full
	write("s1", 2*units.Second, 125_000_000, false)
	write("s2", 2*units.Second, 0, true)
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no update after new stats")
	}
	for l.Snapshot().Run.Ports[3].Samples == nil { // both files may take two polls
		time.Sleep(5 * time.Millisecond)
	}
	snap = l.Snapshot()
	st := stateOf(snap, 1)
	mid := linkBetween(t, snap.Plan, "s1", "s2")
	if u := st.Links[mid].Util; u < 0.99 || u > 1.01 {
		t.Fatalf("s1–s2 utilisation %.3f, want 1", u)
	}
	if st.Links[mid].Queue != 30000 || st.Links[mid].Marks != 14 { // both directions
		t.Fatalf("s1–s2 queue %v marks %d", st.Links[mid].Queue, st.Links[mid].Marks)
	}
	if !snap.Live {
		t.Fatal("s1 is not final: the lab is still live")
	}
	write("s1", 3*units.Second, 125_000_000, true)
	for l.Snapshot().Live {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := OpenLab(runDir, "nope", 0); err == nil {
		t.Fatal("a lab that is not up opened")
	}
}
