package analysis

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"reef/emulator/analysis/analysistest"

	"reef/emulator/expect"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/emulator/topo"
	"reef/units"
)

const (
	us = units.Microsecond
	ms = units.Millisecond
)

var rate = 100 * units.Mbps

func testPlan(t *testing.T) *plan.Plan { return analysistest.Plan(t) }

var testRun = analysistest.Run

func parse(t *testing.T, specs ...expect.Spec) []*expect.Expectation {
	t.Helper()
	xs, err := expect.ParseAll(specs)
	if err != nil {
		t.Fatal(err)
	}
	return xs
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSummarize(t *testing.T) {
	p := testPlan(t)
	sc, run := testRun("exp/cc=swift,M=2", 1, 1)
	xs := parse(t,
		expect.Spec{Name: "a-share", Check: "a.goodput >= 0.9 * a.fair_share", Claim: "a gets its share"},
		expect.Spec{Name: "fair", Check: "jain(bulk) >= 0.95"},
		expect.Spec{Name: "queue", Check: "queue_delay_p99(s1:p3) < 50us", When: "cc == 'swift'"},
		expect.Spec{Name: "hpcc-only", Check: "jain(bulk) >= 0.95", When: "cc == 'hpcc'"},
		expect.Spec{Name: "conv", Check: "convergence_time(a) <= 1ms"},
	)
	s, err := Summarize(p, sc, run, xs)
	if err != nil {
		t.Fatal(err)
	}
	if s.Experiment != "exp" || s.Vars["cc"] != "swift" || s.Vars["M"] != "2" || s.Backend != "sim" || s.TimeScale != 10 {
		t.Errorf("header: %q %v %q %v", s.Experiment, s.Vars, s.Backend, s.TimeScale)
	}
	// Goodput over [2ms, 10ms]: a acks 6250 B/ms = 50 Mbps, b 25 Mbps; m is active from 2
	// to 3 ms in the window and acks 5000 B then: 40 Mbps. a and b share s1→s2 (50 each);
	// m is alone the other way (100).
	// As goodput, a share is worth the payload fraction of a full packet: an IP MTU of
	// 1500 holds 1500 - 20 (IP) - 8 (UDP) - 56 (reef) = 1416 payload bytes in a
	// 1514-byte frame.
	const eff = 1416.0 / 1514
	type want struct{ good, share float64 }
	wants := map[string]want{"a": {50e6, 50e6}, "b": {25e6, 50e6}, "m": {40e6, 100e6}}
	for _, f := range s.Flows {
		w := wants[f.Name]
		if !near(f.GoodputBps, w.good) || f.FairShareWireBps != w.share || math.Abs(f.FairShareBps-w.share*eff) > 0.5 || !near(f.ShareRatio, w.good/f.FairShareBps) {
			t.Errorf("flow %s: goodput %v share %v (wire %v) ratio %v, want %v %v", f.Name, f.GoodputBps, f.FairShareBps, f.FairShareWireBps, f.ShareRatio, w.good, w.share)
		}
		if f.GoodputBpsPaper == nil || !near(*f.GoodputBpsPaper, w.good*10) {
			t.Errorf("flow %s: paper goodput %v, want %v", f.Name, f.GoodputBpsPaper, w.good*10)
		}
		if f.LineRateBps != float64(rate) {
			t.Errorf("flow %s: line rate %v", f.Name, f.LineRateBps)
		}
	}
	// a's RTT samples in the window: 120, 130, ..., 200 µs (9). Nearest rank: p50 is the
	// 5th (160), p99 the 9th (200); mean 160.
	a := s.Flows[0]
	if a.RTTUS == nil || a.RTTUS.Count != 9 || a.RTTUS.P50 != 160 || a.RTTUS.P99 != 200 || !near(a.RTTUS.Mean, 160) {
		t.Errorf("a RTT = %+v", a.RTTUS)
	}
	if a.RTTUSPaper == nil || a.RTTUSPaper.P50 != 16 {
		t.Errorf("a paper RTT = %+v", a.RTTUSPaper)
	}
	// m: FCT 2 ms; ideal = base RTT (3 links of 10 µs + a 1500 B packet's serialisation
	// forward, 3 links with an ACK back) + 10 KB at 100 Mbps.
	base := 3*(10*us+rate.TxTime(1500)) + 3*(10*us+rate.TxTime(plan.AckBytes))
	ideal := base + rate.TxTime(10*units.Kilobyte)
	m := s.Flows[2]
	if m.FCTUS == nil || *m.FCTUS != 2000 || !near(*m.IdealFCTUS, ideal.Microseconds()) || !near(*m.Slowdown, float64(2*ms)/float64(ideal)) {
		t.Errorf("m FCT %v ideal %v slowdown %v; want 2000, %v", m.FCTUS, m.IdealFCTUS, m.Slowdown, ideal.Microseconds())
	}
	if len(s.FCTBuckets) != 1 || s.FCTBuckets[0].Name != "small" || s.FCTBuckets[0].Slowdown.Count != 1 {
		t.Errorf("buckets = %+v", s.FCTBuckets)
	}
	// Groups: bulk = a + b, Jain (75)²/(2·(50²+25²)) = 0.9.
	if g := s.Groups[0]; g.Name != "bulk" || g.Flows != 2 || !near(g.GoodputBps, 75e6) || math.Abs(g.FairShareBps-100e6*eff) > 1 || g.Jain == nil || !near(*g.Jain, 0.9) {
		t.Errorf("bulk group = %+v", g)
	}
	// s1:p3 sent 9375 B/ms: 75 Mbps of 100 in the window; 8 drops and 16 marks between 2
	// and 10 ms; queue delay samples 20..100 µs.
	q := s.Queues[0]
	if q.Name != "s1:p3" || !near(q.Utilisation, 0.75) || q.Drops != 8 || q.Marks != 16 || q.QueueDelayUS.P99 != 100 || q.QueueDelayUS.P50 != 60 {
		t.Errorf("queue = %+v %+v", q, q.QueueDelayUS)
	}
	if !near(q.PacketDelayUS, 6.5) {
		t.Errorf("packet delay = %v µs, want 6.5", q.PacketDelayUS)
	}
	if q.QueueDelayUSPaper == nil || q.QueueDelayUSPaper.P99 != 10 {
		t.Errorf("paper queue delay = %+v", q.QueueDelayUSPaper)
	}
	// Fidelity: 200 µs p99 against the time s1:p3 takes for one MTU packet.
	sw, _ := p.SwitchByName("s1")
	pkt := rate.TxTime(units.Bytes(sw.Config.Ports[2].MTU))
	f := s.Fidelity
	if f.LatenessP50US != 50 || f.LatenessP99US != 200 || !near(f.RelativeP99, float64(200*us)/float64(pkt)) || f.WorstPort != "s1:p3" {
		t.Errorf("fidelity = %+v (packet time %v)", f, pkt)
	}
	// No skew, and a p99 lateness of 1.7 packet times, more than a packet time and a
	// quarter of any flow's base RTT here but within LatenessFloor (the wakeup latency
	// every run has): ok.
	if f.SkewP99US != 0 || f.Verdict != "ok" || f.LatePort != "s1:p3" || !near(f.LateRatio, float64(200*us)/float64(LatenessFloor)) {
		t.Errorf("verdict %q (late %.3g× at %q) with skew p99 %v µs, want ok, late %.3g× at s1:p3, no skew",
			f.Verdict, f.LateRatio, f.LatePort, f.SkewP99US, float64(200*us)/float64(LatenessFloor))
	}
	// Expectations: hpcc-only is not selected.
	got := map[string]expect.Result{}
	for _, r := range s.Expectations {
		got[r.Name] = r
	}
	checks := []struct {
		name         string
		value, bound float64
		pass         bool
	}{
		{"a-share", 50e6, 0.9 * s.Flows[0].FairShareBps, true},
		{"fair", 0.9, 0.95, false},
		{"queue", 100e3, 50e3, false},
		{"conv", float64(ms), float64(ms), true}, // a is in its band at its first point (1 ms)
	}
	if len(got) != len(checks) {
		t.Errorf("expectations = %+v", s.Expectations)
	}
	for _, c := range checks {
		r := got[c.name]
		if !near(r.Value, c.value) || !near(r.Bound, c.bound) || r.Pass != c.pass {
			t.Errorf("%s = %+v, want %v %v %v", c.name, r, c.value, c.bound, c.pass)
		}
	}
	if s.Pass {
		t.Error("summary passes although two checks fail")
	}
	// The schema's required keys are there.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"experiment", "backend", "time_scale", "flows", "queues", "fidelity", "expectations"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("summary.json lacks %q", k)
		}
	}
	flow := raw["flows"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "group", "cc", "src", "dst", "goodput_bps", "fair_share_bps", "rtt_us", "goodput_bps_paper"} {
		if _, ok := flow[k]; !ok {
			t.Errorf("summary.json flow lacks %q", k)
		}
	}
}

