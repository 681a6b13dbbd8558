package poseidon_test

import (
	"testing"

	"reef/cc"
	"reef/cc/poseidon"
	"reef/hostd"
	"reef/hostd/hosttest"
	"reef/units"
)

// seenINT wraps a flow's Poseidon and counts the ACKs that did and did not report an
// INT hop on the forward path (cc.Feedback.HasMPD).
type seenINT struct {
	*poseidon.Poseidon
	with, without int
	zeroWith      int // ACKs with HasMPD and MPD 0: an INT hop with an empty queue
}

func (s *seenINT) OnFeedback(now units.Time, fb *cc.Feedback) {
	if fb.HasMPD {
		s.with++
		if fb.MPD == 0 {
			s.zeroWith++
		}
	} else {
		s.without++
	}
	s.Poseidon.OnFeedback(now, fb)
}

// Brownfield per path (spec §5): the lab stamps MPD (one INT port), but one flow's
// bottleneck port is not INT. That flow's ACKs must say "no INT hop" (HasMPD false,
// from the switch's wire.FlagMPDSeen echoed by the receiver), so full-deployment Poseidon
// (Brownfield off) falls back to the end-to-end signal on that path only: it keeps the
// queue near T(rate) instead of reading MPD 0 and filling the 4 MB buffer. The flow on
// the INT path keeps the MPD signal, and its ACKs report HasMPD even while MPD is 0.
func TestBrownfieldFallbackPerPath(t *testing.T) {
	const delay = 100 * units.Microsecond
	// Two paths that share nothing, each a sender and a receiver on its own real
	// switch: path 0's switch stamps MPD, path 1's is a legacy one (INT off). Both
	// hosts of both paths know the MPD unit.
	unit := units.Time(256).Scale(tau)
	nets := [2]*hosttest.Net{
		hosttest.New(hosttest.Config{Delay: delay, MPDUnit: unit}),
		hosttest.New(hosttest.Config{Delay: delay}),
	}
	nic := 10 * units.Gbps
	var rx [2]int
	var flows [2]*seenINT
	var tx [2]*hostd.Host
	for i, net := range nets {
		_, h, err := net.AddHost(nic, hosttest.Port{Rate: nic}, hostd.Options{MPDUnit: unit})
		if err != nil {
			t.Fatal(err)
		}
		tx[i] = h
		r, _, err := net.AddHost(nic, hosttest.Port{Rate: units.Gbps, Buffer: 4 * units.Megabyte}, hostd.Options{MPDUnit: unit})
		if err != nil {
			t.Fatal(err)
		}
		rx[i] = r
	}
	for i, h := range tx {
		env := h.FlowEnv(0)
		env.BaseRTT = 4*delay + nic.TxTime(env.PacketSize) + units.Gbps.TxTime(env.PacketSize) + 2*nic.TxTime(100)
		env.PathHops = 1
		p := poseidon.DefaultParams()
		if err := cc.ScaleParams(p, tau); err != nil {
			t.Fatal(err)
		}
		p.MaxRate = units.Gbps // Brownfield stays off: the fallback must come from HasMPD
		a, err := poseidon.New(env, p)
		if err != nil {
			t.Fatal(err)
		}
		flows[i] = &seenINT{Poseidon: a}
		if err := h.AddFlow(hostd.FlowSpec{ID: uint32(i + 1), Dst: hosttest.Addr(rx[i]), Alg: flows[i], BaseRTT: env.BaseRTT}); err != nil {
			t.Fatal(err)
		}
	}
	for _, net := range nets {
		if err := net.Run(200 * units.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	var before [2]units.Bytes
	for i, h := range tx {
		before[i] = h.FlowStats()[0].BytesAcked
	}
	// Sample each flow's fabric delay above its base (the standing queue it sees) every
	// 100 µs, as cc/internal/dumbbell's Queue does.
	var sum [2]units.Time
	var k int
	for at := 200*units.Millisecond + 100*units.Microsecond; at <= 400*units.Millisecond; at += 100 * units.Microsecond {
		for _, net := range nets {
			if err := net.Run(at); err != nil {
				t.Fatal(err)
			}
		}
		for i, h := range tx {
			env := h.FlowEnv(0)
			base := 4*delay + units.Gbps.TxTime(env.PacketSize)
			sum[i] += max(h.FlowStats()[0].FabricDelay-base, 0)
		}
		k++
	}
	for i, name := range []string{"INT path", "non-INT path"} {
		st := tx[i].FlowStats()[0]
		g := float64(st.BytesAcked-before[i]) * 8 / 0.2
		capacity := 1e9 * float64(tx[i].FlowEnv(0).MSS) / float64(tx[i].FlowEnv(0).PacketSize)
		t.Logf("%s: %d ACKs with an INT hop (%d of them MPD 0), %d without; %.1f Mbps of %.1f; cwnd %.2f pkts; mean queue %v, T(1G) %v",
			name, flows[i].with, flows[i].zeroWith, flows[i].without, g/1e6, capacity/1e6, flows[i].Cwnd(), sum[i]/units.Time(k), target(1e9))
		if g < 0.95*capacity {
			t.Errorf("%s: goodput %.1f Mbps of %.1f, want ≥ 95%%", name, g/1e6, capacity/1e6)
		}
	}
	if f := flows[0]; f.without != 0 || f.with == 0 || f.zeroWith == 0 {
		t.Errorf("INT path: %d ACKs with HasMPD (%d with MPD 0), %d without; want every ACK to report the INT hop, some with MPD 0",
			f.with, f.zeroWith, f.without)
	}
	if f := flows[1]; f.with != 0 || f.without == 0 {
		t.Errorf("non-INT path: %d ACKs with HasMPD, %d without; want none: no switch on this path stamps MPD", f.with, f.without)
	}
	// The fallback keeps the non-INT bottleneck's standing queue near T(1G), within the
	// dumbbell tests' 25%; reading MPD 0 as "no queue" would let the window grow until
	// the 4 MB buffer overflows.
	mean := sum[1] / units.Time(k)
	if lo, hi := target(1e9)*3/4, target(1e9)*5/4; mean < lo || mean > hi {
		t.Errorf("non-INT path: mean queue %v, want within 25%% of T(1G) = %v", mean, target(1e9))
	}
}
