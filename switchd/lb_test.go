package switchd

import (
	"net/netip"
	"testing"

	"reef/units"
)

// lbConfig is a 6-port switch where 10.0.9.0/24 goes to the group [1 2 3 4].
func lbConfig(mode string) Config {
	cfg := testConfig(6)
	cfg.Routes = append(cfg.Routes, Route{Prefix: netip.MustParsePrefix("10.0.9.0/24"), Ports: []int{1, 2, 3, 4}})
	cfg.LB.Mode = mode
	cfg.LB.FlowletGap = 500 * units.Microsecond
	cfg.Seed = 42
	return cfg
}

// spread sends n frames to 10.0.9.1 from port 0, one every gap, from flows[i%len(flows)]
// source ports, and counts them per egress port.
func spread(t *testing.T, s *Switch, n int, gap units.Time, flows []uint16) ([]int, []sent) {
	var in []arrival
	for i := 0; i < n; i++ {
		in = append(in, arrival{units.Time(i) * gap, 0, pk{dst: hostAddr(9, 1), sport: flows[i%len(flows)], size: 200}.build(t)})
	}
	out := run(s, in, units.Never-1)
	counts := make([]int, s.NumPorts())
	for _, o := range out {
		counts[o.port]++
	}
	if len(out) != n {
		t.Fatalf("%d frames out of %d", len(out), n)
	}
	return counts, out
}

func TestSprayIsEven(t *testing.T) {
	s := mustNew(t, lbConfig(LBSpray))
	const n = 4000
	counts, _ := spread(t, s, n, 20*units.Microsecond, []uint16{1234}) // one flow
	var chi2 float64
	for _, p := range []int{1, 2, 3, 4} {
		d := float64(counts[p]) - n/4
		chi2 += d * d / (n / 4)
	}
	// 3 degrees of freedom: P(χ² > 11.34) = 1 %. The seed is fixed, so this is exact.
	if chi2 > 11.34 || counts[0]+counts[5] != 0 {
		t.Errorf("counts %v: χ² = %.2f, want ≤ 11.34 over ports 1-4 only", counts, chi2)
	}
}

func TestECMPKeepsFlows(t *testing.T) {
	s := mustNew(t, lbConfig(LBECMP))
	flows := make([]uint16, 64)
	for i := range flows {
		flows[i] = uint16(30000 + i)
	}
	counts, out := spread(t, s, 640, 20*units.Microsecond, flows)
	portOf := map[uint16]int{}
	for i, o := range out {
		f := flows[i%len(flows)]
		if p, ok := portOf[f]; ok && p != o.port {
			t.Fatalf("flow %d on ports %d and %d", f, p, o.port)
		}
		portOf[f] = o.port
	}
	for _, p := range []int{1, 2, 3, 4} {
		if counts[p] == 0 {
			t.Errorf("counts %v: 64 flows never used port %d", counts, p)
		}
	}
	// Another seed hashes flows differently (per-switch salt).
	cfg := lbConfig(LBECMP)
	cfg.Seed = 43
	_, out2 := spread(t, mustNew(t, cfg), 64, 20*units.Microsecond, flows)
	same := 0
	for i := range out2 {
		if out2[i].port == out[i].port {
			same++
		}
	}
	if same == 64 {
		t.Error("seeds 42 and 43 hash all 64 flows alike")
	}
}

func TestFlowlet(t *testing.T) {
	s := mustNew(t, lbConfig(LBFlowlet)) // gap 500 µs
	// Bursts of 10 frames 20 µs apart (one flowlet), bursts 1 ms apart (new flowlets).
	var in []arrival
	for b := 0; b < 40; b++ {
		for i := 0; i < 10; i++ {
			in = append(in, arrival{units.Time(b)*units.Millisecond + units.Time(i)*20*units.Microsecond, 0,
				pk{dst: hostAddr(9, 1), size: 200}.build(t)})
		}
	}
	out := run(s, in, units.Never-1)
	if len(out) != 400 {
		t.Fatalf("%d frames out", len(out))
	}
	used := map[int]bool{}
	for b := 0; b < 40; b++ {
		p := out[b*10].port
		used[p] = true
		for i := 1; i < 10; i++ {
			if out[b*10+i].port != p {
				t.Fatalf("burst %d split over ports %d and %d", b, p, out[b*10+i].port)
			}
		}
	}
	if len(used) != 4 {
		t.Errorf("40 flowlets used ports %v, want all 4", used)
	}
}

// Port 1 is loaded by 40 frames for 10.0.1.0/24 (60 KB of 100 KB); adaptive routing
// then sends the group's traffic elsewhere.
func TestAdaptiveAvoidsLoadedPort(t *testing.T) {
	for _, q := range []units.Bytes{0, 3000} {
		cfg := lbConfig(LBAdaptive)
		cfg.LB.Quantum = q
		s := mustNew(t, cfg)
		var in []arrival
		for i := 0; i < 40; i++ {
			in = append(in, arrival{0, 5, pk{dst: hostAddr(1, 1)}.build(t)})
		}
		for i := 0; i < 200; i++ {
			in = append(in, arrival{units.Time(i+1) * 10 * units.Microsecond, 0, pk{dst: hostAddr(9, 1), size: 200}.build(t)})
		}
		out := run(s, in, units.Never-1)
		counts := make([]int, 6)
		for _, o := range out {
			v := o.frame[dst3Off]
			if v == 9 {
				counts[o.port]++
			}
		}
		if counts[1] != 0 || counts[2] == 0 || counts[3] == 0 || counts[4] == 0 {
			t.Errorf("quantum %v: group frames per port %v; want none on loaded port 1, some on 2-4", q, counts)
		}
	}
	// With equal queues the tie-break is random but even.
	s := mustNew(t, lbConfig(LBAdaptive))
	counts, _ := spread(t, s, 2000, 100*units.Microsecond, []uint16{1})
	for _, p := range []int{1, 2, 3, 4} {
		if counts[p] < 400 || counts[p] > 600 {
			t.Errorf("idle queues: counts %v, want about 500 each", counts)
		}
	}
}

// dst3Off is the offset of the third byte of the IPv4 destination (10.0.X.y).
const dst3Off = 14 + 16 + 2
