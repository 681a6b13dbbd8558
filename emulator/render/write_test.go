package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"reef/emulator/analysis"
	"reef/emulator/analysis/analysistest"

	"reef/emulator/expect"
	"reef/emulator/plan"
	"reef/units"
)

const (
	us = units.Microsecond
	ms = units.Millisecond
)

func testPlan(t *testing.T) *plan.Plan { return analysistest.Plan(t) }

var testRun = analysistest.Run

func parse(t *testing.T, specs ...expect.Spec) []*expect.Expectation {
	t.Helper()
	xs, err := expect.ParseAll(specs)
	if err != nil {
		t.Fatal(err)
	}
	return xs
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestWriteRunAndRerender(t *testing.T) {
	p := testPlan(t)
	sc, run := testRun("exp", 1, 1)
	exp, vars := analysis.ParseRunName(sc.Name)
	s, err := analysis.SummarizeInput(&analysis.Input{Experiment: exp, Vars: vars, Plan: p, Scenario: sc, Run: run,
		Paper:        &analysis.Paper{Ref: "Poseidon, NSDI'23, Fig. 12", Claim: "the victim gets its share", Notes: "scaled by 10"},
		Expectations: parse(t, expect.Spec{Name: "fair", Check: "jain(bulk) >= 0.8", Claim: "bulk flows share fairly"})})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if d := os.Getenv("REEF_REPORT_DIR"); d != "" {
		dir = d
	}
	if err := WriteRun(dir, s, run); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, analysis.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	page := []byte(html.UnescapeString(string(raw))) // attributes escape '+' as &#43;
	for _, name := range []string{"rate", "cwnd", "queue-delay", "fct-slowdown"} {
		png, err := os.ReadFile(filepath.Join(dir, "plots", name+".png"))
		if err != nil {
			t.Errorf("plot %s.png: %v", name, err)
			continue
		}
		if !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("%s.png is not a PNG", name)
		}
		if svg, err := os.ReadFile(filepath.Join(dir, "plots", name+".svg")); err != nil || !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("plot %s.svg: %v", name, err)
		}
		if !bytes.Contains(page, []byte(`id="`+name+`"`)) || !bytes.Contains(page, []byte(base64.StdEncoding.EncodeToString(png[:300]))) {
			t.Errorf("report.html does not embed %s.png", name)
		}
	}
	for _, want := range []string{"bulk flows share fairly", "jain(bulk) >= 0.8", "τ = 10", "Poseidon, NSDI'23, Fig. 12", "the victim gets its share", "Fidelity", "https://"} {
		has := strings.Contains(string(page), want)
		if want == "https://" {
			if has {
				t.Error("report.html refers to the network")
			}
			continue
		}
		if !has {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, f := range []string{analysis.SummaryFile, analysis.ResultsFile, analysis.InputFile, analysis.FlowsCSV, analysis.QueuesCSV} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// Re-rendering from the raw results gives the same summary.
	before, _ := os.ReadFile(filepath.Join(dir, analysis.SummaryFile))
	if _, err := Rerender(dir); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, analysis.SummaryFile))
	if !bytes.Equal(before, after) {
		t.Errorf("re-rendered summary differs:\n%s\n---\n%s", before, after)
	}
	back, err := analysis.ReadSummary(dir)
	if err != nil || back.Flows[0].GoodputBps != s.Flows[0].GoodputBps || back.Expectations[0].Name != "fair" {
		t.Errorf("ReadSummary = %+v, %v", back, err)
	}
}

