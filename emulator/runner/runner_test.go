package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	_ "reef/cc/all"
	"reef/emulator"
	"reef/emulator/analysis"
	"reef/emulator/calibrate"
	"reef/emulator/expect"
	"reef/emulator/experiment"
	"reef/emulator/plan"
	"reef/emulator/render"
	"reef/emulator/results"
	"reef/emulator/scenario"
	_ "reef/emulator/sim/simbackend"
	"reef/units"
)

const tiny = `name: tiny
topology:
  name: tiny
  defaults: {rate: 100Gbps, delay: 1us, buffer: 4MB, mtu: 1500}
  generator: {kind: dumbbell, hosts: 2}
time_scale: 100
duration: 200us
warmup: 50us
sample_interval: 5us
seed: 1
defaults: {cc: swift}
flows:
  - {group: bulk, count: 2, src: "h{i}", dst: "h{i+2}"}
workloads:
  - {kind: poisson, group: web, cdf: websearch, load: 0.3, hosts: [all], stop: 150us}
sweep:
  M: [1, 2]
expectations:
  - {name: moves, check: "bulk.goodput > 0bps"}
  - {name: CHECK2, check: "jain(bulk) >= 0.5"}
`

func write(t testing.TB, dir, src string) string {
	t.Helper()
	p := filepath.Join(dir, "x.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunWritesResultsAndVerdicts(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		check string
		pass  bool
	}{{"jain(bulk) >= 0.5", true}, {"jain(bulk) > 1.5", false}} {
		path := write(t, dir, strings.Replace(tiny, "jain(bulk) >= 0.5", tc.check, 1))
		out := filepath.Join(dir, "out-"+map[bool]string{true: "pass", false: "fail"}[tc.pass])
		o, err := Run(context.Background(), path, Options{Backend: "sim", OutDir: out})
		if err != nil {
			t.Fatal(err)
		}
		if o.Pass != tc.pass {
			t.Fatalf("check %q: pass = %v, want %v (%+v)", tc.check, o.Pass, tc.pass, o.Results)
		}
		if len(o.Summaries) != 2 || len(o.Results) != 4 {
			t.Fatalf("%d summaries, %d results; want 2 runs × 2 checks", len(o.Summaries), len(o.Results))
		}
		for _, sub := range []string{"M=1", "M=2"} {
			for _, f := range []string{"results.json", "summary.json", "input.json", "report.html"} {
				if _, err := os.Stat(filepath.Join(out, sub, f)); err != nil {
					t.Errorf("missing %s/%s: %v", sub, f, err)
				}
			}
		}
		for _, f := range []string{"sweep.json", "report.html"} {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Error(err)
			}
		}
	}
}

// With NoFigures a run writes its data and verdicts but no plots or report.html, and
// `reef report DIR` (render.RenderDir) draws them afterwards with the same verdicts.
func TestRunNoFiguresDrawsLater(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	o, err := Run(context.Background(), write(t, dir, tiny), Options{Backend: "sim", OutDir: out, NoFigures: true})
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"report.html", "plots", "M=1/report.html", "M=1/plots"}
	for _, f := range []string{"sweep.json", "M=1/summary.json", "M=1/results.json", "M=2/flows.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	for _, f := range pages {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			t.Errorf("%s written although figures were off", f)
		}
	}
	pass, err := render.RenderDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if pass != o.Pass {
		t.Errorf("drawn later: pass %v, the run said %v", pass, o.Pass)
	}
	for _, f := range pages {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("reef report did not draw %s: %v", f, err)
		}
	}
}

// wallRe matches the fields that measure wall time, the only ones allowed to differ.
var wallRe = regexp.MustCompile(`"wall_time(_us)?": [^,\n]+`)

