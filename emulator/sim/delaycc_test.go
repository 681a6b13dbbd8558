package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"reef/cc"
	"reef/cc/mswift"
	"reef/cc/oscar"
	"reef/cc/poseidon"
	"reef/cc/timely"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/emulator/topo"
	"reef/hostd/transport"
	"reef/switchd"
	"reef/units"
)

// Behaviour of the delay- and INT-delay-based algorithms (Poseidon, TIMELY, OSCAR,
// MSwift) on a dumbbell in the sim backend: senders h1..h4 on s1, receiver r on s2,
// host links at nic, the s1→s2 link at 1 Gb/s (the bottleneck), 50 µs per link, 1500 B
// frames. Base RTT ≈ 0.33 ms, BDP ≈ 28 packets. Each algorithm runs with its paper
// parameters scaled by its τ (the cc packages' own dumbbell tests explain each choice).
const (
	dcRate  = units.Gbps
	dcDelay = 50 * units.Microsecond
	dcBuf   = 4 * units.Megabyte
)

// dcCase is one algorithm's set-up.
type dcCase struct {
	cc  string
	nic units.Rate
	// nicShared is the NIC rate for the runs with several flows (0: nic). TIMELY has
	// no slow start: several 2 Gb/s line-rate starts overflow the buffer, and Patched
	// TIMELY's 0.8% Thigh cut takes seconds to drain it (timely.md A14), so its shared
	// runs use NICs at the bottleneck rate, as in the paper's incast.
	nicShared units.Rate
	params    func() cc.Params // scaled
	mpd       units.Time       // MPD unit (0: no INT)
	fair      bool             // the algorithm has a fair fixed point (original TIMELY has none)
	// queue is the standing queuing delay the algorithm aims for with n flows sharing
	// the bottleneck, given a sample of flow 1 and the flow's base RTT; 0 = not checked.
	queue func(n int, s results.FlowSample, base units.Time) units.Time
}

// dcScaled returns a function building fresh defaults scaled by tau.
func dcScaled[P cc.Params](def func() P, tau float64) func() cc.Params {
	return func() cc.Params {
		p := def()
		if err := cc.ScaleParams(p, tau); err != nil {
			panic(err)
		}
		return p
	}
}

var dcCases = []dcCase{
	{cc: "poseidon", nic: 10 * units.Gbps, mpd: units.Time(256).Scale(73.24), fair: true,
		params: func() cc.Params {
			p := dcScaled(poseidon.DefaultParams, 73.24)().(*poseidon.Params)
			p.MaxRate = dcRate
			return p
		},
		// T(C/n) = k + p·log10(max_rate·n/C)/4 (poseidon.md §2.3)
		queue: func(n int, _ results.FlowSample, _ units.Time) units.Time {
			k, p := 2*units.Microsecond.Scale(73.24), 40*units.Microsecond.Scale(73.24)
			return k + units.Time(float64(p)*math.Log10(float64(n))/4)
		}},
	// Original TIMELY has no fixed point ([Z] §4.2): only utilisation is asserted. With
	// 1 Gb/s NICs its line-rate starts collapse every flow to MinRate for over a second.
	{cc: "timely", nic: 2 * units.Gbps, params: dcScaled(timely.DefaultParams, 10)},
	{cc: "timely-patched", nic: 2 * units.Gbps, nicShared: dcRate, params: dcScaled(timely.DefaultPatchedParams, 10), fair: true,
		// q* = Tlow·(1 + n·δ/(β·C)) (timely.md §7.4)
		queue: func(n int, _ results.FlowSample, _ units.Time) units.Time {
			return units.Time(float64(500*units.Microsecond) * (1 + float64(n)*1e6/(0.008*1e9)))
		}},
	{cc: "oscar", nic: dcRate, params: dcScaled(oscar.DefaultParams, 330.0/12), fair: true,
		// D_target − RTT_base = 0.5·RTT_base (oscar.md §2.2)
		queue: func(_ int, _ results.FlowSample, base units.Time) units.Time { return base / 2 }},
	{cc: "mswift", nic: 10 * units.Gbps, params: dcScaled(mswift.DefaultParams, 37.5), fair: true,
		queue: dcSwiftQueue},
	{cc: "lswift", nic: 10 * units.Gbps, params: dcScaled(mswift.DefaultLSwiftParams, 37.5), fair: true,
		queue: dcSwiftQueue},
}

