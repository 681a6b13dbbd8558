// Package analysistest holds the small run the report packages (emulator/analysis,
// emulator/comparison, emulator/render) test against: a dumbbell plan and a run over it
// whose figures are known.
package analysistest

import (
	"testing"

	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/emulator/topo"
	"reef/units"
)

// Plan is a dumbbell with two hosts a side (h1, h2 | h3, h4), every link 100 Mbps and
// 10 µs.
func Plan(t testing.TB) *plan.Plan {
	t.Helper()
	tp, err := topo.Parse("t.yaml", []byte("name: t\ndefaults: {rate: 100Mbps, delay: 10us, buffer: 1MB, mtu: 1500}\ngenerator: {kind: dumbbell, hosts: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Run is a run of Plan: bulk flows a (h1→h3, 50 Mbps) and b (h2→h4, 25 Mbps) share s1→s2; message m
// (h3→h1, 10 KB) runs from 1 to 3 ms the other way. Samples every ms up to 10 ms; the
// warm-up is 2 ms. goodA and goodB scale a's and b's rates.
func Run(name string, goodA, goodB float64) (*scenario.Scenario, *results.Run) {
	sc := &scenario.Scenario{Name: name, TimeScale: 10, Duration: 10 * units.Millisecond, Warmup: 2 * units.Millisecond, SampleInterval: units.Millisecond,
		Flows: []scenario.Flow{
			{ID: 1, Name: "a", Group: "bulk", Src: "h1", Dst: "h3", CC: "swift"},
			{ID: 2, Name: "b", Group: "bulk", Src: "h2", Dst: "h4", CC: "swift"},
			{ID: 3, Name: "m", Group: "msg", Src: "h3", Dst: "h1", CC: "swift", Start: units.Millisecond, Size: 10 * units.Kilobyte},
		}}
	run := &results.Run{Backend: "sim", Scenario: name, Duration: 10 * units.Millisecond, WallTime: 3 * units.Millisecond}
	fa := results.Flow{ID: 1, Name: "a", Group: "bulk", Src: "h1", Dst: "h3", CC: "swift"}
	fb := results.Flow{ID: 2, Name: "b", Group: "bulk", Src: "h2", Dst: "h4", CC: "swift"}
	for k := 1; k <= 10; k++ {
		T := units.Time(k) * units.Millisecond
		fa.Samples = append(fa.Samples, results.FlowSample{T: T, Acked: units.Bytes(goodA * 6250 * float64(k)), Cwnd: 20 * units.Kilobyte, RTT: 100*units.Microsecond + units.Time(k)*10*units.Microsecond})
		fb.Samples = append(fb.Samples, results.FlowSample{T: T, Acked: units.Bytes(goodB * 3125 * float64(k)), Cwnd: 10 * units.Kilobyte, RTT: 200 * units.Microsecond})
	}
	fm := results.Flow{ID: 3, Name: "m", Group: "msg", Src: "h3", Dst: "h1", CC: "swift", Size: 10 * units.Kilobyte, Start: units.Millisecond, Finish: 3 * units.Millisecond,
		Samples: []results.FlowSample{{T: 2 * units.Millisecond, Acked: 5000}, {T: 3 * units.Millisecond, Acked: 10000}}}
	run.Flows = []results.Flow{fa, fb, fm}
	p := results.Port{Switch: "s1", Port: 2, Name: "p3", Peer: "s2:p3", Rate: 100 * units.Mbps, Lateness: results.Lateness{Count: 1000, P50: 50 * units.Microsecond, P99: 200 * units.Microsecond, Max: 300 * units.Microsecond}}
	for k := 1; k <= 10; k++ {
		p.Samples = append(p.Samples, results.PortSample{T: units.Time(k) * units.Millisecond, TxBytes: int64(9375 * k), QueueDelay: units.Time(k) * 10 * units.Microsecond,
			QueueBytes: units.Bytes(k * 1000), Drops: int64(k), Marks: int64(2 * k),
			// Packet k·10 departs having waited k µs: the window [2 ms, 10 ms] holds the
			// packets of k = 3…10 (ten each), whose mean wait is 6.5 µs.
			TxPackets: int64(10 * k), Waited: units.Time(10*k*(k+1)/2) * units.Microsecond})
	}
	run.Ports = []results.Port{p, {Switch: "s2", Port: 2, Name: "p3", Peer: "s1:p3", Rate: 100 * units.Mbps}}
	return sc, run
}