func TestRunDeterministic(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, tiny)
	read := func(out string) []byte {
		var all []byte
		for _, f := range []string{"M=2/results.json", "M=2/summary.json"} {
			b, err := os.ReadFile(filepath.Join(out, f))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, wallRe.ReplaceAll(b, []byte(`"wall_time": 0`))...)
		}
		return all
	}
	var got [3][]byte
	for i, seed := range []uint64{0, 0, 7} {
		out := filepath.Join(dir, "run", string(rune('a'+i)))
		if _, err := Run(context.Background(), path, Options{Backend: "sim", OutDir: out, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		got[i] = read(out)
	}
	if !bytes.Equal(got[0], got[1]) {
		t.Fatal("the same experiment and seed twice gave different results or summaries")
	}
	if bytes.Equal(got[0], got[2]) {
		t.Fatal("a different seed gave the same results although the workload is random")
	}
}

func TestBadFileCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{
		strings.Replace(tiny, "cc: swift", "cc: swfit", 1),
		strings.Replace(tiny, `dst: "h{i+2}"`, `dst: "h{i+20}"`, 1),
		strings.Replace(tiny, "time_scale: 100", "time_scale: 0", 1),
		strings.Replace(tiny, "bulk.goodput", "bulk.badput", 1),
	} {
		path := write(t, dir, bad)
		out := filepath.Join(dir, "never")
		if _, err := Run(context.Background(), path, Options{Backend: "sim", OutDir: out}); err == nil {
			t.Fatalf("no error for a bad file")
		} else if !strings.Contains(err.Error(), "x.yaml:") {
			t.Errorf("error %q does not name the file and line", err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("a bad file created %s", out)
		}
	}
}

func TestInterruptKeepsWhatWasMeasured(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, tiny)
	ctx, cancel := context.WithCancel(context.Background())
	p := &cancelAt{cancel: cancel, at: 5 * units.Millisecond}
	o, err := Run(ctx, path, Options{Backend: "sim", OutDir: filepath.Join(dir, "out"), Progress: p})
	if err == nil || o == nil || !o.Interrupted {
		t.Fatalf("err %v outcome %+v; want an interruption", err, o)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out", "M=1", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Duration units.Time `json:"duration"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Duration <= 0 || r.Duration >= 20*units.Millisecond {
		t.Fatalf("kept results cover %v; want the part before the interruption", r.Duration)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "M=2")); !os.IsNotExist(err) {
		t.Fatal("the run after the interruption was started")
	}
}

// cancelAt cancels the run once the emulated time passes at.
type cancelAt struct {
	cancel context.CancelFunc
	at     units.Time
}

func (c *cancelAt) Start(int, int, string) {}
func (c *cancelAt) Update(reached, _ units.Time) {
	if reached >= c.at {
		c.cancel()
	}
}
func (c *cancelAt) Done(int, *analysis.Summary, error) {}

