package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyExperiment is a two-point sweep on a dumbbell, short enough for the sim to run in
// a fraction of a second; TAU and RATE are replaced per file.
const tinyExperiment = `name: tiny-compare
topology:
  name: tiny
  defaults: {rate: RATE, delay: 1us, buffer: 4MB, mtu: 1500}
  generator: {kind: dumbbell, hosts: 2}
time_scale: TAU
duration: 300us
warmup: 100us
sample_interval: 5us
seed: 1
defaults: {cc: "${cc}"}
flows:
  - {group: bulk, count: 2, src: "h{i}", dst: "h{i+2}"}
sweep:
  cc: CCS
expectations:
  - {name: moves, check: "bulk.goodput > 0bps"}
`

// captured runs reef with args and returns its exit status and what it printed.
func captured(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = out, errf
	code = run(context.Background(), args)
	os.Stdout, os.Stderr = oldOut, oldErr
	for _, f := range []*os.File{out, errf} {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	o, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	e, err := os.ReadFile(errf.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(o), string(e)
}

// runTiny writes tinyExperiment at time scale tau, link rate rate and sweep ccs, runs it
// on the sim and returns its results directory.
func runTiny(t *testing.T, dir, name, tau, rate, ccs string) string {
	t.Helper()
	src := strings.NewReplacer("TAU", tau, "RATE", rate, "CCS", ccs).Replace(tinyExperiment)
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	if code, stdout, stderr := captured(t, "run", path, "--backend", "sim", "--out", out); code != 0 {
		t.Fatalf("reef run %s: exit %d\n%s%s", name, code, stdout, stderr)
	}
	return out
}

// TestCompareExperimentsAtDifferentTimeScales runs one experiment on the sim at τ = 100
// and τ = 1000 (the sim keeps paper-unit results whatever τ is, as a netns run at its
// backend_time_scale should) and compares the results directories.
func TestCompareExperimentsAtDifferentTimeScales(t *testing.T) {
	d := t.TempDir()
	a := runTiny(t, d, "a", "100", "100Gbps", "[swift, dctcp]")
	b := runTiny(t, d, "b", "1000", "100Gbps", "[swift, dctcp]")
	// c has half the link rate, so half the goodput, and only the swift point.
	c := runTiny(t, d, "c", "1000", "50Gbps", "[swift]")
	for _, tt := range []struct {
		name string
		args []string
		code int
		// out must all be in stdout, err in stderr; not must not be in stdout.
		out, err, not []string
	}{
		{name: "same experiment, τ 100 and 1000", args: []string{a, b, "--max-goodput-diff", "10%"}, code: 0,
			out: []string{"in paper units: A at τ=100, B at τ=1000", "cc=swift ", "cc=dctcp ", "2 points compared"},
			not: []string{"only in", "EXCEEDED", "degraded", "== cc=swift =="}},
		{name: "detail", args: []string{a, b, "--detail"}, code: 0,
			out: []string{"== cc=swift ==", "== cc=dctcp ==", "GOODPUT Gbit/s", "A = tiny-compare/cc=swift (sim), τ=100, fidelity ok"}},
		{name: "equal τ", args: []string{a, a, "--max-goodput-diff", "0"}, code: 0,
			out: []string{"in emulator units: A and B at τ=100", "+0.0%"}},
		{name: "half the goodput", args: []string{a, c, "--max-goodput-diff", "10%"}, code: 1,
			out: []string{"in paper units: A at τ=100, B at τ=1000", "EXCEEDED: goodput", "only in A (not compared): cc=dctcp", "1 points compared, 1 exceeds a limit"},
			err: []string{"1 of 1 points exceed a limit, 1 found on one side only: cc=swift: flow", "cc=dctcp: only in A, not compared"}},
		{name: "a point on one side only", args: []string{a, c}, code: 0,
			out: []string{"only in A (not compared): cc=dctcp", "1 points compared"}},
		{name: "one run each", args: []string{filepath.Join(a, "cc=swift"), filepath.Join(b, "cc=swift", "summary.json"), "--max-goodput-diff", "10%"}, code: 0,
			out: []string{"A = tiny-compare/cc=swift (sim), τ=100, fidelity ok", "in paper units: A at τ=100, B at τ=1000"},
			err: []string{"largest goodput difference"}},
		{name: "a run against an experiment", args: []string{a, filepath.Join(b, "cc=swift")}, code: 2,
			err: []string{"is an experiment's results directory with 2 sweep points but B", "is one run"}},
		{name: "missing", args: []string{a, filepath.Join(d, "nothing")}, code: 2, err: []string{"compare: B:"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := captured(t, append([]string{"compare"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.code, stdout, stderr)
			}
			for _, w := range tt.out {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tt.err {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, stdout)
				}
			}
		})
	}

	// --json: an object with a comparison per point, in paper units.
	code, stdout, stderr := captured(t, "compare", a, c, "--json", "--max-goodput-diff", "10%")
	if code != 1 {
		t.Errorf("--json: exit %d\n%s", code, stderr)
	}
	var got struct {
		Points []struct {
			Point       string   `json:"point"`
			GoodputDiff *float64 `json:"max_goodput_diff"`
			Exceeded    []string `json:"exceeded"`
			Comparison  struct {
				Units      string  `json:"units"`
				TimeScaleA float64 `json:"time_scale_a"`
				TimeScaleB float64 `json:"time_scale_b"`
			} `json:"comparison"`
		} `json:"points"`
		OnlyA []string `json:"only_a"`
		Pass  bool     `json:"pass"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	if len(got.Points) != 1 || got.Points[0].Point != "cc=swift" || got.Points[0].GoodputDiff == nil || *got.Points[0].GoodputDiff < 0.4 ||
		len(got.Points[0].Exceeded) != 1 || got.Points[0].Comparison.Units != "paper" || got.Points[0].Comparison.TimeScaleB != 1000 ||
		got.Pass || len(got.OnlyA) != 1 {
		t.Errorf("--json: %+v", got)
	}
}
