package comparison

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"reef/emulator/analysis"

	"reef/emulator/analysis/analysistest"
	"reef/emulator/expect"
	"reef/emulator/plan"
	"reef/emulator/render"
)

func testPlan(t *testing.T) *plan.Plan { return analysistest.Plan(t) }

var testRun = analysistest.Run

func TestCompareRunDirs(t *testing.T) {
	p := testPlan(t)
	dir := t.TempDir()
	write := func(name, backend string, goodA, goodB float64) string {
		sc, run := testRun("exp", goodA, goodB)
		run.Backend = backend
		s, err := analysis.Summarize(p, sc, run, []*expect.Expectation{})
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(dir, name)
		if err := render.WriteRun(d, s, nil); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// B: flow a at 0.95× (47.5 Mbps), b at 1.2× (30 Mbps).
	da, db := write("sim", "sim", 1, 1), write("netns", "netns", 0.95, 1.2)
	sa, err := analysis.ReadSummary(da)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := analysis.ReadSummary(filepath.Join(db, analysis.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	c := Compare(sa, sb)
	if len(c.Flows) != 3 || len(c.Queues) != 2 || len(c.OnlyA)+len(c.OnlyB) != 0 {
		t.Fatalf("comparison = %+v", c)
	}
	a := c.Flows[0]
	if a.Name != "a" || a.Goodput.A != 50e6 || a.Goodput.B != 47.5e6 || a.Goodput.Abs != -2.5e6 || !near(a.Goodput.Rel, -0.05) {
		t.Errorf("flow a goodput = %+v", a.Goodput)
	}
	if !near(c.Flows[1].Goodput.Rel, 0.2) || a.RTTP50.Rel != 0 || !math.IsNaN(a.FCT.Rel) {
		t.Errorf("flow b goodput %+v, a RTT %+v, a FCT %+v", c.Flows[1].Goodput, a.RTTP50, a.FCT)
	}
	// The goodput limit looks at the long-lived flows a and b: b is 20% off.
	if d, f := c.MaxGoodputDiff(); !near(d, 0.2) || f != "b" {
		t.Errorf("MaxGoodputDiff = %v, %s", d, f)
	}
	// s1:p3 is 75% busy, same queue in both runs.
	if d, port := c.MaxQueueDelayDiff(); d != 0 || port != "s1:p3" {
		t.Errorf("MaxQueueDelayDiff = %v, %s", d, port)
	}
	// Groups: bulk 75 → 77.5 Mbps; msg's one message has the same slowdown in both.
	if len(c.Groups) != 2 || c.Groups[0].Name != "bulk" || !near(c.Groups[0].Goodput.Rel, 2.5/75) ||
		c.Groups[1].SlowdownP99.Rel != 0 || c.Groups[1].FinishedFlow.A != 1 {
		t.Errorf("groups = %+v", c.Groups)
	}
	var txt bytes.Buffer
	if err := c.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"exp (sim)", "exp (netns)", "47.50", "-5.0%", "+20.0%", "s1:p3", "GROUP", "SLOWDOWN p99", "+3.3%"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	if strings.Contains(txt.String(), "s2:p3") {
		t.Errorf("text shows the idle port s2:p3:\n%s", txt.String())
	}
	b, err := json.Marshal(c)
	if err != nil || !strings.Contains(string(b), `"rel":null`) {
		t.Errorf("JSON = %s, %v", b, err)
	}
}

func TestDiff(t *testing.T) {
	for _, tt := range []struct{ a, b, rel float64 }{
		{100, 110, 0.1}, {100, 90, -0.1}, {0, 0, 0}, {-2, -1, 0.5}, {0, 5, math.Inf(1)},
	} {
		if d := diff(tt.a, tt.b); d.Rel != tt.rel && !near(d.Rel, tt.rel) {
			t.Errorf("diff(%v, %v).Rel = %v, want %v", tt.a, tt.b, d.Rel, tt.rel)
		}
	}
	if !math.IsNaN(diff(math.NaN(), 1).Rel) {
		t.Error("a missing value gives a relative difference")
	}
}

func TestCompareTextKeepsTheWorstFlows(t *testing.T) {
	var a, b analysis.Summary
	for i := 0; i < 100; i++ {
		name := "f" + strconv.Itoa(i)
		a.Flows = append(a.Flows, analysis.Flow{Name: name, GoodputBps: 100})
		b.Flows = append(b.Flows, analysis.Flow{Name: name, GoodputBps: 100 + float64(i)})
	}
	var txt bytes.Buffer
	if err := Compare(&a, &b).WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	if !strings.Contains(out, "the 40 of 100 flows") || !strings.Contains(out, " f99 ") || !strings.Contains(out, " f60 ") || strings.Contains(out, " f59 ") {
		t.Errorf("text output:\n%s", out)
	}
}

// MaxQueueDelayDiff looks at busy ports whose mean queue holds a frame in one run at
// least: under that, the relative difference is rounding.
func TestMaxQueueDelayDiffFloor(t *testing.T) {
	// A queue's mean delay in µs at 100 Gbit/s, and its mean bytes (12.5 KB per µs).
	q := func(name string, util, usA, usB float64) QueueDiff {
		return QueueDiff{Name: name, Utilisation: diff(util, util), DelayMean: diff(usA, usB), BytesMean: diff(12500*usA, 12500*usB)}
	}
	for _, tc := range []struct {
		name   string
		queues []QueueDiff
		want   float64
		port   string
	}{
		// 0.1 µs at 100 Gbit/s is 1250 B: under a frame in both runs.
		{"sub-frame queues only", []QueueDiff{q("s1:p1", 0.9, 0.1, 0.05)}, 0, ""},
		{"a frame in B", []QueueDiff{q("s1:p1", 0.9, 0.1, 0.2)}, 1, "s1:p1"},
		{"the sub-frame port is left out", []QueueDiff{q("s1:p1", 0.9, 0.08, 0.02), q("s1:p2", 0.9, 2, 2.2)}, 0.1, "s1:p2"},
		{"idle ports are left out", []QueueDiff{q("s1:p1", 0.2, 5, 10), q("s1:p2", 0.9, 2, 1.8)}, 0.1, "s1:p2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Comparison{Queues: tc.queues}
			if d, port := c.MaxQueueDelayDiff(); !near(d, tc.want) || port != tc.port {
				t.Errorf("MaxQueueDelayDiff = %v at %q, want %v at %q", d, port, tc.want, tc.port)
			}
		})
	}
}
