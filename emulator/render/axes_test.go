package render

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"reef/emulator/analysis"

	"reef/emulator/expect"
)

func TestChooseUnit(t *testing.T) {
	for _, c := range []struct {
		units  quantity
		extent float64
		want   string
	}{
		{durationUnits, 0.0667, "ms"}, // a 50 ms queue delay with headroom: not 66666.67 µs
		{durationUnits, 0.005, "ms"},
		{durationUnits, 0.3, "ms"}, // a 300 ms run
		{durationUnits, 1.5, "s"},
		{durationUnits, 999e-6, "µs"},
		{durationUnits, 1e-6, "µs"},
		{durationUnits, 400e-9, "ns"},
		{durationUnits, 0, "ns"},
		{durationUnits, durationUnits.flat * 4 / 3, "µs"}, // all zero, with headroom
		{rateUnits, 533e6, "Mbit/s"},
		{rateUnits, 2e9, "Gbit/s"},
		{rateUnits, 500, "bit/s"},
		{byteUnits, 64e3, "KB"},
		{byteUnits, 1.5e6, "MB"},
		{plainUnits, 12345, ""},
	} {
		if got := chooseUnit(c.units, c.extent).name; got != c.want {
			t.Errorf("chooseUnit(%v, %g) = %q, want %q", c.units, c.extent, got, c.want)
		}
	}
}

// The labelled ticks an axis over [lo, hi] (base units) gets in the unit it chooses:
// short, evenly spaced, no more decimals than the step needs.
func TestAxisTicks(t *testing.T) {
	for _, c := range []struct {
		name      string
		units     quantity
		lo, hi    float64
		wantUnit  string
		wantTicks string
	}{
		{"queue delay of 4 ms", durationUnits, 0, 0.00533, "ms", "0 1 2 3 4 5"},
		{"queue delay of 50 ms", durationUnits, 0, 0.0667, "ms", "0 10 20 30 40 50 60"},
		{"a 300 ms run", durationUnits, 0, 0.2999, "ms", "0 50 100 150 200 250"},
		{"a 1.5 ms run", durationUnits, 0, 0.0015, "ms", "0 0.2 0.4 0.6 0.8 1.0 1.2 1.4"},
		{"RTTs of 5-12 µs", durationUnits, 5e-6, 12e-6, "µs", "5 6 7 8 9 10 11 12"},
		{"goodput to 533 Mbit/s", rateUnits, 0, 533e6, "Mbit/s", "0 100 200 300 400 500"},
		{"a share ratio", plainUnits, 0, 1.33, "", "0 0.2 0.4 0.6 0.8 1.0 1.2"},
		{"a sweep of M", plainUnits, 2, 4, "", "2.0 2.5 3.0 3.5 4.0"},
		{"negative values", plainUnits, -10, 10, "", "-10 -5 0 5 10"},
		{"no queueing at all", durationUnits, 0, 0, "µs", "0 0.2 0.4 0.6 0.8 1.0 1.2"},
		{"a flat rate", rateUnits, 0, 0, "Mbit/s", "0 0.2 0.4 0.6 0.8 1.0 1.2"},
	} {
		p := newPlot("", "", "")
		p.Y.Min, p.Y.Max = c.lo, c.hi
		if c.lo == c.hi {
			yAxis(p, "x ({unit})", c.units) // flat data: the axis gets its height and room for the legend
		} else {
			setAxis(&p.Y, "x ({unit})", c.units)
		}
		a := p.Y
		if want := "x (" + c.wantUnit + ")"; a.Label.Text != want {
			t.Errorf("%s: label %q, want %q", c.name, a.Label.Text, want)
		}
		var labels []string
		for _, tk := range a.Tick.Marker.Ticks(a.Min, a.Max) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if got := strings.Join(labels, " "); got != c.wantTicks {
			t.Errorf("%s: ticks %q, want %q", c.name, got, c.wantTicks)
		}
	}
}

// A check that applies at one value of a swept variable (starved: M > 0, with M ∈ {0,
// 2}) gets no plot against that variable, where it would be one column of points on an
// empty axis, but a table in the sweep's report.html; against N, where it applies at
// both values, it is still plotted.
func TestSweepCheckAtOneValueIsATable(t *testing.T) {
	p := testPlan(t)
	xs := parse(t,
		expect.Spec{Name: "b-share", Check: "b.goodput >= 0.4 * b.fair_share"},
		expect.Spec{Name: "starved", When: "M > 0", Check: "b.goodput < 0.9 * b.fair_share", Claim: "b starves"},
	)
	dir := t.TempDir()
	var runs []analysis.RunEntry
	for _, r := range []struct {
		m, n string
		b    float64
	}{{"0", "2", 1}, {"0", "4", 1}, {"2", "2", 0.5}, {"2", "4", 0.25}} {
		sc, run := testRun("exp/cc=swift,M="+r.m+",N="+r.n, 1, r.b)
		s, err := analysis.Summarize(p, sc, run, xs)
		if err != nil {
			t.Fatal(err)
		}
		rd := filepath.Join(dir, "M"+r.m+"-N"+r.n)
		if err := WriteRun(rd, s, nil); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, analysis.RunEntry{Dir: rd, Summary: s})
	}
	if _, err := WriteSweep(dir, runs); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, analysis.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]bool{"sweep-starved-vs-m": false, "sweep-starved-vs-n": true, "sweep-b-share-vs-m": true, "sweep-b-share-vs-n": true} {
		_, err := os.Stat(filepath.Join(dir, "plots", f+".png"))
		if got := err == nil; got != want {
			t.Errorf("plot %s drawn: %v, want %v", f, got, want)
		}
		if got := bytes.Contains(page, []byte(`id="`+f+`"`)); got != want {
			t.Errorf("report.html shows %s: %v, want %v", f, got, want)
		}
	}
	table := regexp.MustCompile(`(?s)<figure id="check-starved" class="check">.*?</figure>`).Find(page)
	if table == nil {
		t.Fatalf("report.html has no table for starved:\n%s", page)
	}
	for _, want := range []string{"M=2 N=2 cc=swift", "M=2 N=4 cc=swift", "applies only at M = 2", "b starves"} {
		if !bytes.Contains(table, []byte(want)) {
			t.Errorf("starved's table lacks %q:\n%s", want, table)
		}
	}
	if rows := bytes.Count(table, []byte("<tr>")); rows != 3 {
		t.Errorf("starved's table has %d rows, want a header and one per run it applies to (2)", rows-1)
	}
	if bytes.Contains(page, []byte(`id="check-b-share"`)) {
		t.Error("b-share, which applies at every M and N, is shown as a table")
	}
}
