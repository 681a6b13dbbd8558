package sim

import (
	"fmt"
	"testing"

	"reef/emulator/metrics"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/switchd"
	"reef/units"

	_ "reef/cc/dcqcn"
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
	params  string // CCParams JSON, "" for the defaults
}

// dbExpect is what an algorithm promises on the dumbbell.
type dbExpect struct {
	loneUtil   float64     // a lone flow keeps the bottleneck at least this busy (wire bytes)
	jain       float64     // 4 flows: Jain's index of their goodputs at least this
	minQ, maxQ units.Bytes // 4 flows: the bottleneck's mean queue lies in [minQ, maxQ]
	converge   units.Time  // a second flow joins: both within ±20% of half the rate by then
	joinRun    units.Time  // how long to watch after the join
}

var dbCases = []struct {
	dbCase
	want dbExpect
}{
	// HPCC targets η = 95% utilisation with an empty queue (paper §3.1). W_AI here is
	// 0.005·BDP = (1 − η)/10: ten flows' additive steps fit in the 5% headroom. At the
	// default 0.0005 (the OSCAR artifact's) the flows drift apart on this fabric: each
	// flow's packets see the queue that the others' paced packets leave behind them, so
	// the larger flows read U about 1% lower, a bias that outweighs W_AI.
	{dbCase{cc: "hpcc", intHops: 2, intMode: switchd.INTHPCC, params: `{"AIRatio":0.005}`},
		dbExpect{loneUtil: 0.93, jain: 0.95, maxQ: 8 * units.Kilobyte, converge: 2 * units.Millisecond, joinRun: 10 * units.Millisecond}},
	// PowerTCP targets full utilisation with an empty queue.
	{dbCase{cc: "powertcp", intHops: 2, intMode: switchd.INTHPCC},
		dbExpect{loneUtil: 0.95, jain: 0.95, maxQ: 8 * units.Kilobyte, converge: 2 * units.Millisecond, joinRun: 10 * units.Millisecond}},
	{dbCase{cc: "theta-powertcp"},
		dbExpect{loneUtil: 0.95, jain: 0.95, maxQ: 8 * units.Kilobyte, converge: 2 * units.Millisecond, joinRun: 10 * units.Millisecond}},
	// DCTCP keeps the queue around its marking threshold K. It converges slowly: the
	// newcomer starts with α = 1 and halves to its floor, and the windows then approach
	// each other by cuts of α/2 (about 200 RTTs here). Its fairness stays below 0.95:
	// in this jitter-free fabric the unpaced flows' bursts meet the queue in fixed
	// phases, and the smaller flows see a larger share of marks (F ≈ 0.30 against 0.25
	// for the larger), a bias the algorithm cannot undo.
	{dbCase{cc: "dctcp", ecn: switchd.ECNConfig{Mode: switchd.ECNStep, K: dbK}},
		dbExpect{loneUtil: 0.95, jain: 0.9, minQ: dbK / 2, maxQ: dbK * 3 / 2, converge: 30 * units.Millisecond, joinRun: 40 * units.Millisecond}},
	// DCQCN: RED marking at the switch (Kmin 5 KB, Kmax 200 KB, Pmax 1%: baselines.md
	// §3.3), the receiver acting as the notification point (one CNP per 50 µs per flow
	// at most), the sender cutting its rate on CNPs and recovering by timer and byte
	// counter. Flows start at line rate.
	{dbCase{cc: "dcqcn", ecn: switchd.ECNConfig{Mode: switchd.ECNRED, Min: 5 * units.Kilobyte, Max: 200 * units.Kilobyte, PMax: 0.01}},
		dbExpect{loneUtil: 0.95, jain: 0.95, maxQ: 200 * units.Kilobyte, converge: 30 * units.Millisecond, joinRun: 40 * units.Millisecond}},
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
		if c.params != "" {
			sc.Flows[i].CCParams = []byte(c.params)
		}
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

// convergence is how long after join the two flows' rates, in bins of about four RTTs,
// enter and then stay within ±20% of half their sum until end (0: from the first bin);
// -1 if they are apart in the last bin.
func convergence(a, b *results.Flow, join, end units.Time) units.Time {
	const bin = 250 * units.Microsecond
	last := join
	for t := join; t+bin <= end; t += bin {
		ra, rb := goodput(a, t, t+bin), goodput(b, t, t+bin)
		share := (ra + rb) / 2
		if share == 0 || ra < 0.8*share || ra > 1.2*share || rb < 0.8*share || rb > 1.2*share {
			last = t + bin
		}
	}
	if last > end-bin {
		return -1
	}
	return last - join
}

func TestCCBehaviourDumbbell(t *testing.T) {
	for _, c := range dbCases {
		t.Run(c.cc, func(t *testing.T) {
			// A lone flow fills the bottleneck (its own NIC holds it to the same rate).
			const lone = 10 * units.Millisecond
			run := dumbbell(t, c.dbCase, []units.Time{0}, lone)
			if u := wireUtil(bottleneck(t, run), lone/2, lone); u < c.want.loneUtil {
				t.Errorf("lone flow: bottleneck %.3f busy, want ≥ %.2f", u, c.want.loneUtil)
			} else {
				t.Logf("lone flow: bottleneck %.3f busy", u)
			}

			// Four flows share it fairly, with the standing queue the algorithm aims at.
			const four = 20 * units.Millisecond
			run = dumbbell(t, c.dbCase, []units.Time{0, 0, 0, 0}, four)
			bn := bottleneck(t, run)
			var rates []float64
			for i := range run.Flows {
				rates = append(rates, goodput(&run.Flows[i], four/2, four))
			}
			jain := metrics.Jain(rates)
			q := meanQueue(bn, four/2, four)
			t.Logf("4 flows: goodput %.3g bit/s, Jain %.3f, bottleneck %.3f busy, mean queue %v, drops %d",
				rates, jain, wireUtil(bn, four/2, four), q, bn.Drops)
			if jain < c.want.jain {
				t.Errorf("4 flows: Jain index %.3f, want ≥ %.2f", jain, c.want.jain)
			}
			if q < c.want.minQ || q > c.want.maxQ {
				t.Errorf("4 flows: mean queue %v, want in [%v, %v]", q, c.want.minQ, c.want.maxQ)
			}

			// A second flow joins a running one: both near half the rate soon after.
			const join = 5 * units.Millisecond
			end := join + c.want.joinRun
			run = dumbbell(t, c.dbCase, []units.Time{0, join}, end)
			ct := convergence(&run.Flows[0], &run.Flows[1], join, end)
			t.Logf("join: converged %v after the second flow started", ct)
			if ct < 0 || ct > c.want.converge {
				t.Errorf("join: convergence %v, want within %v", ct, c.want.converge)
			}
		})
	}
}