// dcSwiftQueue is target(cwnd) − base RTT for MSwift's scaled defaults (mswift.md §3.3).
func dcSwiftQueue(_ int, s results.FlowSample, base units.Time) units.Time {
	const tau = 37.5
	cwnd := float64(s.Cwnd) / float64(transport.MSS(1500, 0))
	fsA := 100e3 * tau / (1/math.Sqrt(0.1) - 1/math.Sqrt(100))
	fs := min(max(fsA/math.Sqrt(cwnd)-fsA/10, 0), 100e3*tau)
	return units.Time(15.8e3*tau+fs) - base
}

// dcRun runs one flow of c per start time for dur and returns the results.
func dcRun(t *testing.T, c dcCase, starts []units.Time, dur units.Time) *results.Run {
	t.Helper()
	var hosts []testHost
	if len(starts) > 1 && c.nicShared > 0 {
		c.nic = c.nicShared
	}
	for i := range starts {
		hosts = append(hosts, testHost{Name: fmt.Sprintf("h%d", i+1), Sw: 0, Rate: c.nic, Delay: dcDelay, Buffer: dcBuf})
	}
	hosts = append(hosts, testHost{Name: "r", Sw: 1, Rate: c.nic, Delay: dcDelay, Buffer: dcBuf})
	p := chainPlan(2, dcRate, dcDelay, dcBuf, hosts, 1500)
	if c.mpd > 0 {
		for i := range p.Switches {
			p.Switches[i].Config.INT = switchd.INTConfig{Mode: switchd.INTMPD, MPDUnit: c.mpd}
		}
	}
	raw, err := json.Marshal(c.params())
	if err != nil {
		t.Fatal(err)
	}
	sc := &scenario.Scenario{Name: c.cc, Seed: 1, Duration: dur, SampleInterval: 100 * units.Microsecond}
	for i, st := range starts {
		sc.Flows = append(sc.Flows, scenario.Flow{ID: uint32(i + 1), Name: fmt.Sprintf("f%d", i+1), Group: "bulk",
			Src: hosts[i].Name, Dst: "r", CC: c.cc, CCParams: raw, Start: st})
	}
	s, err := New(p, sc)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(dur)
	return s.Results()
}

// dcAcked is a flow's acknowledged bytes at the last sample at or before x.
func dcAcked(f *results.Flow, x units.Time) (units.Bytes, units.Time) {
	var b units.Bytes
	var at units.Time
	for _, s := range f.Samples {
		if s.T > x {
			break
		}
		b, at = s.Acked, s.T
	}
	return b, at
}

// dcGoodput is a flow's payload rate over [a, b] (bit/s).
func dcGoodput(f *results.Flow, a, b units.Time) float64 {
	ba, ta := dcAcked(f, a)
	bb, tb := dcAcked(f, b)
	if tb <= ta {
		return 0
	}
	return float64(bb-ba) * 8e9 / float64(tb-ta)
}

// dcQueue is the mean queuing delay of s1's port toward s2 over [a, b].
func dcQueue(t *testing.T, run *results.Run, a, b units.Time) units.Time {
	t.Helper()
	for _, p := range run.Ports {
		if p.Switch != "s1" || p.Peer != "s2" {
			continue
		}
		var sum units.Time
		var n int
		for _, s := range p.Samples {
			if s.T >= a && s.T <= b {
				sum += s.QueueDelay
				n++
			}
		}
		if n == 0 {
			return 0
		}
		return sum / units.Time(n)
	}
	t.Fatal("no s1→s2 port")
	return 0
}

// dcLastSample is flow f's last sample at or before x.
func dcLastSample(f *results.Flow, x units.Time) results.FlowSample {
	var s results.FlowSample
	for _, v := range f.Samples {
		if v.T > x {
			break
		}
		s = v
	}
	return s
}

// dcCapacity is the payload rate the bottleneck carries with full frames.
var dcCapacity = 1e9 * float64(transport.MSS(1500, 0)) / float64(transport.DataFrameLen(transport.MSS(1500, 0), 0))

