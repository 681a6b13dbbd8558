package dumbbell

import (
	"math"
	"testing"

	"reef/cc"
	"reef/hostd/hosttest"
	"reef/units"
)

func TestJain(t *testing.T) {
	for _, tc := range []struct {
		x    []float64
		want float64
	}{{[]float64{1, 1, 1, 1}, 1}, {[]float64{1, 0, 0, 0}, 0.25}, {[]float64{1, 3}, 0.8}, {[]float64{0, 0}, 0}} {
		if got := Jain(tc.x); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Jain(%v) = %g, want %g", tc.x, got, tc.want)
		}
	}
}

// Two flows with fixed, unequal windows: the harness measures what they get, sees
// that they never converge to equal shares, and reports a queue from the base RTT.
func TestHarnessMeasures(t *testing.T) {
	n, err := New(Config{Starts: []units.Time{0, 0}, NIC: 10 * units.Gbps, Bottleneck: units.Gbps,
		Delay: 10 * units.Microsecond, Buffer: units.Megabyte},
		func(i int, env cc.Env) (cc.Algorithm, error) {
			return &hosttest.Fixed{W: units.Bytes(20*(i+1)) * env.MSS}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	g, err := n.Goodput(10*units.Millisecond, 30*units.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if sum := Sum(g); math.Abs(sum-n.Capacity()) > 0.02*n.Capacity() {
		t.Errorf("two window-limited flows over capacity: %.1f Mbps, want the bottleneck's %.1f", sum/1e6, n.Capacity()/1e6)
	}
	if g[1] < 1.5*g[0] {
		t.Errorf("goodputs %.1f and %.1f Mbps; the flow with twice the window should get about twice", g[0]/1e6, g[1]/1e6)
	}
	mean, _, err := n.Queue(0, 40*units.Millisecond, 100*units.Microsecond)
	if err != nil || mean <= 0 {
		t.Errorf("queue %v (err %v): 60 packets in flight over a ~4-packet BDP must queue", mean, err)
	}
	conv, err := n.Converged(60*units.Millisecond, units.Millisecond, 5*units.Millisecond, 0.1)
	if err != nil || conv != units.Never {
		t.Errorf("Converged = %v (err %v), want never for a 1:2 split", conv, err)
	}
}
