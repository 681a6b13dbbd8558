package switchd

import (
	"slices"
	"testing"

	"reef/units"
	"reef/wire"
)

// Frames that reach the pipeline at the same instant on different ports are queued in
// a random order drawn from Config.Seed (pickTied): over many such instants each port
// goes first about half the time, where a fixed rule would always put the same one
// first; the same seed gives the same order and another seed a different one. Checked
// on a small switch and on one with more than 64 ports, whose scan differs.
func TestSimultaneousArrivalsRandomOrder(t *testing.T) {
	const instants = 400
	for _, ports := range []int{3, 70} {
		// first is, for each instant, the ingress port whose frame left port 2 first.
		first := func(seed uint64) []int {
			cfg := testConfig(ports)
			cfg.Seed = seed
			s := mustNew(t, cfg)
			var in []arrival
			for i := range instants {
				// 500 µs apart: port 2 (100 Mbit/s) sends both 1500 B frames in 240 µs
				at := units.Time(i) * 500 * units.Microsecond
				for p := range 2 {
					in = append(in, arrival{at, p, pk{src: hostAddr(p, 1), dst: hostAddr(2, 1)}.build(t)})
				}
			}
			out := run(s, in, units.Never-1)
			if len(out) != 2*instants {
				t.Fatalf("%d ports, seed %d: %d frames out, want %d", ports, seed, len(out), 2*instants)
			}
			var f []int
			for i := 0; i < len(out); i += 2 {
				f = append(f, int(out[i].frame[wire.EthLen+14])) // 10.0.p.1: the source's port
			}
			return f
		}
		a, b, c := first(1), first(1), first(2)
		zeros := 0
		for _, p := range a {
			if p == 0 {
				zeros++
			}
		}
		// Binomial(400, ½): the standard deviation is 10 frames; ±80 is 8 of them.
		t.Logf("%d ports: port 0 first at %d of %d instants", ports, zeros, instants)
		if zeros < instants/2-80 || zeros > instants/2+80 {
			t.Errorf("%d ports: port 0 first at %d of %d instants, want about half", ports, zeros, instants)
		}
		if !slices.Equal(a, b) {
			t.Errorf("%d ports: the same seed gave two orders", ports)
		}
		if slices.Equal(a, c) {
			t.Errorf("%d ports: seeds 1 and 2 gave the same %d coin flips", ports, instants)
		}
	}
}