func TestDelayCCLoneFlow(t *testing.T) {
	for _, c := range dcCases {
		t.Run(c.cc, func(t *testing.T) {
			const a, b = 400 * units.Millisecond, 600 * units.Millisecond
			run := dcRun(t, c, []units.Time{0}, b)
			g := dcGoodput(&run.Flows[0], a, b)
			t.Logf("goodput %.1f Mbps of %.1f; bottleneck queue %v", g/1e6, dcCapacity/1e6, dcQueue(t, run, a, b))
			if g < 0.95*dcCapacity {
				t.Errorf("lone %s flow got %.1f Mbps of %.1f; want ≥ 95%%", c.cc, g/1e6, dcCapacity/1e6)
			}
		})
	}
}

func TestDelayCCFourFlows(t *testing.T) {
	for _, c := range dcCases {
		t.Run(c.cc, func(t *testing.T) {
			const a, b = 400 * units.Millisecond, 600 * units.Millisecond
			run := dcRun(t, c, []units.Time{0, 5 * units.Millisecond, 10 * units.Millisecond, 15 * units.Millisecond}, b)
			var sum, sq float64
			var gs []float64
			for i := range run.Flows {
				g := dcGoodput(&run.Flows[i], a, b)
				gs = append(gs, g/1e6)
				sum += g
				sq += g * g
			}
			jain, util := sum*sum/(4*sq), sum/dcCapacity
			q := dcQueue(t, run, a, b)
			t.Logf("goodputs %.1f Mbps; Jain %.4f, utilisation %.3f; queue %v", gs, jain, util, q)
			if c.fair && jain < 0.95 {
				t.Errorf("Jain index %.4f over 4 %s flows, want ≥ 0.95", jain, c.cc)
			}
			if c.fair && util < 0.95 || util < 0.8 {
				t.Errorf("utilisation %.3f, want ≥ 0.95 (0.8 for original TIMELY)", util)
			}
			if c.queue != nil {
				f := &run.Flows[0]
				base := units.Never // the unloaded RTT: the smallest sample
				for _, s := range f.Samples {
					if s.RTT > 0 {
						base = min(base, s.RTT)
					}
				}
				want := c.queue(4, dcLastSample(f, b), base)
				if q < want*3/4 || q > want*5/4 {
					t.Errorf("mean bottleneck queue %v, want within 25%% of the %s target %v", q, c.cc, want)
				}
			}
		})
	}
}

// A second flow joins at 200 ms; convergence is when both flows' goodput over a sliding
// 10 ms window enters and stays within 15% of the fair share.
func TestDelayCCConvergence(t *testing.T) {
	for _, c := range dcCases {
		if !c.fair {
			continue
		}
		t.Run(c.cc, func(t *testing.T) {
			const join, end = 200 * units.Millisecond, 500 * units.Millisecond
			run := dcRun(t, c, []units.Time{0, join}, end)
			settled := units.Never
			for at := join + 10*units.Millisecond; at <= end; at += units.Millisecond {
				ok := true
				for i := range run.Flows {
					g := dcGoodput(&run.Flows[i], at-10*units.Millisecond, at)
					ok = ok && math.Abs(g-dcCapacity/2) <= 0.15*dcCapacity/2
				}
				switch {
				case ok && settled == units.Never:
					settled = at - join
				case !ok:
					settled = units.Never
				}
			}
			t.Logf("%s converged %v after the join", c.cc, settled)
			if settled > 200*units.Millisecond {
				t.Errorf("%s converged %v after the join, want ≤ 200ms", c.cc, settled)
			}
		})
	}
}

