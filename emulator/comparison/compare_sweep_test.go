package comparison

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"reef/emulator/analysis"
)

// paperResult is one result in the paper's units: a flow f1 (long-lived) and a message
// m1 in group g, and a busy port s1:p1.
type paperResult struct {
	goodput, rttP50, rttP99, fct, qdelay, pktDelay float64
}

var paper1 = paperResult{goodput: 40e9, rttP50: 10, rttP99: 20, fct: 50, qdelay: 2, pktDelay: 1.5}

// summaryAt is r as a run at time scale tau records it: emulator rates are the paper's
// ÷ τ and times × τ; withPaper also fills the *_paper fields (as Summarize does when τ ≠
// 1). Unit-free values (utilisation, drops, slowdown) are the same at every τ.
func summaryAt(r paperResult, tau float64, withPaper bool) *analysis.Summary {
	rate := func(v float64) float64 { return v / tau }
	tm := func(v float64) float64 { return v * tau }
	rtt := &analysis.Pct{Count: 10, Mean: tm(r.rttP50), P50: tm(r.rttP50), P99: tm(r.rttP99)}
	qd := &analysis.Pct{Count: 10, Mean: tm(r.qdelay), P50: tm(r.qdelay), P99: tm(2 * r.qdelay)}
	slow := 1.5
	s := &analysis.Summary{Experiment: "x", Run: "x/p", Backend: "sim", TimeScale: tau, Fidelity: analysis.Fidelity{Verdict: "ok"},
		Flows: []analysis.Flow{
			{Name: "f1", Group: "g", GoodputBps: rate(r.goodput), RTTUS: rtt},
			{Name: "m1", Group: "g", SizeBytes: 100000, GoodputBps: rate(r.goodput / 2), FCTUS: ptr(tm(r.fct)), Slowdown: &slow},
		},
		Groups: []analysis.Group{{Name: "g", Flows: 2, GoodputBps: rate(1.5 * r.goodput), RTTUS: rtt,
			Slowdown: &analysis.Pct{Count: 1, Mean: slow, P50: slow, P99: slow}}},
		Queues: []analysis.Queue{{Name: "s1:p1", Utilisation: 0.9, Drops: 3, QueueDelayUS: qd, PacketDelayUS: tm(r.pktDelay),
			QueueBytes: &analysis.Pct{Count: 10, Mean: 10000, P50: 10000, P99: 20000}}},
	}
	if withPaper {
		for i := range s.Flows {
			f := &s.Flows[i]
			f.GoodputBpsPaper, f.RTTUSPaper = s.PaperRate(f.GoodputBps), s.PaperPct(f.RTTUS)
			if f.FCTUS != nil {
				f.FCTUSPaper = s.PaperTime(*f.FCTUS)
			}
		}
		g := &s.Groups[0]
		g.GoodputBpsPaper, g.RTTUSPaper = s.PaperRate(g.GoodputBps), s.PaperPct(g.RTTUS)
		s.Queues[0].QueueDelayUSPaper = s.PaperPct(qd)
	}
	return s
}

// eachDiff calls f with every difference of c, named.
func eachDiff(c *Comparison, f func(name string, d Diff)) {
	for _, g := range c.Groups {
		f("group goodput", g.Goodput)
		f("group RTT p99", g.RTTP99)
		f("group slowdown p99", g.SlowdownP99)
	}
	for _, fl := range c.Flows {
		f(fl.Name+" goodput", fl.Goodput)
		f(fl.Name+" RTT p50", fl.RTTP50)
		f(fl.Name+" RTT p99", fl.RTTP99)
		f(fl.Name+" FCT", fl.FCT)
	}
	for _, q := range c.Queues {
		f("port util", q.Utilisation)
		f("port delay mean", q.DelayMean)
		f("port delay p99", q.DelayP99)
		f("port packet delay", q.PacketDelay)
		f("port drops", q.Drops)
	}
}

