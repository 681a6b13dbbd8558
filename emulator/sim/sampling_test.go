package sim

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/units"
)

// samplingLab is a run with drops and ties: the k = 4 fat tree's permutation of Swift
// flows (the speed benchmark's) plus an incast of fixed-window flows into h1 through
// 60 KB buffers. Fixed windows on equal paths line frames up to the nanosecond, so
// frames reach switches at the same instant on different ports, and the incast
// overflows h1's ToR port.
func samplingLab(t testing.TB, d, every units.Time) *results.Run {
	s := samplingSim(t, d, every, Options{}, nil)
	s.RunUntil(d)
	return s.Results()
}

// samplingSim wires samplingLab's run with opts, ready to run, after edit (if not nil)
// has changed the plan and scenario.
func samplingSim(t testing.TB, d, every units.Time, opts Options, edit func(*plan.Plan, *scenario.Scenario)) *Sim {
	p, sc := fatTreePermutation(t, d)
	for i := range p.Switches {
		for j := range p.Switches[i].Config.Ports {
			p.Switches[i].Config.Ports[j].Buffer = 60 * units.Kilobyte
		}
	}
	for i := 2; i <= 16; i += 2 {
		sc.Flows = append(sc.Flows, fixedFlow(uint32(100+i), fmt.Sprintf("incast%d", i), fmt.Sprintf("h%d", i), "h1", 30*units.Kilobyte))
	}
	sc.SampleInterval = every
	if edit != nil {
		edit(p, sc)
	}
	s, err := NewWith(p, sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A run's results do not depend on its sample interval: observing a simulation does not
// perturb it. Every flow's and port's counters are identical whether it is sampled every
// millisecond or every 5 µs.
func TestSamplingDoesNotPerturb(t *testing.T) {
	const d = 20 * units.Millisecond
	coarse := samplingLab(t, d, units.Millisecond)
	fine := samplingLab(t, d, 5*units.Microsecond)
	var drops, marks, retx int64
	for i, a := range coarse.Flows {
		b := fine.Flows[i]
		if a.Acked != b.Acked || a.Retransmits != b.Retransmits || a.Spurious != b.Spurious ||
			a.Timeouts != b.Timeouts || a.Finish != b.Finish {
			t.Errorf("flow %s: 1 ms sampling: acked %d, retransmits %d, spurious %d, timeouts %d, finish %v; 5 µs: %d, %d, %d, %d, %v",
				a.Name, a.Acked, a.Retransmits, a.Spurious, a.Timeouts, a.Finish, b.Acked, b.Retransmits, b.Spurious, b.Timeouts, b.Finish)
		}
		retx += a.Retransmits
	}
	for i, a := range coarse.Ports {
		b := fine.Ports[i]
		if a.TxBytes != b.TxBytes || a.TxPackets != b.TxPackets || a.Drops != b.Drops || a.Marks != b.Marks || a.PauseTime != b.PauseTime {
			t.Errorf("port %s:%d: 1 ms sampling: tx %d B %d pkts, drops %d, marks %d; 5 µs: %d B %d pkts, drops %d, marks %d",
				a.Switch, a.Port, a.TxBytes, a.TxPackets, a.Drops, a.Marks, b.TxBytes, b.TxPackets, b.Drops, b.Marks)
		}
		drops += a.Drops
		marks += a.Marks
	}
	if drops == 0 || retx == 0 || marks == 0 {
		t.Fatalf("the lab should drop, mark and retransmit: %d drops, %d marks, %d retransmissions", drops, marks, retx)
	}
	t.Logf("%d drops, %d marks, %d retransmissions; %d and %d flow samples", drops, marks, retx,
		len(coarse.Flows[0].Samples), len(fine.Flows[0].Samples))
}

// A run sampled every 5 µs, written as reef run writes it (results.json and the CSV
// series), reads back exactly: every sample of every flow and port.
func TestSamplingRoundTrip(t *testing.T) {
	want := samplingLab(t, 5*units.Millisecond, 5*units.Microsecond)
	dir := t.TempDir()
	if err := results.WriteDir(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := results.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Ports[0].Samples) < 900 || len(want.Flows[0].Samples) < 900 {
		t.Fatalf("%d port and %d flow samples; want a sample every 5 µs", len(want.Ports[0].Samples), len(want.Flows[0].Samples))
	}
	if !reflect.DeepEqual(got, want) {
		for i := range want.Flows {
			if !reflect.DeepEqual(got.Flows[i], want.Flows[i]) {
				t.Errorf("flow %s read back differs", want.Flows[i].Name)
			}
		}
		for i := range want.Ports {
			if !reflect.DeepEqual(got.Ports[i], want.Ports[i]) {
				t.Errorf("port %s:%s read back differs", want.Ports[i].Switch, want.Ports[i].Name)
			}
		}
		t.Fatal("the run read back differs from the run written")
	}
}

// BenchmarkSamplingCost runs the sampling lab (TestSamplingDoesNotPerturb's) sampled
// every millisecond and every 5 µs, writing each run's results as `reef run` does
// (results.WriteDir: results.json and the CSV series), and reports the CPU time of each
// run with and without the writing, and the ratios (goal: the 5 µs run costs at most
// 1.1x the 1 ms run, writing included). It runs the lab at three link rates, since what
// a sample costs against the run depends on how many frames move between two samples:
// at 1 Gbit/s (20 ms) a 1,500-byte frame takes 12 µs on a link, so a 5 µs interval
// takes more samples (80 ports and 24 flows every 5 µs) than the run has packet-hops;
// at 10 Gbit/s (20 ms) there are about 2.5 packet-hops per sample, at 100 Gbit/s (2 ms,
// the rate of the papers' fabrics) about 13. samples/hop reports it.
func BenchmarkSamplingCost(b *testing.B) {
	for _, c := range []struct {
		name string
		rate units.Rate
		d    units.Time
	}{
		{"1Gbps", units.Gbps, 20 * units.Millisecond},
		{"10Gbps", 10 * units.Gbps, 20 * units.Millisecond},
		{"100Gbps", 100 * units.Gbps, 2 * units.Millisecond},
	} {
		b.Run(c.name, func(b *testing.B) { samplingCost(b, c.rate, c.d) })
	}
}

// samplingCost is BenchmarkSamplingCost at one link rate: the sampling lab with every
// link, NIC and switch port at rate, run for d.
func samplingCost(b *testing.B, rate units.Rate, d units.Time) {
	dir := b.TempDir()
	atRate := func(p *plan.Plan, _ *scenario.Scenario) {
		for i := range p.Switches {
			for j := range p.Switches[i].Config.Ports {
				p.Switches[i].Config.Ports[j].Rate = rate
			}
		}
		for i := range p.Hosts {
			p.Hosts[i].Config.Rate = rate
		}
		for i := range p.Links {
			p.Links[i].Rate = rate
		}
	}
	var hops, samples int
	run := func(every units.Time) (sim, all time.Duration) {
		c0 := cpuTime()
		s := samplingSim(b, d, every, Options{}, atRate)
		s.RunUntil(d)
		r := s.Results()
		c1 := cpuTime()
		if err := results.WriteDir(dir, r); err != nil {
			b.Fatal(err)
		}
		if every < units.Millisecond {
			hops, samples = int(s.Hops()), 0
			for i := range r.Ports {
				samples += len(r.Ports[i].Samples)
			}
			for i := range r.Flows {
				samples += len(r.Flows[i].Samples)
			}
		}
		return c1 - c0, cpuTime() - c0
	}
	var coarseSim, coarse, fineSim, fine time.Duration
	for b.Loop() { // alternately, so that a busy moment weighs on both
		s, a := run(units.Millisecond)
		coarseSim, coarse = coarseSim+s, coarse+a
		s, a = run(5 * units.Microsecond)
		fineSim, fine = fineSim+s, fine+a
	}
	n := float64(b.N)
	b.ReportMetric(coarse.Seconds()/n, "cpu-s/1ms-run")
	b.ReportMetric(fine.Seconds()/n, "cpu-s/5µs-run")
	b.ReportMetric(fineSim.Seconds()/n, "cpu-s/5µs-unwritten")
	b.ReportMetric(fine.Seconds()/coarse.Seconds(), "5µs/1ms")
	b.ReportMetric(fineSim.Seconds()/coarseSim.Seconds(), "5µs/1ms-unwritten")
	b.ReportMetric(float64(samples)/float64(hops), "samples/hop")
}

// The sim stores its frames' headers only; storing them whole, as the daemons do,
// changes no result: every flow's and port's record, samples included, is the same on
// the sampling lab's drops, marks and ties, whole and split into partitions (whose cut
// links hand frames over between fabrics).
func TestHeadersOnlyChangeNothing(t *testing.T) {
	const d = 5 * units.Millisecond
	for _, parts := range []int{1, 3} {
		run := func(whole bool) *results.Run {
			s := samplingSim(t, d, 50*units.Microsecond, Options{Partitions: parts, WholeFrames: whole}, nil)
			s.RunUntil(d)
			return s.Results()
		}
		heads, whole := run(false), run(true)
		if !reflect.DeepEqual(heads, whole) {
			t.Fatalf("%d partitions: the run with whole frames differs from the run with their headers only", parts)
		}
		if p := heads.Ports[0]; p.TxBytes == 0 || p.TxBytes/p.TxPackets < 1000 {
			t.Fatalf("port %s:%s sent %d bytes in %d frames; want full-size frames counted whole", p.Switch, p.Name, p.TxBytes, p.TxPackets)
		}
	}
}