// Multi-hop congestion (poseidon.md §1 item 5, Fig. 14): a parking lot s1–s2–s3 with
// 1 Gb/s chain links. The victim v crosses both; one flow shares s1→s2 with it and three
// share s2→s3. Poseidon reacts to the largest per-hop delay against a rate-dependent
// target, so it reaches the max-min allocation: C/4 for the victim and the s2→s3 flows,
// 3C/4 for the flow on s1→s2 (an end-to-end delay signal would squeeze the victim).
func TestPoseidonParkingLot(t *testing.T) {
	c := dcCases[0]
	names := []struct {
		name string
		sw   int
	}{{"v", 0}, {"c1", 0}, {"d1", 1}, {"d2", 1}, {"d3", 1}, {"r1", 1}, {"r", 2}}
	var hosts []testHost
	for _, h := range names {
		hosts = append(hosts, testHost{Name: h.name, Sw: h.sw, Rate: 10 * units.Gbps, Delay: dcDelay, Buffer: dcBuf})
	}
	p := chainPlan(3, dcRate, dcDelay, dcBuf, hosts, 1500)
	for i := range p.Switches {
		p.Switches[i].Config.INT = switchd.INTConfig{Mode: switchd.INTMPD, MPDUnit: c.mpd}
	}
	raw, err := json.Marshal(c.params())
	if err != nil {
		t.Fatal(err)
	}
	const a, b = 300 * units.Millisecond, 500 * units.Millisecond
	sc := &scenario.Scenario{Name: "parking-lot", Seed: 1, Duration: b, SampleInterval: 100 * units.Microsecond}
	for i, f := range [][2]string{{"v", "r"}, {"c1", "r1"}, {"d1", "r"}, {"d2", "r"}, {"d3", "r"}} {
		sc.Flows = append(sc.Flows, scenario.Flow{ID: uint32(i + 1), Name: f[0], Group: "bulk", Src: f[0], Dst: f[1],
			CC: c.cc, CCParams: raw, Start: units.Time(i) * 5 * units.Millisecond})
	}
	s, err := New(p, sc)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(b)
	run := s.Results()
	want := []float64{dcCapacity / 4, 3 * dcCapacity / 4, dcCapacity / 4, dcCapacity / 4, dcCapacity / 4}
	for i := range run.Flows {
		g := dcGoodput(&run.Flows[i], a, b)
		t.Logf("%s: %.1f Mbps (max-min share %.1f)", run.Flows[i].Name, g/1e6, want[i]/1e6)
		if math.Abs(g-want[i]) > 0.15*want[i] {
			t.Errorf("flow %s got %.1f Mbps, want its max-min share %.1f ± 15%%", run.Flows[i].Name, g/1e6, want[i]/1e6)
		}
	}
}

// MSwift's scenario (mswift.md §2.1, §5.4): one flow sprayed per packet over the 8
// spines of a leaf-spine fabric, one of whose paths is much longer (300 µs instead of
// 37.5 µs on leaf1–spine1). LSwift decides on the latest RTT, so every long sample can
// cut its window; MSwift decides on the median of the last H ≥ 3 samples, which the
// 1-in-8 long samples rarely reach. The paper reports MSwift ahead of LSwift by up to 25%;
// here the gap in throughput is larger.
const dcLeafSpine = `
name: ls
defaults: {rate: 1Gbps, delay: 37500ns, buffer: 1MB, mtu: 1500}
generator: {kind: leaf-spine, leaves: 2, spines: 8, hosts_per_leaf: 1}
switches:
  "*":
    lb: {mode: spray}
overrides: [{a: leaf1, b: spine1, delay: 300us}]
`

func TestMSwiftSprayedLongPath(t *testing.T) {
	tp, err := topo.Parse("leaf-spine.yaml", []byte(dcLeafSpine))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	const a, b = 100 * units.Millisecond, 300 * units.Millisecond
	got := map[string]float64{}
	for _, c := range []string{"lswift", "mswift"} {
		def := mswift.DefaultParams
		if c == "lswift" {
			def = mswift.DefaultLSwiftParams
		}
		raw, err := json.Marshal(dcScaled(def, 37.5)())
		if err != nil {
			t.Fatal(err)
		}
		sc := &scenario.Scenario{Name: c, Seed: 1, Duration: b, SampleInterval: 100 * units.Microsecond,
			Flows: []scenario.Flow{{ID: 1, Name: "f", Src: p.Hosts[0].Config.Name, Dst: p.Hosts[1].Config.Name, CC: c, CCParams: raw}}}
		s, err := New(p, sc)
		if err != nil {
			t.Fatal(err)
		}
		s.RunUntil(b)
		run := s.Results()
		got[c] = dcGoodput(&run.Flows[0], a, b)
		last := dcLastSample(&run.Flows[0], b)
		t.Logf("%s: %.1f Mbps, cwnd %v, rtt %v, retransmits %d", c, got[c]/1e6, last.Cwnd, last.RTT, run.Flows[0].Retransmits)
	}
	if got["mswift"] < 1.25*got["lswift"] {
		t.Errorf("MSwift %.1f Mbps vs LSwift %.1f Mbps with one long path in 8; want MSwift ≥ 1.25× LSwift",
			got["mswift"]/1e6, got["lswift"]/1e6)
	}
}
