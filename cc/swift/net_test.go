package swift_test

import (
	"math"
	"testing"

	"reef/cc"
	"reef/cc/swift"
	"reef/hostd"
	"reef/hostd/hosttest"
	"reef/units"
)

// dumbbell puts n senders with 10Gbps NICs behind one switch whose port to the
// receiver runs at 1Gbps, links of 2µs.
func dumbbell(t *testing.T, n int) (*hosttest.Net, []*swift.Swift) {
	t.Helper()
	net := hosttest.New(hosttest.Config{Delay: 2 * units.Microsecond})
	var senders []*hostd.Host
	for i := 0; i < n; i++ {
		_, h, err := net.AddHost(10*units.Gbps, hosttest.Port{Rate: 10 * units.Gbps}, hostd.Options{})
		if err != nil {
			t.Fatal(err)
		}
		senders = append(senders, h)
	}
	_, rx, err := net.AddHost(10*units.Gbps, hosttest.Port{Rate: units.Gbps, Buffer: 1_000_000}, hostd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var algs []*swift.Swift
	for i, h := range senders {
		env := h.FlowEnv(0)
		env.BaseRTT, env.PathHops = 22*units.Microsecond, 1
		s, err := swift.New(env, *swift.DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		algs = append(algs, s)
		// Flows start 1ms apart, so later ones must take bandwidth from earlier ones.
		if err := h.AddFlow(hostd.FlowSpec{ID: uint32(i + 1), Dst: rx.Config().Addr, Alg: s,
			Start: units.Time(i) * units.Millisecond, BaseRTT: env.BaseRTT}); err != nil {
			t.Fatal(err)
		}
	}
	return net, algs
}

func acked(net *hosttest.Net, n int) []units.Bytes {
	out := make([]units.Bytes, n)
	for i := range out {
		out[i] = net.Host(i).FlowStats()[0].BytesAcked
	}
	return out
}

// goodput is the payload rate a 1Gbps port carries with full frames.
func goodput(env cc.Env) float64 { return 1e9 * float64(env.MSS) / float64(env.PacketSize) }

func TestSingleFlowFillsBottleneck(t *testing.T) {
	net, algs := dumbbell(t, 1)
	if err := net.Run(10 * units.Millisecond); err != nil {
		t.Fatal(err)
	}
	a0 := acked(net, 1)[0]
	var delaySum float64
	var samples int
	for at := 10 * units.Millisecond; at < 50*units.Millisecond; at += 50 * units.Microsecond {
		if err := net.Run(at); err != nil {
			t.Fatal(err)
		}
		delaySum += net.Host(0).FlowStats()[0].FabricDelay.Microseconds()
		samples++
	}
	a1 := acked(net, 1)[0]
	rate := float64(a1-a0) * 8 / 0.040
	max := goodput(net.Host(0).FlowEnv(0))
	target := algs[0].Target(1).Microseconds()
	mean := delaySum / float64(samples)
	t.Logf("goodput %.1f Mbps of %.1f, cwnd %.2f pkts, mean fabric delay %.1fµs, target %.1fµs, retx %d",
		rate/1e6, max/1e6, algs[0].Cwnd(), mean, target, net.Host(0).FlowStats()[0].Retransmits)
	if rate < 0.95*max {
		t.Errorf("one Swift flow got %.1f Mbps of a %.1f Mbps bottleneck; want ≥ 95%%", rate/1e6, max/1e6)
	}
	if mean < 0.8*target || mean > 1.2*target {
		t.Errorf("mean fabric delay %.1fµs, want within 20%% of the target %.1fµs", mean, target)
	}
}

func TestFourFlowsShareFairly(t *testing.T) {
	const n = 4
	net, algs := dumbbell(t, n)
	if err := net.Run(30 * units.Millisecond); err != nil {
		t.Fatal(err)
	}
	a0 := acked(net, n)
	if err := net.Run(80 * units.Millisecond); err != nil {
		t.Fatal(err)
	}
	a1 := acked(net, n)
	var sum, sq, total float64
	for i := range a0 {
		x := float64(a1[i] - a0[i])
		sum += x
		sq += x * x
		total += x
		t.Logf("flow %d: %.1f Mbps, cwnd %.2f", i+1, x*8/0.05/1e6, algs[i].Cwnd())
	}
	jain := sum * sum / (n * sq)
	util := total * 8 / 0.05 / goodput(net.Host(0).FlowEnv(0))
	t.Logf("Jain %.4f, utilisation %.3f", jain, util)
	if jain < 0.99 || math.IsNaN(jain) {
		t.Errorf("Jain index %.4f over 4 Swift flows, want ≥ 0.99", jain)
	}
	if util < 0.95 {
		t.Errorf("utilisation %.3f, want ≥ 0.95", util)
	}
}
