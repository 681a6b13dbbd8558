package sim

import (
	"fmt"
	"testing"

	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/emulator/metrics"
	"reef/switchd"
	"reef/units"

	_ "reef/cc/dctcp"
	_ "reef/cc/hpcc"
	_ "reef/cc/powertcp"
)

// Behaviour of the baseline algorithms on a dumbbell: senders h1..h4 on s1, receiver r
// on s2, every link 10 Gb/s with 10 µs of propagation, so the s1→s2 port is the
// bottleneck as soon as two flows share it (a lone flow is held to the same rate by its
// own NIC). Base RTT ≈ 64 µs, BDP ≈ 80 KB (≈ 57 full packets).
const (
	dbRate  = 10 * units.Gbps
	dbDelay = 10 * units.Microsecond
	dbBuf   = 2 * units.Megabyte
	dbK     = 40 * units.Kilobyte // DCTCP's marking threshold, about half a BDP
)

// dbCase is one algorithm's set-up on the dumbbell.
type dbCase struct {
	cc      string
	intHops int    // INT slots per data packet (HPCC, PowerTCP)
	intMode string // the switches' INT mode
	ecn     switchd.ECNConfig
}

var dbCases = []dbCase{
	{cc: "hpcc", intHops: 2, intMode: switchd.INTHPCC},
	{cc: "powertcp", intHops: 2, intMode: switchd.INTHPCC},
	{cc: "theta-powertcp"},
	{cc: "dctcp", ecn: switchd.ECNConfig{Mode: switchd.ECNStep, K: dbK}},
}

// dumbbell runs n long-lived flows of c, flow i starting at starts[i], for dur.
func dumbbell(t *testing.T, c dbCase, starts []units.Time, dur units.Time) *results.Run {
	t.Helper()
	var hosts []testHost
	for i := range starts {
		hosts = append(hosts, testHost{Name: fmt.Sprintf("h%d", i+1), Sw: 0, Rate: dbRate, Delay: dbDelay, Buffer: dbBuf})
	}
	hosts = append(hosts, testHost{Name: "r", Sw: 1, Rate: dbRate, Delay: dbDelay, Buffer: dbBuf})
	p := chainPlan(2, dbRate, dbDelay, dbBuf, hosts, 1500)
	for i := range p.Switches {
		p.Switches[i].Config.ECN = c.ecn
		p.Switches[i].Config.INT = switchd.INTConfig{Mode: c.intMode}
	}
	sc := &scenario.Scenario{Name: c.cc, Seed: 1, Duration: dur, SampleInterval: 50 * units.Microsecond}
	for i, st := range starts {
		name := fmt.Sprintf("f%d", i+1)
		sc.Flows = append(sc.Flows, scenario.Flow{ID: uint32(i + 1), Name: name, Group: "bulk",
			Src: hosts[i].Name, Dst: "r", CC: c.cc, Start: st, INTHops: c.intHops})
	}
	s, err := New(p, sc)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(dur)
	return s.Results()
}

// goodput is a flow's payload rate over [a, b] from its samples.
func goodput(f *results.Flow, a, b units.Time) float64 {
	at := func(x units.Time) (units.Bytes, units.Time) {
		var acked units.Bytes
		var t units.Time
		for _, s := range f.Samples {
			if s.T > x {
				break
			}
			acked, t = s.Acked, s.T
		}
		return acked, t
	}
	ba, ta := at(a)
	bb, tb := at(b)
	if tb <= ta {
		return 0
	}
	return float64(bb-ba) * 8e9 / float64(tb-ta)
}

// bottleneck is s1's port toward s2.
func bottleneck(t *testing.T, run *results.Run) *results.Port {
	t.Helper()
	for i := range run.Ports {
		if run.Ports[i].Switch == "s1" && run.Ports[i].Peer == "s2" {
			return &run.Ports[i]
		}
	}
	t.Fatal("no s1→s2 port")
	return nil
}

// wireUtil is the port's transmitted wire rate over [a, b] as a fraction of its rate.
func wireUtil(p *results.Port, a, b units.Time) float64 {
	var xa, xb int64
	var ta, tb units.Time
	for _, s := range p.Samples {
		if s.T <= a {
			xa, ta = s.TxBytes, s.T
		}
		if s.T <= b {
			xb, tb = s.TxBytes, s.T
		}
	}
	if tb <= ta {
		return 0
	}
	return float64(xb-xa) * 8e9 / float64(tb-ta) / float64(p.Rate)
}

func meanQueue(p *results.Port, a, b units.Time) units.Bytes {
	var sum, n int64
	for _, s := range p.Samples {
		if s.T >= a && s.T <= b {
			sum += int64(s.QueueBytes)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return units.Bytes(sum / n)
}

func TestCCBehaviourExplore(t *testing.T) {
	for _, c := range dbCases {
		dur := 20 * units.Millisecond
		run := dumbbell(t, c, []units.Time{0, 0, 0, 0}, dur)
		bn := bottleneck(t, run)
		var rates []float64
		for i := range run.Flows {
			rates = append(rates, goodput(&run.Flows[i], dur/2, dur))
		}
		t.Logf("%s: 4 flows goodput %v util %.3f meanQ %v drops %d marks %d jain %.3f", c.cc, rates,
			wireUtil(bn, dur/2, dur), meanQueue(bn, dur/2, dur), bn.Drops, bn.Marks, metrics.Jain(rates))
		run = dumbbell(t, c, []units.Time{0}, dur)
		t.Logf("%s: lone goodput %.3g", c.cc, goodput(&run.Flows[0], dur/2, dur))
	}
}

func TestCCBehaviourDebug(t *testing.T) {
	run := dumbbell(t, dbCases[1], []units.Time{0}, 3*units.Millisecond)
	for i, s := range run.Flows[0].Samples {
		if i%4 == 0 {
			t.Logf("t=%v cwnd=%v rate=%v rtt=%v acked=%v", s.T, s.Cwnd, s.Rate, s.RTT, s.Acked)
		}
	}
}
