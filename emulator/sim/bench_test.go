package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"reef/cc"
	"reef/emulator/plan"
	"reef/emulator/scenario"
	"reef/internal/testlab"
	"reef/units"

	_ "reef/cc/swift"
)

// fatTreePermutation is the speed benchmark's lab: the k = 4 fat tree at 1 Gbit/s per
// link (topologies/fat-tree-k4.yaml) with a permutation of 16 long-lived Swift flows,
// each host sending to the host 8 places on (always in another pod).
func fatTreePermutation(tb testing.TB, d units.Time) (*plan.Plan, *scenario.Scenario) {
	return fatTreePermutationK(tb, 4, d)
}

// fatTreePermutationK is fatTreePermutation on a fat tree of any k: the k = 4 file's
// links and switch settings, with its generator's k changed, and every host sending to
// the host half the hosts on.
func fatTreePermutationK(tb testing.TB, k int, d units.Time) (*plan.Plan, *scenario.Scenario) {
	const file = "../../topologies/fat-tree-k4.yaml"
	doc, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	if !strings.Contains(string(doc), "\n  k: 4\n") {
		tb.Fatalf("%s: no generator k: 4 to change", file)
	}
	yaml := strings.Replace(strings.Replace(string(doc), "\n  k: 4\n", fmt.Sprintf("\n  k: %d\n", k), 1),
		"name: fat-tree-k4\n", fmt.Sprintf("name: fat-tree-k%d\n", k), 1)
	p := testlab.Plan(tb, fmt.Sprintf("fat-tree-k%d", k), yaml)
	// Swift's defaults are the paper's (100 Gbit/s, 4 KB): scale them to the laptop
	// fabric as an experiment with time_scale would (the topology's τ ≈ 37.5).
	spec, err := cc.Lookup("swift")
	if err != nil {
		tb.Fatal(err)
	}
	prm := spec.Defaults()
	if err := cc.ScaleParams(prm, 37.5); err != nil {
		tb.Fatal(err)
	}
	raw, err := json.Marshal(prm)
	if err != nil {
		tb.Fatal(err)
	}
	hosts := len(p.Hosts)
	sc := &scenario.Scenario{Name: "fat-tree-permutation", Seed: 1, Duration: d, SampleInterval: 100 * units.Microsecond}
	for i := 1; i <= hosts; i++ {
		sc.Flows = append(sc.Flows, scenario.Flow{ID: uint32(i), Name: fmt.Sprintf("f%d", i), Group: "perm",
			Src: fmt.Sprintf("h%d", i), Dst: fmt.Sprintf("h%d", (i+hosts/2-1)%hosts+1), CC: "swift", CCParams: raw})
	}
	return p, sc
}

// BenchmarkFatTreePermutation reports simulated packet-hops per wall second and the
// ratio of simulated to wall time (goal: ≥ 2 M packet-hops/s on one core).
func BenchmarkFatTreePermutation(b *testing.B) {
	const d = 50 * units.Millisecond
	p, sc := fatTreePermutation(b, d)
	var hops, events uint64
	var simTime units.Time
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		s, err := New(p, sc)
		if err != nil {
			b.Fatal(err)
		}
		events += s.RunUntil(d)
		hops += s.Hops()
		simTime += s.Now()
	}
	sec := b.Elapsed().Seconds()
	// on a shared machine the process's CPU time is the steadier yardstick
	if cpu := (cpuTime() - cpu0).Seconds(); cpu > 0 {
		b.ReportMetric(float64(hops)/cpu, "hops/cpu-s")
	}
	b.ReportMetric(float64(hops)/sec, "hops/s")
	b.ReportMetric(simTime.Seconds()/sec, "sim/wall")
	b.ReportMetric(float64(hops)/float64(b.N), "hops/op")
	b.ReportMetric(float64(events)/float64(hops), "events/hop")
}

// BenchmarkFatTreePermutationLarge is BenchmarkFatTreePermutation on the k = 8 (128
// hosts, 80 switches) and k = 16 (1,024 hosts, 320 switches) fat trees, for the cost of
// a packet-hop as a fabric and its traffic grow. Each op runs the lab whole (one
// fabric on one goroutine) and then split as the sim splits it by default (4 and 16
// partitions), on one goroutine per CPU, alternately so that a busy moment weighs on
// both. It reports packet-hops per CPU-second and per wall-second of the runs alone
// (building the lab is setup-s) and the split run's wall time over the whole one's.
// A hop costs more where more frames and flows are in flight than the processor's
// caches hold; a partition's share of a window stays in them better.
func BenchmarkFatTreePermutationLarge(b *testing.B) {
	for _, tc := range []struct {
		k int
		d units.Time
	}{{8, 10 * units.Millisecond}, {16, 2 * units.Millisecond}} {
		b.Run(fmt.Sprintf("k=%d", tc.k), func(b *testing.B) {
			p, sc := fatTreePermutationK(b, tc.k, tc.d)
			type tally struct {
				hops             uint64
				setup, cpu, wall time.Duration
			}
			run := func(t *tally, opts Options) {
				c0 := cpuTime()
				s, err := NewWith(p, sc, opts)
				if err != nil {
					b.Fatal(err)
				}
				c1, w1 := cpuTime(), time.Now()
				s.RunUntil(tc.d)
				t.setup, t.cpu, t.wall = t.setup+c1-c0, t.cpu+cpuTime()-c1, t.wall+time.Since(w1)
				t.hops += s.Hops()
			}
			var whole, split tally
			for b.Loop() {
				run(&whole, Options{Partitions: 1})
				run(&split, Options{Each: workers(runtime.GOMAXPROCS(0))})
			}
			if whole.hops != split.hops { // possible: see Options.Partitions
				b.Logf("the split run made %d packet-hops, the whole one %d", split.hops, whole.hops)
			}
			b.ReportMetric(float64(whole.hops)/whole.cpu.Seconds(), "hops/cpu-s")
			b.ReportMetric(float64(split.hops)/split.cpu.Seconds(), "split-hops/cpu-s")
			b.ReportMetric(float64(whole.hops)/whole.wall.Seconds(), "hops/wall-s")
			b.ReportMetric(float64(split.hops)/split.wall.Seconds(), "split-hops/wall-s")
			b.ReportMetric(split.wall.Seconds()/whole.wall.Seconds(), "split/whole-wall")
			b.ReportMetric(whole.setup.Seconds()/float64(b.N), "setup-s")
			b.ReportMetric(float64(whole.hops)/float64(b.N), "hops/op")
		})
	}
}

// The benchmark's lab is sane: every flow delivers, and the fabric carries packets over
// the expected number of hops (6 links per packet across pods, data and ACKs).
func TestFatTreePermutationRuns(t *testing.T) {
	p, sc := fatTreePermutation(t, 5*units.Millisecond)
	s, err := New(p, sc)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(sc.Duration)
	run := s.Results()
	var acked units.Bytes
	for _, f := range run.Flows {
		if f.Acked == 0 {
			t.Fatalf("flow %s delivered nothing", f.Name)
		}
		acked += f.Acked
	}
	// 16 flows on a non-blocking fabric at 1 Gbit/s for 5 ms deliver at most 10 MB
	if acked > 16*units.Gbps.BytesIn(5*units.Millisecond) {
		t.Fatalf("acked %v exceeds line rate", acked)
	}
	t.Logf("acked %v in 5ms over 16 flows (%.0f%% of line rate), %d packet-hops", acked,
		100*float64(acked)/float64(16*units.Gbps.BytesIn(5*units.Millisecond)), s.Hops())
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