func TestCompareUnits(t *testing.T) {
	for _, tt := range []struct {
		name       string
		a, b       *analysis.Summary
		units      string
		header     string
		goodputA   float64 // flow f1's goodput as compared, run A
		qdelayA    float64 // port s1:p1's mean queue delay as compared, run A
		pktDelayB  float64
		goodputRel float64
		rttRel     float64
	}{
		{name: "different τ, paper fields", a: summaryAt(paper1, 10, true), b: summaryAt(paper1, 100, true),
			units: PaperUnits, header: "in paper units: A at τ=10, B at τ=100",
			goodputA: 40e9, qdelayA: 2, pktDelayB: 1.5},
		{name: "different τ, derived from the emulator fields", a: summaryAt(paper1, 10, false), b: summaryAt(paper1, 100, false),
			units: PaperUnits, header: "in paper units: A at τ=10, B at τ=100",
			goodputA: 40e9, qdelayA: 2, pktDelayB: 1.5},
		{name: "different τ, one side with paper fields", a: summaryAt(paper1, 100, true), b: summaryAt(paper1, 10, false),
			units: PaperUnits, header: "in paper units: A at τ=100, B at τ=10",
			goodputA: 40e9, qdelayA: 2, pktDelayB: 1.5},
		{name: "equal τ: emulator units", a: summaryAt(paper1, 10, true), b: summaryAt(paper1, 10, true),
			units: EmulatorUnits, header: "in emulator units: A and B at τ=10",
			goodputA: 4e9, qdelayA: 20, pktDelayB: 15},
		{name: "no τ counts as 1", a: summaryAt(paper1, 1, false), b: func() *analysis.Summary { s := summaryAt(paper1, 1, false); s.TimeScale = 0; return s }(),
			units: EmulatorUnits, header: "in emulator units: A and B at τ=1",
			goodputA: 40e9, qdelayA: 2, pktDelayB: 1.5},
		// The same emulator numbers at τ = 10 and 100 are different paper results: B's
		// rates are 10× and its times a tenth of A's.
		{name: "same emulator values, different τ", a: summaryAt(paper1, 10, false), b: summaryAt(paperResult{goodput: 400e9, rttP50: 1, rttP99: 2, fct: 5, qdelay: 0.2, pktDelay: 0.15}, 100, false),
			units: PaperUnits, header: "in paper units: A at τ=10, B at τ=100",
			goodputA: 40e9, qdelayA: 2, pktDelayB: 0.15, goodputRel: 9, rttRel: -0.9},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(tt.a, tt.b)
			if c.Units != tt.units {
				t.Errorf("units %q, want %q", c.Units, tt.units)
			}
			f1, q := c.Flows[0], c.Queues[0]
			if !near(f1.Goodput.A, tt.goodputA) || !near(q.DelayMean.A, tt.qdelayA) || !near(q.PacketDelay.B, tt.pktDelayB) {
				t.Errorf("compared f1 goodput A %g (want %g), s1:p1 delay A %g (want %g), packet delay B %g (want %g)",
					f1.Goodput.A, tt.goodputA, q.DelayMean.A, tt.qdelayA, q.PacketDelay.B, tt.pktDelayB)
			}
			if !near(f1.Goodput.Rel, tt.goodputRel) || !near(f1.RTTP99.Rel, tt.rttRel) {
				t.Errorf("f1 goodput %+v, RTT p99 %+v; want rel %g and %g", f1.Goodput, f1.RTTP99, tt.goodputRel, tt.rttRel)
			}
			if tt.goodputRel == 0 {
				n := 0
				eachDiff(c, func(name string, d Diff) {
					if math.IsNaN(d.A) && math.IsNaN(d.B) {
						return // f1 has no FCT, m1 no RTT
					}
					n++
					if d.Rel != 0 && !near(d.Rel, 0) {
						t.Errorf("%s differs: %+v", name, d)
					}
				})
				if n != 3+3+2+5 {
					t.Errorf("%d values compared, want 13", n)
				}
				if d, _ := c.MaxGoodputDiff(); !near(d, 0) {
					t.Errorf("MaxGoodputDiff = %g", d)
				}
			}
			// Unit-free values compare as measured.
			if q.Utilisation.A != 0.9 || q.Drops.B != 3 || c.Groups[0].SlowdownP99.A != 1.5 {
				t.Errorf("unit-free values changed: util %+v, drops %+v, slowdown %+v", q.Utilisation, q.Drops, c.Groups[0].SlowdownP99)
			}
			var txt bytes.Buffer
			if err := c.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(txt.String(), tt.header) {
				t.Errorf("text lacks %q:\n%s", tt.header, txt.String())
			}
		})
	}
}

