package sim

import (
	"testing"

	"reef/emulator/scenario"
	"reef/units"
)

// Timeline events reach both ends of a link at their time: a rate change halves the
// bottleneck's throughput, a link down stops it, and up resumes it.
func TestTimelineEvents(t *testing.T) {
	hosts := []testHost{
		{Name: "h1", Sw: 0, Rate: units.Gbps, Delay: units.Microsecond, Buffer: 200 * units.Kilobyte},
		{Name: "h2", Sw: 1, Rate: units.Gbps, Delay: units.Microsecond, Buffer: 200 * units.Kilobyte},
	}
	p := chainPlan(2, units.Gbps, 2*units.Microsecond, 200*units.Kilobyte, hosts, 1500)
	const ms = units.Millisecond
	sc := &scenario.Scenario{Name: "events", Seed: 1, Duration: 8 * ms, SampleInterval: 100 * units.Microsecond,
		Flows: []scenario.Flow{fixedFlow(1, "f", "h1", "h2", 100*units.Kilobyte)},
		Events: []scenario.Event{
			{At: 2 * ms, Link: 0, Kind: scenario.EventRate, Rate: 500 * units.Mbps},
			{At: 4 * ms, Link: 0, Kind: scenario.EventDown},
			{At: 5 * ms, Link: 0, Kind: scenario.EventUp},
		}}
	s, err := New(p, sc)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(sc.Duration)
	run := s.Results()
	port := -1
	for i, pr := range run.Ports {
		if pr.Switch == "s1" && pr.Peer == "s2" {
			port = i
		}
	}
	if port < 0 {
		t.Fatal("no s1 → s2 port")
	}
	tx := func(at units.Time) int64 {
		for _, smp := range run.Ports[port].Samples {
			if smp.T == at {
				return smp.TxBytes
			}
		}
		t.Fatalf("no sample at %v", at)
		return 0
	}
	rate := func(a, b units.Time) float64 { return float64(tx(b)-tx(a)) * 8 / (b - a).Seconds() }
	for _, tc := range []struct {
		what     string
		from, to units.Time
		lo, hi   float64
	}{
		// TxBytes moves in whole frames (12 µs at 1 Gbit/s): ±2% covers one frame per ms
		{"before the change: line rate", 1 * ms, 2 * ms, 0.98e9, 1.02e9},
		{"after the rate change: half", 2*ms + 200*units.Microsecond, 4 * ms, 0.49e9, 0.51e9},
		{"link down: nothing", 4*ms + 100*units.Microsecond, 5 * ms, 0, 0},
		{"link up again: half rate resumes", 6 * ms, 8*ms - 100*units.Microsecond, 0.49e9, 0.51e9},
	} {
		if r := rate(tc.from, tc.to); r < tc.lo || r > tc.hi {
			t.Errorf("%s: %.4g bit/s over [%v, %v], want [%.4g, %.4g]", tc.what, r, tc.from, tc.to, tc.lo, tc.hi)
		}
	}
}