// With RetryDegraded a point whose fidelity was degraded runs again, and the results
// kept are the last attempt's, which say how many there were; without it the degraded
// run is kept as it is.
func TestRetryDegraded(t *testing.T) {
	for i, tc := range []struct {
		retries  int
		verdict  string
		attempts int // in summary.json: omitted (0) when the point ran once
	}{{0, "degraded", 0}, {1, "ok", 2}, {3, "ok", 2}} {
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		be := &busyBackend{name: fmt.Sprintf("sim-busy-%d", i), runs: map[string]int{}}
		emulator.Register(be)
		o, err := Run(context.Background(), write(t, dir, tiny), Options{Backend: be.name, OutDir: out, NoFigures: true,
			RetryDegraded: tc.retries})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range o.Summaries {
			if s.Fidelity.Verdict != tc.verdict || s.Attempts != tc.attempts {
				t.Errorf("retries %d, %s: verdict %s after %d attempts, want %s after %d (%s)",
					tc.retries, s.Run, s.Fidelity.Verdict, s.Attempts, tc.verdict, tc.attempts, analysis.DegradedWhy(s.Fidelity))
			}
		}
		started := 0
		for _, sub := range []string{"M=1", "M=2"} {
			_, err := os.Stat(filepath.Join(out, sub, busyMark))
			if kept := err == nil; kept != (tc.retries == 0) {
				t.Errorf("retries %d: the degraded attempt's file kept: %v", tc.retries, kept)
			}
			b, err := os.ReadFile(filepath.Join(out, sub, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(b), `"attempts": 2`); got != (tc.attempts == 2) {
				t.Errorf("retries %d: summary.json says attempts 2: %v", tc.retries, got)
			}
		}
		for _, n := range be.runs {
			started += n
		}
		if want := 2 + min(tc.retries, 1)*2; started != want {
			t.Errorf("retries %d: %d runs, want %d", tc.retries, started, want)
		}
	}
}

// busyMark is the file busyBackend leaves in a degraded attempt's directory.
const busyMark = "busy-attempt"

// busyBackend is the sim as a machine busy with other work would leave a real backend
// on a point's first run: h1's daemon released its frames 10 ms late at p99, far more
// than the tiny lab's RTT allows. Later runs of the point are the sim's own.
type busyBackend struct {
	name string
	runs map[string]int // runs per scenario
}

func (b *busyBackend) Name() string { return b.name }

func (b *busyBackend) Run(ctx context.Context, p *plan.Plan, sc *scenario.Scenario, opts emulator.RunOptions) (*results.Run, error) {
	sim, err := emulator.Lookup("sim")
	if err != nil {
		return nil, err
	}
	res, err := sim.Run(ctx, p, sc, opts)
	if err != nil {
		return res, err
	}
	if b.runs[sc.Name]++; b.runs[sc.Name] == 1 {
		res.Hosts = append(res.Hosts, results.Host{Name: "h1", Rate: 100 * units.Gbps,
			Lateness: results.Lateness{Count: 1000, P50: units.Microsecond, P99: 10 * units.Millisecond, Max: 10 * units.Millisecond}})
		if err := os.WriteFile(filepath.Join(opts.OutDir, busyMark), nil, 0o644); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// reef run --only runs the points selected, each as it runs in the whole sweep, and
// says which checks no point run evaluated; a bad selector is an error before anything
// is created.
func TestRunOnly(t *testing.T) {
	dir := t.TempDir()
	src := strings.Replace(tiny, "  M: [1, 2]\n", "  cc: [swift, dctcp]\n  M: [1, 2]\n", 1)
	src = strings.Replace(src, "defaults: {cc: swift}", "defaults: {cc: \"${cc}\"}", 1) +
		"  - {name: vs-dctcp, check: \"swift:bulk.goodput > 0.1 * dctcp:bulk.goodput\"}\n" +
		"  - {name: only-m1, check: \"bulk.goodput > 0bps\", when: \"M == 1\"}\n"
	path := write(t, dir, src)
	full := filepath.Join(dir, "full")
	if _, err := Run(context.Background(), path, Options{Backend: "sim", OutDir: full, NoFigures: true}); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(dir, "part")
	o, err := Run(context.Background(), path, Options{Backend: "sim", OutDir: part, NoFigures: true, Only: []string{"cc=swift", "M=2"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Summaries) != 1 || o.Summaries[0].Run != "tiny/cc=swift,M=2" {
		t.Fatalf("--only cc=swift,M=2 ran %d points (first %q)", len(o.Summaries), o.Summaries[0].Run)
	}
	read := func(out string) []byte {
		b, err := os.ReadFile(filepath.Join(out, "cc=swift,M=2", "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		return wallRe.ReplaceAll(b, []byte(`"wall_time": 0`))
	}
	if !bytes.Equal(read(full), read(part)) {
		t.Error("the point run alone gave a different summary than in the whole sweep")
	}
	if want := []string{"vs-dctcp", "only-m1"}; fmt.Sprint(o.NotEvaluated) != fmt.Sprint(want) || !o.Pass {
		t.Errorf("not evaluated %q (pass %v), want %q and a pass", o.NotEvaluated, o.Pass, want)
	}
	var sw analysis.Sweep
	if b, err := os.ReadFile(filepath.Join(part, analysis.SweepFile)); err != nil || json.Unmarshal(b, &sw) != nil || fmt.Sprint(sw.NotEvaluated) != "[vs-dctcp only-m1]" {
		t.Errorf("sweep.json not_evaluated = %q (%v), want [vs-dctcp only-m1]", sw.NotEvaluated, err)
	}
	// Both values of a variable: the comparison is evaluated again; the report says
	// what was not.
	both := filepath.Join(dir, "both")
	o, err = Run(context.Background(), path, Options{Backend: "sim", OutDir: both, Only: []string{"M=2", "cc=swift", "cc=dctcp"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Summaries) != 2 || fmt.Sprint(o.NotEvaluated) != "[only-m1]" {
		t.Errorf("--only M=2,cc=swift,cc=dctcp ran %d points, not evaluated %q; want 2 and [only-m1]", len(o.Summaries), o.NotEvaluated)
	}
	if page, err := os.ReadFile(filepath.Join(both, analysis.HTMLFile)); err != nil || !bytes.Contains(page, []byte(`id="not-evaluated"`)) || !bytes.Contains(page, []byte("only-m1.")) {
		t.Errorf("the sweep's report.html does not list the checks not evaluated (%v)", err)
	}
	for _, bad := range []struct{ sel, want string }{
		{"M=3", `"3" is not a value of sweep.M (1, 2)`},
		{"N=1", `the sweep has no variable "N" (it sweeps cc, M)`},
		{"M", "want VAR=VALUE"},
	} {
		out := filepath.Join(dir, "never")
		_, err := Run(context.Background(), path, Options{Backend: "sim", OutDir: out, Only: []string{bad.sel}})
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.HasPrefix(err.Error(), "--only ") {
			t.Errorf("--only %s: error %v, want one saying %s", bad.sel, err, bad.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("--only %s created %s", bad.sel, out)
		}
	}
}

// A point whose links on a real backend are faster than the machine's calibrated
// limits is flagged before anything runs; the sim, and points within the limits, are
// not.
func TestCheckLimitsFlagsBeforeRunning(t *testing.T) {
	x, err := experiment.Load(filepath.Join("..", "..", "experiments", "poseidon-multihop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := x.CompileAll(experiment.CompileOptions{Backend: "netns"}) // 200 Mbit/s links
	if err != nil {
		t.Fatal(err)
	}
	limits := func(r units.Rate) *calibrate.Limits {
		return &calibrate.Limits{Limits: []calibrate.Limit{{Topology: "chain", MTU: 4096, MaxRate: r}}}
	}
	if w := checkLimits(limits(100*units.Mbps), "netns", runs); len(w) != 1 || !strings.Contains(w[0], "poseidon-multihop: links at 200Mbps") {
		t.Errorf("limit 100 Mbit/s: warnings %q, want one for the 200 Mbit/s links", w)
	}
	if w := checkLimits(limits(400*units.Mbps), "netns", runs); len(w) != 0 {
		t.Errorf("limit 400 Mbit/s: warnings %q, want none", w)
	}
	if w := checkLimits(limits(50*units.Mbps), "sim", runs); len(w) != 0 {
		t.Errorf("sim: warnings %q, want none", w)
	}
}

// With Jobs > 1 the sim's sweep points run side by side and write exactly what a serial
// run writes, point for point; the progress hears of every point by its index.
func TestRunJobsMatchesSerial(t *testing.T) {
	dir := t.TempDir()
	src := strings.Replace(tiny, "  M: [1, 2]\n", "  cc: [swift, dctcp]\n  M: [1, 2]\n", 1)
	src = strings.Replace(src, "defaults: {cc: swift}", "defaults: {cc: \"${cc}\"}", 1)
	path := write(t, dir, src)
	files := func(out string) map[string][]byte {
		got := map[string][]byte{}
		err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(out, p)
			got[rel] = wallRe.ReplaceAll(b, []byte(`"wall_time": 0`))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	var want map[string][]byte
	for _, jobs := range []int{1, 3} {
		out := filepath.Join(dir, fmt.Sprint("j", jobs))
		p := &pointLog{}
		o, err := Run(context.Background(), path, Options{Backend: "sim", OutDir: out, NoFigures: true, Jobs: jobs, Progress: p})
		if err != nil || !o.Pass || len(o.Summaries) != 4 {
			t.Fatalf("-j %d: err %v, pass %v, %d summaries", jobs, err, o.Pass, len(o.Summaries))
		}
		for i, s := range o.Summaries {
			if want := []string{"cc=swift,M=1", "cc=swift,M=2", "cc=dctcp,M=1", "cc=dctcp,M=2"}[i]; !strings.HasSuffix(s.Run, want) {
				t.Errorf("-j %d: summary %d is %s, want the sweep's order (%s)", jobs, i, s.Run, want)
			}
		}
		if fmt.Sprint(p.started) != "[0 1 2 3]" || fmt.Sprint(p.finished) != "[0 1 2 3]" || len(p.updated) != 4 {
			t.Errorf("-j %d: progress started %v, finished %v, updated %v; want every point", jobs, p.started, p.finished, p.updated)
		}
		got := files(out)
		if want == nil {
			want = got
			continue
		}
		if len(got) != len(want) {
			t.Errorf("-j %d wrote %d files, -j 1 %d", jobs, len(got), len(want))
		}
		for f, b := range want {
			if !bytes.Equal(got[f], b) {
				t.Errorf("-j %d: %s differs from -j 1's", jobs, f)
			}
		}
	}
}

// pointLog records which points a sweep's progress heard of (sorted, so that the order
// in which parallel points start or finish does not matter).
type pointLog struct {
	started, finished []int
	updated           map[int]bool
}

func (p *pointLog) Start(i, _ int, _ string) { p.started = insertSorted(p.started, i) }
func (p *pointLog) Update(units.Time, units.Time) {
	panic("a PointProgress is told which point moved")
}
func (p *pointLog) UpdatePoint(i int, _, _ units.Time) {
	if p.updated == nil {
		p.updated = map[int]bool{}
	}
	p.updated[i] = true
}
func (p *pointLog) Done(i int, _ *analysis.Summary, _ error) {
	p.finished = insertSorted(p.finished, i)
}

func insertSorted(s []int, v int) []int {
	i, _ := slices.BinarySearch(s, v)
	return slices.Insert(s, i, v)
}

// Options.Expectations replace the file's checks at every point (reef lab check grades
// a student's file on the lab's checks), a bad one is an error before anything runs,
// and Options.Lab names the lab the runs' plans bring up.
func TestRunReplacesExpectationsAndLab(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, tiny)
	o, err := Run(context.Background(), path, Options{Backend: "sim", OutDir: filepath.Join(dir, "out"), NoFigures: true, Lab: "ada-qe-c",
		Expectations: []expect.Spec{{Name: "lab-check", Check: "bulk.goodput > 1Tbps", When: "M == 2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Results) != 1 || o.Results[0].Name != "lab-check" || o.Pass {
		t.Fatalf("results %+v: want only the lab's check, failing, at M=2", o.Results)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out", "M=1", analysis.InputFile))
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Plan struct {
			Lab string `json:"lab"`
		} `json:"plan"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	if in.Plan.Lab != "ada-qe-c" {
		t.Errorf("input.json's plan carries lab %q, want the name given (ada-qe-c)", in.Plan.Lab)
	}
	if _, err := Run(context.Background(), path, Options{Backend: "sim", OutDir: filepath.Join(dir, "bad"),
		Expectations: []expect.Spec{{Name: "x", Check: "nosuchgroup.goodput > 0bps"}}}); err == nil {
		t.Error("a check naming no flow set ran")
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); err == nil {
		t.Error("a bad check created the results directory")
	}
}