func TestInPaperUnits(t *testing.T) {
	s := summaryAt(paper1, 100, false)
	s.Queues[0].PauseUS = 500
	s.Fidelity.LatenessP99US = 300
	p := s.InPaperUnits()
	if p.TimeScale != 1 || !near(p.Flows[0].GoodputBps, 40e9) || !near(*p.Flows[1].FCTUS, 50) ||
		!near(p.Queues[0].PacketDelayUS, 1.5) || !near(p.Queues[0].PauseUS, 5) || !near(p.Fidelity.LatenessP99US, 3) {
		t.Errorf("in paper units: %+v", p)
	}
	// s is unchanged.
	if s.TimeScale != 100 || s.Flows[0].GoodputBps != 40e9/100 || s.Flows[0].RTTUS.P99 != 2000 || s.Queues[0].PacketDelayUS != 150 {
		t.Errorf("InPaperUnits changed its summary: %+v", s)
	}
	// A *_paper field wins over the emulator field.
	s.Flows[0].GoodputBpsPaper = ptr(39e9)
	if g := s.InPaperUnits().Flows[0]; g.GoodputBps != 39e9 || g.GoodputBpsPaper != nil {
		t.Errorf("with goodput_bps_paper: goodput %g, paper field %v", g.GoodputBps, g.GoodputBpsPaper)
	}
}

func TestDegradedRunIsFlagged(t *testing.T) {
	a, b := summaryAt(paper1, 10, true), summaryAt(paper1, 100, true)
	b.Fidelity = analysis.Fidelity{Verdict: "degraded", SkewRatio: 2.5, WorstPort: "h3:nic", StaleTimers: 4}
	c := Compare(a, b)
	if c.FidelityA != "ok" || c.FidelityB != "degraded" || !c.Degraded() {
		t.Fatalf("fidelity A %q, B %q", c.FidelityA, c.FidelityB)
	}
	var txt bytes.Buffer
	if err := c.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A = x/p (sim), τ=10, fidelity ok\n", "fidelity degraded (p99 schedule skew 2.5× what it may be at h3:nic; 4 frames read after a timer had fired)",
		"! B is degraded: a difference may come from the emulator not keeping up"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
}

// writeSummaryFile writes s as dir/summary.json.
func writeSummaryFile(t *testing.T, dir string, s *analysis.Summary) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(filepath.Join(dir, analysis.SummaryFile), s); err != nil {
		t.Fatal(err)
	}
}

