package expect

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	_ "reef/cc/all" // registered algorithm names mark references to other runs
	"reef/emulator/metrics"
	"reef/units"
)

// testEnv is a run with a victim (40 of a 50 Mbps share), two bulk flows and three
// finished messages, and one port.
func testEnv(cc string, victim units.Rate, conv units.Time) *Env {
	series := func(share float64, settle units.Time) []metrics.Point {
		var ps []metrics.Point
		for t := units.Millisecond; t <= 10*units.Millisecond; t += units.Millisecond {
			r := share
			if t < settle {
				r = share / 2
			}
			ps = append(ps, metrics.Point{T: t, Rate: r, Share: share})
		}
		return ps
	}
	return &Env{
		Vars: map[string]string{"cc": cc, "M": "2"},
		From: 0, To: 10 * units.Millisecond,
		Flows: []Flow{
			{Name: "victim", Group: "victim", CC: cc, Goodput: victim, FairShare: 50 * units.Mbps, LineRate: 100 * units.Mbps,
				RTT: []units.Time{10 * units.Microsecond, 20 * units.Microsecond, 30 * units.Microsecond}, Series: series(50e6, conv), End: 10 * units.Millisecond},
			{Name: "bulk1", Group: "bulk", CC: cc, Goodput: 30 * units.Mbps, FairShare: 50 * units.Mbps, Series: series(50e6, conv), End: 10 * units.Millisecond},
			{Name: "bulk2", Group: "bulk", CC: cc, Goodput: 10 * units.Mbps, FairShare: 50 * units.Mbps, Series: series(50e6, conv), End: 10 * units.Millisecond},
			{Name: "m1", Group: "msg", CC: cc, Size: 10 * units.Kilobyte, FCT: 30 * units.Microsecond, IdealFCT: 10 * units.Microsecond},
			{Name: "m2", Group: "msg", CC: cc, Size: 50 * units.Kilobyte, FCT: 100 * units.Microsecond, IdealFCT: 50 * units.Microsecond},
			{Name: "m3", Group: "msg", CC: cc, Size: 2 * units.Megabyte, FCT: 4 * units.Millisecond, IdealFCT: 4 * units.Millisecond},
		},
		Ports: []Port{{Name: "s1:p3", Utilisation: 0.9, Drops: 3, QueueDelay: []units.Time{0, 10 * units.Microsecond, 60 * units.Microsecond}}},
	}
}

