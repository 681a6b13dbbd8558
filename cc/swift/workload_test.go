package swift_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"reef/cc/swift"
	"reef/hostd"
	"reef/hostd/hosttest"
	"reef/hostd/workload"
	"reef/units"
)

// star puts n hosts with 1Gbps NICs on one switch (1Gbps ports, 200KB buffers).
func star(t *testing.T, n int) *hosttest.Net {
	t.Helper()
	net := hosttest.New(hosttest.Config{Delay: 2 * units.Microsecond})
	for i := 0; i < n; i++ {
		if _, _, err := net.AddHost(units.Gbps, hosttest.Port{Rate: units.Gbps, Buffer: 200_000}, hostd.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	return net
}

// addFlows turns workload flows into Swift flows.
func addFlows(t *testing.T, net *hosttest.Net, flows []workload.Flow) {
	t.Helper()
	for i, f := range flows {
		h := net.Host(f.Src)
		env := h.FlowEnv(0)
		env.BaseRTT, env.PathHops = 30*units.Microsecond, 1
		s, err := swift.New(env, *swift.DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		if err := h.AddFlow(hostd.FlowSpec{ID: uint32(i + 1), Dst: net.Host(f.Dst).Config().Addr, Size: f.Size,
			Start: f.Start, Stop: f.Stop, Alg: s, BaseRTT: env.BaseRTT}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPoissonWorkloadCompletes(t *testing.T) {
	const n = 8
	net := star(t, n)
	cdf, err := workload.Builtin("hadoop")
	if err != nil {
		t.Fatal(err)
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	flows, err := workload.Poisson{Srcs: all, Dsts: all, Load: 0.5, Rate: units.Gbps, CDF: cdf,
		Duration: 20 * units.Millisecond}.Generate(rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	addFlows(t, net, flows)
	if err := net.Run(500 * units.Millisecond); err != nil {
		t.Fatal(err)
	}
	var slow []float64
	done := 0
	for i := 0; i < n; i++ {
		for _, c := range net.Host(i).Completions() {
			done++
			// Base RTT: 8µs of propagation plus a small frame and an ACK serialised twice.
			slow = append(slow, workload.Slowdown(c.FCT, c.Size, units.Gbps, 12*units.Microsecond))
		}
	}
	if done != len(flows) {
		t.Fatalf("%d of %d flows completed", done, len(flows))
	}
	slices.Sort(slow)
	t.Logf("%d flows, slowdown p50 %.2f p99 %.2f, drops %d", len(flows), slow[len(slow)/2], slow[len(slow)*99/100], net.Overflow())
	if slow[0] < 0.9 {
		t.Errorf("slowdown %.2f < 1: the ideal FCT or the FCT is wrong", slow[0])
	}
}

func TestIncastCompletes(t *testing.T) {
	// 16-to-1 incast of 64KB each: fair share is well below one BDP, so Swift runs with
	// small (possibly sub-packet) windows.
	const n = 17
	net := star(t, n)
	senders := make([]int, 16)
	for i := range senders {
		senders[i] = i + 1
	}
	flows := workload.Incast(senders, 0, 64_000, units.Millisecond, 1, 0, 0, nil)
	addFlows(t, net, flows)
	if err := net.Run(200 * units.Millisecond); err != nil {
		t.Fatal(err)
	}
	var last units.Time
	done := 0
	for i := 1; i < n; i++ {
		for _, c := range net.Host(i).Completions() {
			done++
			last = max(last, c.Finish)
		}
	}
	// 16 × 64KB (+ headers) at 1Gbps ≈ 8.8ms.
	t.Logf("incast: %d done, last at %v, max backlog %dB, drops %d", done, last, net.MaxBacklog(0), net.Overflow())
	if done != 16 {
		t.Fatalf("%d of 16 incast flows completed", done)
	}
	if last > units.Millisecond+12*units.Millisecond {
		t.Errorf("incast finished at %v; want within 1.35× of the 8.8ms line-rate time", last)
	}
}
