package report

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/emulator/topo"
	"reef/units"
)

// incastSummary is a run shaped like timely-incast's (40 long-lived flows, 4000 samples
// each, every 500 µs): each flow acks 16 KB segments at random samples, so its goodput
// over a sample jumps between 0 and 262 Mbit/s from one sample to the next (as TIMELY's
// line-rate bursts make it), its window is a sawtooth between 4 and 63 KB, and four
// ports' queueing delay oscillates with noise. Dense, full-height zigzags like the rates
// are what make a plot slow to rasterise.
func incastSummary(tb testing.TB) *Summary {
	tb.Helper()
	tp, err := topo.Parse("t.yaml", []byte("name: t\ndefaults: {rate: 1Gbps, delay: 20us, buffer: 4MB, mtu: 1500}\ngenerator: {kind: dumbbell, hosts: 4}\n"))
	if err != nil {
		tb.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	const (
		flows   = 40
		samples = 4000
		every   = 500 * us
	)
	sc := &scenario.Scenario{Name: "incast/cc=timely", TimeScale: 10, Duration: samples * every, Warmup: samples * every / 2, SampleInterval: every}
	run := &results.Run{Backend: "sim", Scenario: sc.Name, Duration: sc.Duration}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range flows {
		name := "incast" + strconv.Itoa(i+1)
		src, dst := "h"+strconv.Itoa(1+i%4), "h"+strconv.Itoa(5+i%4)
		sc.Flows = append(sc.Flows, scenario.Flow{ID: uint32(i + 1), Name: name, Group: "incast", Src: src, Dst: dst, CC: "timely"})
		f := results.Flow{ID: uint32(i + 1), Name: name, Group: "incast", Src: src, Dst: dst, CC: "timely"}
		var acked units.Bytes
		for k := 1; k <= samples; k++ {
			if rng.Float64() < 0.19 {
				acked += 16 * units.Kilobyte
			}
			f.Samples = append(f.Samples, results.FlowSample{T: units.Time(k) * every, Acked: acked,
				Cwnd: units.Bytes(4+(k+7*i)%120/2) * units.Kilobyte, RTT: 100*us + units.Time(rng.IntN(900))*us})
		}
		run.Flows = append(run.Flows, f)
	}
	for j := range 4 {
		pt := results.Port{Switch: "s1", Port: j, Name: "p" + strconv.Itoa(j+1), Peer: "h" + strconv.Itoa(j+5) + ":eth0", Rate: units.Gbps}
		var tx int64
		for k := 1; k <= samples; k++ {
			tx += 50000
			d := 1000 * (1 + math.Sin(float64(k)/40)) / float64(j+1)
			pt.Samples = append(pt.Samples, results.PortSample{T: units.Time(k) * every, TxBytes: tx, TxPackets: tx / 1500,
				QueueDelay: units.Time(d+200*rng.Float64()) * us, QueueBytes: units.Bytes(d * 125)})
		}
		run.Ports = append(run.Ports, pt)
	}
	s, err := Summarize(p, sc, run, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// BenchmarkRunFigures draws one incast run's figures (rate, cwnd, queue delay; PNG and
// SVG each), what WriteRun spends most of its time on.
func BenchmarkRunFigures(b *testing.B) {
	s := incastSummary(b)
	b.ResetTimer()
	for b.Loop() {
		figs, err := s.runFigures()
		if err != nil {
			b.Fatal(err)
		}
		if len(figs) != 3 {
			b.Fatalf("%d figures, want rate, cwnd and queue-delay", len(figs))
		}
	}
}