// writeExperiment writes an experiment's results directory with a run per point, each
// at time scale tau with f1's goodput scaled by goodput[point]; withSweep writes
// sweep.json (in the order given) as `reef run` does, otherwise only the run directories.
func writeExperiment(t *testing.T, dir string, tau float64, withSweep bool, points []string, goodput map[string]float64) {
	t.Helper()
	var sw analysis.Sweep
	for _, p := range points {
		r := paper1
		if g, ok := goodput[p]; ok {
			r.goodput *= g
		}
		s := summaryAt(r, tau, true)
		s.Run = "x/" + p
		writeSummaryFile(t, filepath.Join(dir, p), s)
		sw.Runs = append(sw.Runs, analysis.SweepRun{Dir: p, Run: s.Run})
	}
	if withSweep {
		if err := writeJSON(filepath.Join(dir, analysis.SweepFile), &sw); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadResults(t *testing.T) {
	d := t.TempDir()
	run := filepath.Join(d, "run")
	writeSummaryFile(t, run, summaryAt(paper1, 10, true))
	withSweep, without := filepath.Join(d, "sweep"), filepath.Join(d, "partial")
	writeExperiment(t, withSweep, 10, true, []string{"cc=b", "cc=a"}, nil)
	writeExperiment(t, without, 10, false, []string{"cc=b", "cc=a"}, nil)
	if err := os.MkdirAll(filepath.Join(without, "cc=c"), 0o755); err != nil { // a point still running
		t.Fatal(err)
	}
	broken := filepath.Join(d, "broken")
	writeExperiment(t, broken, 10, true, []string{"cc=a"}, nil)
	if err := os.RemoveAll(filepath.Join(broken, "cc=a")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path       string
		experiment bool
		points     string // names, space-separated
		err        string
	}{
		{path: run, points: ""},
		{path: filepath.Join(run, analysis.SummaryFile), points: ""},
		{path: withSweep, experiment: true, points: "cc=b cc=a"}, // sweep.json's order
		{path: without, experiment: true, points: "cc=a cc=b"},   // by name, cc=c has no summary yet
		{path: broken, err: "lists run cc=a"},
		{path: t.TempDir(), err: "holds no summary.json, no sweep.json and no run directory"},
		{path: filepath.Join(d, "missing"), err: "no such file"},
	} {
		rs, err := ReadResults(tt.path)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ReadResults(%s) = %v, want an error with %q", tt.path, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ReadResults(%s): %v", tt.path, err)
			continue
		}
		var names []string
		for _, p := range rs.Points {
			names = append(names, p.Name)
			if p.Summary == nil || p.Summary.TimeScale != 10 {
				t.Errorf("%s: point %q summary %+v", tt.path, p.Name, p.Summary)
			}
		}
		if rs.Experiment != tt.experiment || strings.Join(names, " ") != tt.points {
			t.Errorf("ReadResults(%s): experiment %v, points %q; want %v, %q", tt.path, rs.Experiment, names, tt.experiment, tt.points)
		}
	}
}

