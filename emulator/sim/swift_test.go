package sim

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"reef/cc"
	"reef/emulator/metrics"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/emulator/topo"
	"reef/units"

	_ "reef/cc/swift"
)

// swiftDumbbell runs n long-lived Swift flows h1…hn → h9…h(8+n) across the 1 Gbit/s
// dumbbell of topologies/dumbbell.yaml (18 µs links, τ ≈ 73 per its comment) for d and
// returns the results and the bottleneck port's index in them.
func swiftDumbbell(t *testing.T, n int, d units.Time) (run *results.Run, bottleneck int) {
	t.Helper()
	tp, err := topo.Load("../../topologies/dumbbell.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := cc.Lookup("swift")
	if err != nil {
		t.Fatal(err)
	}
	prm := spec.Defaults()
	if err := cc.ScaleParams(prm, 73.24); err != nil { // spec poseidon.md §7.3 config B
		t.Fatal(err)
	}
	raw, _ := json.Marshal(prm)
	sc := &scenario.Scenario{Name: "swift-dumbbell", Seed: 1, Duration: d, SampleInterval: units.Millisecond}
	for i := 1; i <= n; i++ {
		sc.Flows = append(sc.Flows, scenario.Flow{ID: uint32(i), Name: fmt.Sprintf("f%d", i), Group: "f",
			Src: fmt.Sprintf("h%d", i), Dst: fmt.Sprintf("h%d", 8+i), CC: "swift", CCParams: raw})
	}
	s, err := New(p, sc)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(d)
	r := s.Results()
	bottleneck = -1
	for i, pr := range r.Ports {
		if pr.Switch == "s1" && strings.HasPrefix(pr.Peer, "s2") {
			bottleneck = i
		}
	}
	if bottleneck < 0 {
		t.Fatal("no s1 → s2 port in the results")
	}
	return r, bottleneck
}

// One Swift flow keeps a 1 Gbit/s bottleneck at least 95% busy; four share it with
// Jain's index ≥ 0.99 (measured over the second half of the run).
func TestSwiftDumbbell(t *testing.T) {
	const d = 400 * units.Millisecond
	from := d / 2
	for _, tc := range []struct {
		n       int
		minUtil float64
		minJain float64
	}{{1, 0.95, 1}, {4, 0.95, 0.99}} {
		t.Run(fmt.Sprintf("%d flows", tc.n), func(t *testing.T) {
			r, b := swiftDumbbell(t, tc.n, d)
			port := r.Ports[b]
			util := portUtil(port.Samples, from, d, port.Rate)
			var rates []float64
			for _, f := range r.Flows {
				rates = append(rates, float64(metrics.Goodput(f.Start, f.Samples, from, d)))
			}
			jain := metrics.Jain(rates)
			t.Logf("bottleneck %s:%s utilisation %.4f, goodputs %v, Jain %.4f", port.Switch, port.Name, util, rates, jain)
			if util < tc.minUtil {
				t.Errorf("bottleneck utilisation %.4f < %.2f", util, tc.minUtil)
			}
			if jain < tc.minJain-1e-9 {
				t.Errorf("Jain %.4f < %.2f", jain, tc.minJain)
			}
		})
	}
}

// portUtil is the port's wire utilisation between the samples at or after from and the
// last one up to to.
func portUtil(samples []results.PortSample, from, to units.Time, rate units.Rate) float64 {
	var a, b *results.PortSample
	for i := range samples {
		s := &samples[i]
		if a == nil && s.T >= from {
			a = s
		}
		if s.T <= to {
			b = s
		}
	}
	if a == nil || b == nil || b.T <= a.T {
		return 0
	}
	return float64(b.TxBytes-a.TxBytes) * 8 / (b.T - a.T).Seconds() / float64(rate)
}