func TestEvaluateRun(t *testing.T) {
	env := testEnv("poseidon", 40*units.Mbps, 3*units.Millisecond)
	env.TimeScale = 10
	tests := []struct {
		check, when  string
		value, bound float64
		pass         bool
		err          string
	}{
		{check: "victim.goodput >= 0.85 * victim.fair_share", value: 40e6, bound: 42.5e6, pass: false},
		{check: "victim.goodput >= 0.75 * fair_share(victim)", value: 40e6, bound: 37.5e6, pass: true},
		// bulk goodputs 30 and 10: (40)²/(2·(900+100)) = 0.8
		{check: "jain(bulk) >= 0.95", value: 0.8, bound: 0.95},
		{check: "bulk.goodput == 40Mbps", value: 40e6, bound: 40e6, pass: true},
		{check: "bulk.goodput_min < victim.goodput_mean", value: 10e6, bound: 40e6, pass: true},
		// slowdowns of finished messages: 3, 2, 1 → p99 (nearest rank) = 3; small (<100KB) = {3, 2}
		{check: "p99(fct_slowdown(msg)) <= 10", value: 3, bound: 10, pass: true},
		{check: "p50(fct_slowdown(small)) <= 2", value: 2, bound: 2, pass: true},
		{check: "fct_slowdown_max(all, 1MB) < 1.5", value: 1, bound: 1.5, pass: true},
		{check: "count(fct(msg, 0, 60KB)) == 2", value: 2, bound: 2, pass: true},
		{check: "queue_delay_p99(s1:p3) < 50us", value: 60e3, bound: 50e3},
		{check: "s1:p3.queue_delay_p50 < 50us", value: 10e3, bound: 50e3, pass: true},
		{check: "s1:p3.drops + 1 == 4", value: 4, bound: 4, pass: true},
		{check: "victim.rtt_mean == 20us", value: 20e3, bound: 20e3, pass: true},
		// τ = 10: 2 µs of paper time is 20 µs here; 400 Mbps in the paper is 40 here.
		{check: "victim.rtt_mean <= paper(2us)", value: 20e3, bound: 20e3, pass: true},
		{check: "victim.goodput >= paper(400Mbps) - 1bps", value: 40e6, bound: 40e6 - 1, pass: true},
		{check: "jain(bulk) < paper(0.9)", value: 0.8, bound: 0.9, pass: true},
		// every flow at half its share until 3ms, then at it: converged at 3ms, from 0 (the
		// last start).
		{check: "convergence_time(bulk) <= 3ms", value: 3e6, bound: 3e6, pass: true},
		{check: "convergence_time(poseidon, 2ms) < 1.5ms", value: 1e6, bound: 1.5e6, pass: true},
		// until cuts the window: ending at 2ms, before the flows settle, they never converged
		{check: "convergence_time(bulk, 0, 2ms) <= 3ms", value: math.Inf(1), bound: 3e6},
		{check: "convergence_time(bulk, 0, 5ms) <= 3ms", value: 3e6, bound: 3e6, pass: true},
		// median of +Inf, 3ms and 1ms is 3ms; of four, the mean of the middle two
		{check: "median(convergence_time(bulk, 0, 2ms), convergence_time(bulk), 1ms) == 3ms", value: 3e6, bound: 3e6, pass: true},
		{check: "median(4ms, 1ms, 2ms, 8ms) == 3ms", value: 3e6, bound: 3e6, pass: true},
		{check: "min(3ms, 1ms, 2ms) + max(3ms, 1ms, 2ms) == 4ms", value: 4e6, bound: 4e6, pass: true},
		// nearest rank: a third of six is the second smallest, a quarter the second too,
		// 0 the smallest, 1 the largest (+Inf counts as a value)
		{check: "quantile(1/3, 9ms, 1ms, 5ms, convergence_time(bulk, 0, 2ms), 2ms, 7ms) == 2ms", value: 2e6, bound: 2e6, pass: true},
		{check: "quantile(0.25, 9ms, 1ms, 5ms, 3ms, 2ms, 7ms) == 2ms", value: 2e6, bound: 2e6, pass: true},
		{check: "quantile(0, 9ms, 1ms, 5ms) + quantile(1, 9ms, 1ms, 5ms) == 10ms", value: 10e6, bound: 10e6, pass: true},
		{check: "quantile(1, 1ms, convergence_time(bulk, 0, 2ms)) > 1s", value: math.Inf(1), bound: 1e9, pass: true},
		{check: "victim.goodput >= 0.85 * victim.fair_share", when: "cc == 'swift'"},
		{check: "victim.goodput > 0", when: "M >= 2 && cc != 'swift'", value: 40e6, bound: 0, pass: true},
		{check: "p99(rtt(nobody)) < 1ms", value: math.NaN(), bound: 1e6, err: `no flow group, flow or cc "nobody"`},
		{check: "p99(fct(bulk)) < 1ms", value: math.NaN(), bound: 1e6, err: "p99: no samples"},
	}
	for _, tt := range tests {
		x, err := Parse(Spec{Name: "t", Check: tt.check, When: tt.when})
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.check, err)
		}
		rs := EvaluateRun([]*Expectation{x}, env)
		if tt.when == "cc == 'swift'" {
			if len(rs) != 0 {
				t.Errorf("%q with when %q evaluated on a poseidon run", tt.check, tt.when)
			}
			continue
		}
		if len(rs) != 1 {
			t.Fatalf("%q: %d results", tt.check, len(rs))
		}
		r := rs[0]
		same := func(a, b float64) bool {
			return a == b || math.Abs(a-b) < 1e-9*math.Abs(b) || (math.IsNaN(a) && math.IsNaN(b))
		}
		if !same(r.Value, tt.value) || !same(r.Bound, tt.bound) || r.Pass != tt.pass || !strings.Contains(r.Error, tt.err) || (tt.err == "") != (r.Error == "") {
			t.Errorf("%q = value %v bound %v pass %v err %q; want %v %v %v %q", tt.check, r.Value, r.Bound, r.Pass, r.Error, tt.value, tt.bound, tt.pass, tt.err)
		}
	}
}