// BenchmarkSummarizeMessages summarises a run of 4 long-lived flows and 5000 messages
// (each message's share comes from its segment's filling).
func BenchmarkSummarizeMessages(b *testing.B) {
	tp, err := topo.Parse("t.yaml", []byte("name: t\ndefaults: {rate: 100Mbps, delay: 10us, buffer: 1MB, mtu: 1500}\ngenerator: {kind: dumbbell, hosts: 4}\n"))
	if err != nil {
		b.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{})
	if err != nil {
		b.Fatal(err)
	}
	sc := &scenario.Scenario{Name: "bench", Duration: 100 * ms, SampleInterval: ms}
	run := &results.Run{Backend: "sim", Duration: 100 * ms}
	for i := 0; i < 4; i++ {
		f := results.Flow{ID: uint32(i), Name: "long" + strconv.Itoa(i), Group: "long", Src: "h" + strconv.Itoa(i+1), Dst: "h" + strconv.Itoa(i+5), Start: units.Time(i) * 10 * ms}
		for k := 1; k <= 100; k++ {
			f.Samples = append(f.Samples, results.FlowSample{T: units.Time(k) * ms, Acked: units.Bytes(k * 3000), RTT: 50 * us})
		}
		run.Flows = append(run.Flows, f)
	}
	for i := 0; i < 5000; i++ {
		start := units.Time(i) * 20 * us
		run.Flows = append(run.Flows, results.Flow{ID: uint32(100 + i), Name: "m" + strconv.Itoa(i), Group: "msg",
			Src: "h" + strconv.Itoa(1+i%4), Dst: "h" + strconv.Itoa(5+(i/4)%4), Size: units.Bytes(1000 + 37*i), Start: start, Finish: start + 300*us})
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Summarize(p, sc, run, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// A sized flow that lasts (at least BulkIntervals samples) competes in the oracle like a
// long-lived one; a short message does not take anything from the others.
func TestBulkSizedFlowsShare(t *testing.T) {
	p := testPlan(t)
	sc, run := testRun("exp", 1, 1)
	// b becomes a 1 MB transfer from 0 to 10 ms: still a bulk flow.
	run.Flows[1].Size, run.Flows[1].Finish = units.Megabyte, 10*ms
	sc.Flows[1].Size = units.Megabyte
	s, err := Summarize(p, sc, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := s.Flows[0], s.Flows[1]; a.FairShareWireBps != 50e6 || b.FairShareWireBps != 50e6 {
		t.Errorf("wire shares a %v, b %v; want 50 Mbps each", a.FairShareWireBps, b.FairShareWireBps)
	}
	// Now b lasts 5 ms, fewer than 10 sample intervals of 1 ms,
	// so it is a message: a keeps the whole link.
	run.Flows[1].Finish = 5 * ms
	s, err = Summarize(p, sc, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Flows[0]; a.FairShareWireBps != 100e6 {
		t.Errorf("with b a message, a's wire share is %v, want 100 Mbps", a.FairShareWireBps)
	}
}

// A message's fair share is its share among the bulk flows active at its start and
// itself, whether a segment's filling answers it (at the segment's edges, beside
// another message, in a segment with the bulk flows of an earlier one) or no segment
// holds it (a message starting at or after the run's end).
func TestMessageShares(t *testing.T) {
	p := testPlan(t)
	sc, run := testRun("exp", 1, 1)
	sc.SampleInterval = ms / 10 // bulk: at least 1 ms
	// b is a bulk transfer from 4 to 8 ms beside a, over s1→s2 (100 Mbps).
	sc.Flows[1].Start, sc.Flows[1].Size = 4*ms, units.Megabyte
	run.Flows[1].Start, run.Flows[1].Size, run.Flows[1].Finish = 4*ms, units.Megabyte, 8*ms
	cases := []struct {
		start units.Time
		want  float64
	}{
		{0, 50e6},             // at a's start: with a
		{1 * ms, 50e6},        // with a
		{3*ms + 500*us, 50e6}, // beside another message
		{3*ms + 500*us, 50e6}, // of the same start
		{4*ms - 1, 50e6},      // just before b's start
		{4 * ms, 100e6 / 3},   // at b's start: with a and b
		{5 * ms, 100e6 / 3},   // with a and b
		{8*ms - 1, 100e6 / 3}, // b's last instant
		{8 * ms, 50e6},        // at b's end
		{9 * ms, 50e6},        // with a again: the bulk flows of 0 to 4 ms
		{10*ms - 1, 50e6},     // the run's last instant
		{10 * ms, 100e6},      // at its end: alone
		{12 * ms, 100e6},      // after it: alone
	}
	for _, c := range cases {
		id := uint32(len(sc.Flows) + 1)
		name := "m" + strconv.Itoa(int(id))
		sc.Flows = append(sc.Flows, scenario.Flow{ID: id, Name: name, Group: "msg", Src: "h2", Dst: "h4", CC: "swift", Start: c.start, Size: 10 * units.Kilobyte})
		run.Flows = append(run.Flows, results.Flow{ID: id, Name: name, Group: "msg", Src: "h2", Dst: "h4", CC: "swift", Start: c.start, Size: 10 * units.Kilobyte, Finish: c.start + 100*us})
	}
	s, err := Summarize(p, sc, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if f := s.Flows[3+i]; math.Abs(f.FairShareWireBps-c.want) > 1 {
			t.Errorf("message %s starting at %v: share %v, want %v", f.Name, c.start, f.FairShareWireBps, units.Rate(c.want))
		}
	}
}

// A constant-rate flow ("none" with a rate) is demand-limited in the oracle.
func TestConstantRateFlowShare(t *testing.T) {
	p := testPlan(t)
	sc, run := testRun("exp", 1, 1)
	sc.Flows[0].CC, sc.Flows[0].CCParams = "none", []byte(`{"MaxWindow":"0","Rate":"20000000bps"}`)
	s, err := Summarize(p, sc, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := s.Flows[0], s.Flows[1]; a.FairShareWireBps != 20e6 || b.FairShareWireBps != 80e6 {
		t.Errorf("wire shares a %v, b %v; want 20 and 80 Mbps", a.FairShareWireBps, b.FairShareWireBps)
	}
}

func TestParseRunName(t *testing.T) {
	for _, tt := range []struct {
		in, exp string
		vars    map[string]string
	}{
		{"poseidon-multihop/cc=swift,M=4", "poseidon-multihop", map[string]string{"cc": "swift", "M": "4"}},
		{"tiny", "tiny", nil},
		{"x/", "x", map[string]string{}},
		{"x/a=1,junk,b = 2", "x", map[string]string{"a": "1", "b": "2"}},
	} {
		exp, vars := ParseRunName(tt.in)
		if exp != tt.exp || len(vars) != len(tt.vars) {
			t.Errorf("ParseRunName(%q) = %q, %v", tt.in, exp, vars)
			continue
		}
		for k, v := range tt.vars {
			if vars[k] != v {
				t.Errorf("ParseRunName(%q)[%s] = %q, want %q", tt.in, k, vars[k], v)
			}
		}
	}
}

func FuzzParseRunName(f *testing.F) {
	f.Add("poseidon-multihop/cc=swift,M=4")
	f.Add("a/=,=,b==c")
	f.Fuzz(func(t *testing.T, name string) {
		exp, vars := ParseRunName(name)
		if !strings.HasPrefix(name, exp) {
			t.Fatalf("experiment %q is not a prefix of %q", exp, name)
		}
		for k := range vars {
			if strings.Contains(k, ",") {
				t.Fatalf("variable name %q holds a comma", k)
			}
		}
	})
}

// Skew and release lateness decide the verdict, a host daemon's like a switch port's,
// each against what it may have.
func TestFidelityVerdict(t *testing.T) {
	p := testPlan(t)
	tests := []struct {
		name               string
		portSkew, portLate float64 // p99s in what the port may have
		hostSkew, hostLate float64 // p99s in what the host may have of each
		worst, latePort    string
		verdict            string
		ratio, lateRatio   float64
	}{
		{"late under the bounds, not skewed", 0, 0.5, 0, 0.9, "h1:nic", "h1:nic", "ok", 0, 0.9},
		{"port skewed under a packet", 0.5, 0.5, 0, 0.5, "s1:p3", "s1:p3", "ok", 0.5, 0.5},
		{"host skewed under its bound", 0, 0.2, 0.8, 0.5, "h1:nic", "h1:nic", "ok", 0.8, 0.5},
		{"host skewed twice its bound", 0, 0.2, 2, 0.5, "h1:nic", "h1:nic", "degraded", 2, 0.5},
		{"port skewed three packets", 3, 0.2, 2, 0.5, "s1:p3", "h1:nic", "degraded", 3, 0.5},
		{"port late twice its bound", 0, 2, 0, 0.5, "s1:p3", "s1:p3", "degraded", 0, 2},
		{"host late 1.5 times its bound", 0, 0.2, 0, 1.5, "h1:nic", "h1:nic", "degraded", 0, 1.5},
		{"a stale timer", 0, 0.2, 0, 0.5, "h1:nic", "h1:nic", "degraded", 0, 0.5},
		{"a host stalled 1.5% of the run", 0, 0.2, 0, 0.5, "h1:nic", "h1:nic", "ok", 0, 0.5},
		{"a host stalled 3% of the run", 0, 0.2, 0, 0.5, "h1:nic", "h1:nic", "degraded", 0, 0.5},
		{"frames lost at a port", 0, 0.2, 0, 0.5, "h1:nic", "h1:nic", "degraded", 0, 0.5},
		{"frames lost at a host", 0, 0.2, 0, 0.5, "h1:nic", "h1:nic", "degraded", 0, 0.5},
	}
	// frames lost outside the model, and where the most were
	lost := map[string]struct {
		port, host int64
		at         string
	}{"frames lost at a port": {3, 1, "s1:p3"}, "frames lost at a host": {1, 2, "h1:nic"}}
	stalled := map[string]float64{"a host stalled 1.5% of the run": 0.015, "a host stalled 3% of the run": 0.03}
	sw, _ := p.SwitchByName("s1")
	pkt := rate.TxTime(units.Bytes(sw.Config.Ports[2].MTU))
	// h1 sends to h3 and receives from it: its skew may reach a tenth of that base RTT,
	// or one 1500-byte packet at the host's rate if that is more; its lateness a quarter
	// of it, a packet time or LatenessFloor. A port may be late by a quarter of the run's
	// shortest base RTT (h2 to h4 is the same), a packet time or LatenessFloor. This
	// lab's RTT is short, so the floor is the bound.
	base, err := p.BaseRTT("h1", "h3", 1500)
	if err != nil {
		t.Fatal(err)
	}
	hostMay := max(rate.TxTime(1500), base/10)
	lateMay := max(rate.TxTime(1500), base/4, LatenessFloor)
	portMay := max(pkt, base/4, LatenessFloor)
	if lateMay != LatenessFloor || portMay != LatenessFloor {
		t.Fatalf("base RTT %v, packet %v: want the lateness floor %v to bound this lab", base, pkt, LatenessFloor)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			at := func(x float64, may units.Time) units.Time { return units.Time(x * float64(may)) }
			sc, run := testRun("exp", 1, 1)
			run.Ports[0].Lateness = results.Lateness{Count: 10, P50: us, P99: at(tc.portLate, portMay), Max: at(tc.portLate, portMay)}
			run.Ports[0].Skew = results.Lateness{Count: 10, P99: at(tc.portSkew, pkt), Max: at(tc.portSkew, pkt)}
			run.Hosts = []results.Host{{Name: "h1", Rate: rate,
				Lateness: results.Lateness{Count: 5, P50: us, P99: at(tc.hostLate, lateMay), Max: at(tc.hostLate, lateMay)},
				Skew:     results.Lateness{Count: 5, P99: at(tc.hostSkew, hostMay), Max: at(tc.hostSkew, hostMay)}}}
			if tc.name == "a stale timer" {
				run.Hosts[0].StaleTimers = 1
			}
			run.Hosts[0].Stalled = units.Time(stalled[tc.name] * float64(run.Duration))
			l := lost[tc.name]
			run.Ports[0].Lost, run.Hosts[0].Lost = l.port, l.host
			s, err := Summarize(p, sc, run, nil)
			if err != nil {
				t.Fatal(err)
			}
			f := s.Fidelity
			if f.WorstPort != tc.worst || f.LatePort != tc.latePort || f.Frames != 15 || math.Abs(f.SkewRatio-tc.ratio) > 1e-6 ||
				math.Abs(f.LateRatio-tc.lateRatio) > 1e-6 || math.Abs(f.StallFraction-stalled[tc.name]) > 1e-9 || f.Verdict != tc.verdict ||
				f.Lost != l.port+l.host || f.LostAt != l.at {
				t.Errorf("fidelity = %+v (port may be late %v, host skewed %v, late %v)", f, portMay, hostMay, lateMay)
			}
			if why := DegradedWhy(f); l.at != "" && !strings.Contains(why, "lost") {
				t.Errorf("degraded, it says, for %q; want the frames lost named", why)
			}
		})
	}
}