func TestWriteSweep(t *testing.T) {
	p := testPlan(t)
	xs := parse(t,
		expect.Spec{Name: "b-share", Check: "b.goodput >= 0.4 * b.fair_share"},
		expect.Spec{Name: "ratio", Check: "poseidon:b.goodput >= 1.5 * swift:b.goodput"},
	)
	dir := t.TempDir()
	if d := os.Getenv("REEF_SWEEP_DIR"); d != "" {
		dir = d
	}
	var runs []analysis.RunEntry
	// b's goodput: poseidon 40 Mbps at M=2 and 45 at M=4; swift 25 and 20.
	for _, r := range []struct {
		cc, m string
		b     float64
	}{{"poseidon", "2", 40.0 / 25}, {"swift", "2", 1}, {"poseidon", "4", 45.0 / 25}, {"swift", "4", 20.0 / 25}} {
		name := "exp/cc=" + r.cc + ",M=" + r.m
		sc, run := testRun(name, 1, r.b)
		s, err := analysis.Summarize(p, sc, run, xs)
		if err != nil {
			t.Fatal(err)
		}
		rd := filepath.Join(dir, r.cc+"-M"+r.m)
		if err := WriteRun(rd, s, nil); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, analysis.RunEntry{Dir: rd, Summary: s})
	}
	w, err := WriteSweep(dir, runs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]expect.Result{}
	for _, r := range w.Expectations {
		got[r.Label()] = r
	}
	// b-share: 40, 25, 45, 20 Mbps against 0.4 × 50 = 20 → all pass. ratio: 40 ≥ 37.5
	// (M=2) passes, 45 ≥ 30 (M=4) passes.
	for label, pass := range map[string]bool{
		"b-share [M=2 cc=poseidon]": true, "b-share [M=2 cc=swift]": true, "b-share [M=4 cc=poseidon]": true,
		"b-share [M=4 cc=swift]": true, "ratio [M=2]": true, "ratio [M=4]": true,
	} {
		r, ok := got[label]
		if !ok || r.Pass != pass || r.Error != "" {
			t.Errorf("%s = %+v (ok %v)", label, r, ok)
		}
	}
	if len(got) != 6 || !w.Pass {
		t.Errorf("sweep results = %v, pass %v", got, w.Pass)
	}
	if !near(got["ratio [M=4]"].Value, 45e6) || !near(got["ratio [M=4]"].Bound, 30e6) {
		t.Errorf("ratio [M=4] = %+v", got["ratio [M=4]"])
	}
	page, err := os.ReadFile(filepath.Join(dir, analysis.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sweep-b-share-vs-m", "sweep-bulk-share-vs-m", "sweep-fct-slowdown-p50", "sweep-fct-slowdown-p99", "sweep-group-share"} {
		if _, err := os.Stat(filepath.Join(dir, "plots", f+".png")); err != nil {
			t.Errorf("sweep plot: %v", err)
		}
		if !bytes.Contains(page, []byte(`id="`+f+`"`)) {
			t.Errorf("sweep report.html lacks %s", f)
		}
	}
	if !bytes.Contains(page, []byte(`href="poseidon-M2/report.html"`)) {
		t.Error("sweep report.html does not link the runs")
	}
	if _, err := RerenderSweep(dir); err != nil {
		t.Fatal(err)
	}
}

// A directory written by other means (plan.json, scenario.json, results.json and
// summary.json, as the runner leaves it) re-renders with the checks its summary lists.
func TestRenderDirWithoutInput(t *testing.T) {
	p := testPlan(t)
	sc, run := testRun("exp/cc=swift", 1, 1)
	xs := parse(t, expect.Spec{Name: "fair", Check: "jain(bulk) >= 0.8"},
		expect.Spec{Name: "not-here", Check: "jain(bulk) >= 0.8", When: "cc == 'hpcc'"})
	s, err := analysis.Summarize(p, sc, run, xs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, v := range map[string]any{"plan.json": p, "scenario.json": sc, analysis.ResultsFile: run, analysis.SummaryFile: s} {
		if err := writeJSON(filepath.Join(dir, name), v); err != nil {
			t.Fatal(err)
		}
	}
	pass, err := RenderDir(dir)
	if err != nil || !pass {
		t.Fatalf("RenderDir = %v, %v", pass, err)
	}
	back, err := analysis.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Checks) != 2 || len(back.Expectations) != 1 || back.Expectations[0].Name != "fair" || back.Experiment != "exp" {
		t.Errorf("re-rendered summary: checks %+v, expectations %+v", back.Checks, back.Expectations)
	}
	if _, err := os.Stat(filepath.Join(dir, analysis.HTMLFile)); err != nil {
		t.Error(err)
	}
	if _, err := RenderDir(t.TempDir()); err == nil {
		t.Error("RenderDir of an empty directory succeeded")
	}
}

// writeJSON writes v to path as the report packages write their files.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