func TestCompareSweeps(t *testing.T) {
	d := t.TempDir()
	a, b := filepath.Join(d, "sim"), filepath.Join(d, "netns")
	writeExperiment(t, a, 10, true, []string{"p1", "p2", "p3"}, nil)
	// B at τ = 100: p2 the same in paper units, p3's f1 20% faster, p4 not in A.
	writeExperiment(t, b, 100, true, []string{"p4", "p3", "p2"}, map[string]float64{"p3": 1.2})
	// p2's B run was degraded.
	s2 := summaryAt(paper1, 100, true)
	s2.Run, s2.Fidelity = "x/p2", analysis.Fidelity{Verdict: "degraded", StaleTimers: 1}
	writeSummaryFile(t, filepath.Join(b, "p2"), s2)
	ra, err := ReadResults(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := ReadResults(b)
	if err != nil {
		t.Fatal(err)
	}
	ten := 0.1
	sc, err := CompareSweeps(ra, rb, Limits{Goodput: &ten})
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Points) != 2 || sc.Points[0].Point != "p2" || sc.Points[1].Point != "p3" ||
		strings.Join(sc.OnlyA, ",") != "p1" || strings.Join(sc.OnlyB, ",") != "p4" {
		t.Fatalf("points %+v, only A %v, only B %v", sc.Points, sc.OnlyA, sc.OnlyB)
	}
	p2, p3 := sc.Points[0], sc.Points[1]
	if !near(p2.GoodputDiff, 0) || len(p2.Exceeded) != 0 || !near(p3.GoodputDiff, 0.2) || p3.GoodputFlow != "f1" ||
		len(p3.Exceeded) != 1 || sc.Pass || p3.Comparison.Units != PaperUnits {
		t.Errorf("p2 %+v\np3 %+v\npass %v", p2, p3, sc.Pass)
	}
	if ex := sc.Exceeded(); len(ex) != 3 || !strings.HasPrefix(ex[0], "p3: flow f1's goodput differs by 20.0% (limit 10.0%)") ||
		ex[1] != "p1: only in A, not compared" || ex[2] != "p4: only in B, not compared" {
		t.Errorf("Exceeded = %q", ex)
	}
	// Without a limit nothing fails, a point on one side only included; with one, that
	// point alone fails the comparison.
	unlimited, err := CompareSweeps(ra, rb, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !unlimited.Pass || len(unlimited.Exceeded()) != 0 {
		t.Errorf("no limits: pass %v, exceeded %q", unlimited.Pass, unlimited.Exceeded())
	}
	fifty := 0.5
	if wide, err := CompareSweeps(ra, rb, Limits{Goodput: &fifty}); err != nil || wide.Pass || len(wide.Exceeded()) != 2 {
		t.Errorf("limit 50%%: err %v, pass %v, exceeded %q; want the two one-sided points to fail it", err, wide.Pass, wide.Exceeded())
	}
	for _, detail := range []bool{false, true} {
		var txt bytes.Buffer
		if err := sc.WriteText(&txt, detail); err != nil {
			t.Fatal(err)
		}
		out := txt.String()
		for _, want := range []string{"in paper units: A at τ=10, B at τ=100", "limits: goodput 10.0% per flow",
			"only in A (not compared): p1", "only in B (not compared): p4", "2 points compared, 1 exceeds a limit",
			"! 1 of 2 points have a degraded run"} {
			if !strings.Contains(out, want) {
				t.Errorf("detail %v: text lacks %q:\n%s", detail, want, out)
			}
		}
		lines := map[string][]string{}
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				lines[f[0]] = f
			}
		}
		if got := strings.Join(lines["p2"], " "); got != "p2 ok degraded! +0.0% f1 +0.0% s1:p1 ok" {
			t.Errorf("p2's line: %q", got)
		}
		if got := strings.Join(lines["p3"], " "); got != "p3 ok ok +20.0% f1 +0.0% s1:p1 EXCEEDED: goodput" {
			t.Errorf("p3's line: %q", got)
		}
		if has := strings.Contains(out, "== p3 ==") && strings.Contains(out, "GOODPUT Gbit/s"); has != detail {
			t.Errorf("detail %v, yet the per-point tables are there: %v\n%s", detail, has, out)
		}
	}
	b2, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Points []struct {
			Point       string   `json:"point"`
			GoodputDiff *float64 `json:"max_goodput_diff"`
			Exceeded    []string `json:"exceeded"`
			Comparison  struct {
				Units      string `json:"units"`
				FidelityB  string `json:"fidelity_b"`
				TimeScaleB float64
			} `json:"comparison"`
		} `json:"points"`
		OnlyA []string `json:"only_a"`
		Pass  bool     `json:"pass"`
	}
	if err := json.Unmarshal(b2, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Points) != 2 || back.Points[1].GoodputDiff == nil || !near(*back.Points[1].GoodputDiff, 0.2) || len(back.Points[1].Exceeded) != 1 ||
		back.Points[0].Comparison.Units != "paper" || back.Points[0].Comparison.FidelityB != "degraded" || back.Pass || back.OnlyA[0] != "p1" {
		t.Errorf("JSON: %s", b2)
	}

	// A run against an experiment, and experiments without a common point, are errors.
	run := filepath.Join(d, "one")
	writeSummaryFile(t, run, summaryAt(paper1, 10, true))
	rr, err := ReadResults(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CompareSweeps(ra, rr, Limits{}); err == nil || !strings.Contains(err.Error(), "is an experiment's results directory with 3 sweep points but B") {
		t.Errorf("experiment against a run: %v", err)
	}
	other := filepath.Join(d, "other")
	writeExperiment(t, other, 10, true, []string{"q1"}, nil)
	ro, err := ReadResults(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CompareSweeps(ra, ro, Limits{}); err == nil || !strings.Contains(err.Error(), "no sweep point in common") {
		t.Errorf("no common point: %v", err)
	}
}

func ptr(v float64) *float64 { return &v }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// writeJSON writes v to path as the report packages write their files.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