func TestEvaluateSweep(t *testing.T) {
	runs := []*Env{
		testEnv("poseidon", 45*units.Mbps, 2*units.Millisecond),
		testEnv("swift", 20*units.Mbps, 7*units.Millisecond),
	}
	runs = append(runs, testEnv("poseidon", 44*units.Mbps, 2*units.Millisecond), testEnv("swift", 10*units.Mbps, 9*units.Millisecond))
	runs[2].Vars["M"], runs[3].Vars["M"] = "4", "4"
	xs, err := ParseAll([]Spec{
		{Name: "conv", Check: "convergence_time(poseidon) * 3 <= convergence_time(swift)"},
		{Name: "share", Check: "victim.goodput >= 0.85 * victim.fair_share", When: "cc == 'poseidon'"},
		{Name: "ratio", Check: "poseidon:victim.goodput >= 4 * swift:victim.goodput", When: "M >= 2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cat := &Catalogue{Groups: []string{"victim", "bulk", "msg"}, Vars: map[string][]string{"cc": {"poseidon", "swift"}, "M": {"2", "4"}}}
	for _, x := range xs {
		if err := x.Resolve(cat); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]Result{}
	for _, r := range Evaluate(xs, runs) {
		got[r.Label()] = r
	}
	want := map[string]struct {
		value, bound float64
		pass         bool
	}{
		"conv [M=2]":              {6e6, 7e6, true},
		"conv [M=4]":              {6e6, 9e6, true},
		"share [M=2 cc=poseidon]": {45e6, 42.5e6, true},
		"share [M=4 cc=poseidon]": {44e6, 42.5e6, true},
		"ratio [M=2]":             {45e6, 80e6, false},
		"ratio [M=4]":             {44e6, 40e6, true},
	}
	if len(got) != len(want) {
		t.Errorf("got results %v", got)
	}
	for k, w := range want {
		r, ok := got[k]
		if !ok || r.Value != w.value || r.Bound != w.bound || r.Pass != w.pass || r.Error != "" {
			t.Errorf("%s = %+v, want %+v", k, r, w)
		}
	}
	// A single run of the sweep does not evaluate checks that compare runs.
	if rs := EvaluateRun(xs, runs[0]); len(rs) != 1 || rs[0].Name != "share" {
		t.Errorf("EvaluateRun on one run = %+v, want only share", rs)
	}
	// A sweep narrowed by reef run --only (swift at M=4 left out) evaluates a check
	// comparing runs only where every run it names is there, whether resolved against
	// the whole sweep or, as reef report reads them back, not.
	reparsed, err := ParseAll([]Spec{xs[0].Spec, xs[1].Spec, xs[2].Spec})
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range [][]*Expectation{xs, reparsed} {
		var labels []string
		for _, r := range Evaluate(set, runs[:3]) {
			labels = append(labels, r.Label())
			if w := want[r.Label()]; r.Value != w.value || r.Pass != w.pass || r.Error != "" {
				t.Errorf("narrowed sweep: %s = %+v, want %+v", r.Label(), r, w)
			}
		}
		slices.Sort(labels)
		if want := []string{"conv [M=2]", "ratio [M=2]", "share [M=2 cc=poseidon]", "share [M=4 cc=poseidon]"}; !slices.Equal(labels, want) {
			t.Errorf("narrowed sweep evaluated %q, want %q", labels, want)
		}
		if rs := Evaluate(set[:1], runs[:1]); len(rs) != 0 {
			t.Errorf("a check comparing runs, its partner left out: %+v, want it not evaluated", rs)
		}
	}
	// JSON: an infinite value is null, and reads back as NaN.
	b, err := json.Marshal(Result{Name: "x", Value: math.Inf(1), Bound: 3})
	if err != nil || !strings.Contains(string(b), `"value":null`) || !strings.Contains(string(b), `"bound":3`) {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || !math.IsNaN(back.Value) || back.Bound != 3 {
		t.Errorf("Unmarshal = %+v, %v", back, err)
	}
}

// Without Resolve (a check re-read from a results directory), a bare cc value is still
// recognised as a reference to another run.
func TestCrossRunWithoutCatalogue(t *testing.T) {
	x, err := Parse(Spec{Name: "conv", Check: "convergence_time(poseidon) * 3 <= convergence_time(swift)"})
	if err != nil {
		t.Fatal(err)
	}
	p, s := testEnv("poseidon", 45*units.Mbps, 2*units.Millisecond), testEnv("swift", 20*units.Mbps, 7*units.Millisecond)
	if rs := EvaluateRun([]*Expectation{x}, p); len(rs) != 0 {
		t.Errorf("EvaluateRun on one run of the sweep = %+v, want nothing", rs)
	}
	rs := Evaluate([]*Expectation{x}, []*Env{p, s})
	if len(rs) != 1 || !rs[0].Pass || rs[0].Value != 6e6 || rs[0].Bound != 7e6 {
		t.Errorf("Evaluate = %+v", rs)
	}
}

func TestDimFormat(t *testing.T) {
	for _, tt := range []struct {
		d    Dim
		v    float64
		want string
	}{
		{DimRate, 97615572, "97.62Mbps"}, {DimRate, 1.645947072e9, "1.646Gbps"}, {DimRate, 0, "0bps"},
		{DimTime, 4208600, "4.209ms"}, {DimTime, 50e3, "50us"}, {DimTime, 12, "12ns"}, {DimTime, -2e6, "-2ms"},
		{DimBytes, 1.5e6, "1.5MB"}, {DimNone, 0.93124, "0.9312"}, {DimNone, math.Inf(1), "+Inf"},
	} {
		if got := tt.d.Format(tt.v); got != tt.want {
			t.Errorf("%v.Format(%v) = %q, want %q", tt.d, tt.v, got, tt.want)
		}
	}
}
