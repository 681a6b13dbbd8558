package calibrate

import (
	"context"
	"strings"
	"testing"
	"time"

	_ "reef/cc/all"
	"reef/emulator/experiment"
	"reef/emulator/plan"
	"reef/units"
)

// Every trial's document is a valid experiment on netns at every time scale tried,
// whose links run at PaperRate / T there.
func TestDocsCompile(t *testing.T) {
	for _, topo := range Topologies {
		for _, ts := range []float64{TimeScales[0], TimeScales[len(TimeScales)-1]} {
			x, err := experiment.Parse("trial.yaml", []byte(Doc(topo, 1500, ts)))
			if err != nil {
				t.Fatalf("%s at %v: %v", topo, ts, err)
			}
			runs, err := x.CompileAll(experiment.CompileOptions{Backend: "netns"})
			if err != nil {
				t.Fatalf("%s at %v: %v", topo, ts, err)
			}
			if got, want := maxRate(runs[0].Plan), units.Rate(float64(PaperRate)/ts); got != want {
				t.Errorf("%s at %v: links at %v on netns, want %v", topo, ts, got, want)
			}
		}
	}
}

func maxRate(p *plan.Plan) units.Rate {
	var r units.Rate
	for _, l := range p.Links {
		r = max(r, l.Rate)
	}
	return r
}

// The search goes faster until two rates in a row come out degraded, and keeps the
// fastest that came out ok (a single degraded rate between two ok ones is noise).
func TestMeasureKeepsFastestOK(t *testing.T) {
	// ok up to 200 Mbit/s (T = 500), except a fluke at T = 2000; degraded beyond.
	verdict := func(doc string) string {
		switch {
		case strings.Contains(doc, "netns: 2000,"):
			return "degraded"
		case strings.Contains(doc, "netns: 200,"), strings.Contains(doc, "netns: 100,"), strings.Contains(doc, "netns: 50,"):
			return "degraded"
		}
		return "ok"
	}
	trials := 0
	got, err := Measure(context.Background(), []int{1500}, func(_ context.Context, doc string) (string, string, error) {
		trials++
		return verdict(doc), "", nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(Topologies) {
		t.Fatalf("%d limits, want one per topology", len(got))
	}
	for _, l := range got {
		if l.MaxRate != 200*units.Mbps {
			t.Errorf("%s: max rate %v, want 200Mbps", l.Topology, l.MaxRate)
		}
		if last := l.Trials[len(l.Trials)-1]; last.TimeScale != 100 {
			t.Errorf("%s: stopped after T = %v, want after the second degraded rate in a row (T = 100)", l.Topology, last.TimeScale)
		}
	}
	if trials != 2*8 {
		t.Errorf("%d trials, want 8 per topology", trials)
	}
}

// Check flags a plan whose links are faster than the limit for its kind of fabric and
// MTU, and only then.
func TestCheck(t *testing.T) {
	lim := &Limits{Date: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), Limits: []Limit{
		{Topology: "chain", MTU: 1500, MaxRate: 400 * units.Mbps},
		{Topology: "chain", MTU: 4096, MaxRate: 1 * units.Gbps},
		{Topology: "fat-tree", MTU: 1500, MaxRate: 100 * units.Mbps},
	}}
	mk := func(switches int, rate units.Rate, mtu int) *plan.Plan {
		p := &plan.Plan{Switches: make([]plan.Switch, switches)}
		p.Links = []plan.Link{{Rate: rate / 10, MTU: 1500}, {Rate: rate, MTU: mtu}}
		return p
	}
	for _, tc := range []struct {
		name string
		p    *plan.Plan
		warn string // "" for none
	}{
		{"chain under", mk(3, 400*units.Mbps, 1500), ""},
		{"chain over", mk(3, 500*units.Mbps, 1500), "400Mbps for a chain at MTU 1500"},
		{"bigger MTU, its own limit", mk(3, 800*units.Mbps, 4096), ""},
		{"MTU between: the next measured above", mk(3, 2*units.Gbps, 3000), "for a chain at MTU 4096"},
		{"jumbo: the largest measured", mk(3, 2*units.Gbps, 9000), "for a chain at MTU 4096"},
		{"fat-tree", mk(20, 200*units.Mbps, 1500), "100Mbps for a fat-tree"},
	} {
		w, err := lim.Check(tc.p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (tc.warn == "") != (w == "") || !strings.Contains(w, tc.warn) {
			t.Errorf("%s: warning %q, want one containing %q", tc.name, w, tc.warn)
		}
	}
	if _, err := (&Limits{}).Check(mk(3, units.Gbps, 1500)); err != ErrNoLimit {
		t.Errorf("no limits: %v, want ErrNoLimit", err)
	}
}
