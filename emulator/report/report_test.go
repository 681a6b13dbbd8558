package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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

// testPlan is a dumbbell with two hosts a side (h1, h2 | h3, h4), every link 100 Mbps and
// 10 µs.
func testPlan(t *testing.T) *plan.Plan {
	t.Helper()
	tp, err := topo.Parse("t.yaml", []byte("name: t\ndefaults: {rate: 100Mbps, delay: 10us, buffer: 1MB, mtu: 1500}\ngenerator: {kind: dumbbell, hosts: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testRun: bulk flows a (h1→h3, 50 Mbps) and b (h2→h4, 25 Mbps) share s1→s2; message m
// (h3→h1, 10 KB) runs from 1 to 3 ms the other way. Samples every ms up to 10 ms; the
// warm-up is 2 ms. goodA and goodB scale a's and b's rates.
func testRun(name string, goodA, goodB float64) (*scenario.Scenario, *results.Run) {
	sc := &scenario.Scenario{Name: name, TimeScale: 10, Duration: 10 * ms, Warmup: 2 * ms, SampleInterval: ms,
		Flows: []scenario.Flow{
			{ID: 1, Name: "a", Group: "bulk", Src: "h1", Dst: "h3", CC: "swift"},
			{ID: 2, Name: "b", Group: "bulk", Src: "h2", Dst: "h4", CC: "swift"},
			{ID: 3, Name: "m", Group: "msg", Src: "h3", Dst: "h1", CC: "swift", Start: ms, Size: 10 * units.Kilobyte},
		}}
	run := &results.Run{Backend: "sim", Scenario: name, Duration: 10 * ms, WallTime: 3 * ms}
	fa := results.Flow{ID: 1, Name: "a", Group: "bulk", Src: "h1", Dst: "h3", CC: "swift"}
	fb := results.Flow{ID: 2, Name: "b", Group: "bulk", Src: "h2", Dst: "h4", CC: "swift"}
	for k := 1; k <= 10; k++ {
		T := units.Time(k) * ms
		fa.Samples = append(fa.Samples, results.FlowSample{T: T, Acked: units.Bytes(goodA * 6250 * float64(k)), Cwnd: 20 * units.Kilobyte, RTT: 100*us + units.Time(k)*10*us})
		fb.Samples = append(fb.Samples, results.FlowSample{T: T, Acked: units.Bytes(goodB * 3125 * float64(k)), Cwnd: 10 * units.Kilobyte, RTT: 200 * us})
	}
	fm := results.Flow{ID: 3, Name: "m", Group: "msg", Src: "h3", Dst: "h1", CC: "swift", Size: 10 * units.Kilobyte, Start: ms, Finish: 3 * ms,
		Samples: []results.FlowSample{{T: 2 * ms, Acked: 5000}, {T: 3 * ms, Acked: 10000}}}
	run.Flows = []results.Flow{fa, fb, fm}
	p := results.Port{Switch: "s1", Port: 2, Name: "p3", Peer: "s2:p3", Rate: rate, Lateness: results.Lateness{Count: 1000, P50: 50 * us, P99: 200 * us, Max: 300 * us}}
	for k := 1; k <= 10; k++ {
		p.Samples = append(p.Samples, results.PortSample{T: units.Time(k) * ms, TxBytes: int64(9375 * k), QueueDelay: units.Time(k) * 10 * us,
			QueueBytes: units.Bytes(k * 1000), Drops: int64(k), Marks: int64(2 * k),
			// Packet k·10 departs having waited k µs: the window [2 ms, 10 ms] holds the
			// packets of k = 3…10 (ten each), whose mean wait is 6.5 µs.
			TxPackets: int64(10 * k), Waited: units.Time(10*k*(k+1)/2) * us})
	}
	run.Ports = []results.Port{p, {Switch: "s2", Port: 2, Name: "p3", Peer: "s1:p3", Rate: rate}}
	return sc, run
}

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

func TestWriteRunAndRerender(t *testing.T) {
	p := testPlan(t)
	sc, run := testRun("exp", 1, 1)
	exp, vars := ParseRunName(sc.Name)
	s, err := SummarizeInput(&Input{Experiment: exp, Vars: vars, Plan: p, Scenario: sc, Run: run,
		Paper:        &Paper{Ref: "Poseidon, NSDI'23, Fig. 12", Claim: "the victim gets its share", Notes: "scaled by 10"},
		Expectations: parse(t, expect.Spec{Name: "fair", Check: "jain(bulk) >= 0.8", Claim: "bulk flows share fairly"})})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if d := os.Getenv("REEF_REPORT_DIR"); d != "" {
		dir = d
	}
	if err := WriteRun(dir, s, run); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	page := []byte(html.UnescapeString(string(raw))) // attributes escape '+' as &#43;
	for _, name := range []string{"rate", "cwnd", "queue-delay", "fct-slowdown"} {
		png, err := os.ReadFile(filepath.Join(dir, "plots", name+".png"))
		if err != nil {
			t.Errorf("plot %s.png: %v", name, err)
			continue
		}
		if !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("%s.png is not a PNG", name)
		}
		if svg, err := os.ReadFile(filepath.Join(dir, "plots", name+".svg")); err != nil || !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("plot %s.svg: %v", name, err)
		}
		if !bytes.Contains(page, []byte(`id="`+name+`"`)) || !bytes.Contains(page, []byte(base64.StdEncoding.EncodeToString(png[:300]))) {
			t.Errorf("report.html does not embed %s.png", name)
		}
	}
	for _, want := range []string{"bulk flows share fairly", "jain(bulk) >= 0.8", "τ = 10", "Poseidon, NSDI'23, Fig. 12", "the victim gets its share", "Fidelity", "https://"} {
		has := strings.Contains(string(page), want)
		if want == "https://" {
			if has {
				t.Error("report.html refers to the network")
			}
			continue
		}
		if !has {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, f := range []string{SummaryFile, ResultsFile, InputFile, FlowsCSV, QueuesCSV} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// Re-rendering from the raw results gives the same summary.
	before, _ := os.ReadFile(filepath.Join(dir, SummaryFile))
	if _, err := Rerender(dir); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, SummaryFile))
	if !bytes.Equal(before, after) {
		t.Errorf("re-rendered summary differs:\n%s\n---\n%s", before, after)
	}
	back, err := ReadSummary(dir)
	if err != nil || back.Flows[0].GoodputBps != s.Flows[0].GoodputBps || back.Expectations[0].Name != "fair" {
		t.Errorf("ReadSummary = %+v, %v", back, err)
	}
}

func TestWriteSweep(t *testing.T) {
	p := testPlan(t)
	xs := parse(t,
		expect.Spec{Name: "b-share", Check: "b.goodput >= 0.4 * b.fair_share"},
		expect.Spec{Name: "ratio", Check: "poseidon:b.goodput >= 1.5 * swift:b.goodput"},
	)
	dir := t.TempDir()
	if d := os.Getenv("REEF_SWEEP_DIR"); d != "" {
		dir = d
	}
	var runs []RunEntry
	// b's goodput: poseidon 40 Mbps at M=2 and 45 at M=4; swift 25 and 20.
	for _, r := range []struct {
		cc, m string
		b     float64
	}{{"poseidon", "2", 40.0 / 25}, {"swift", "2", 1}, {"poseidon", "4", 45.0 / 25}, {"swift", "4", 20.0 / 25}} {
		name := "exp/cc=" + r.cc + ",M=" + r.m
		sc, run := testRun(name, 1, r.b)
		s, err := Summarize(p, sc, run, xs)
		if err != nil {
			t.Fatal(err)
		}
		rd := filepath.Join(dir, r.cc+"-M"+r.m)
		if err := WriteRun(rd, s, nil); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, RunEntry{Dir: rd, Summary: s})
	}
	w, err := WriteSweep(dir, runs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]expect.Result{}
	for _, r := range w.Expectations {
		got[r.Label()] = r
	}
	// b-share: 40, 25, 45, 20 Mbps against 0.4 × 50 = 20 → all pass. ratio: 40 ≥ 37.5
	// (M=2) passes, 45 ≥ 30 (M=4) passes.
	for label, pass := range map[string]bool{
		"b-share [M=2 cc=poseidon]": true, "b-share [M=2 cc=swift]": true, "b-share [M=4 cc=poseidon]": true,
		"b-share [M=4 cc=swift]": true, "ratio [M=2]": true, "ratio [M=4]": true,
	} {
		r, ok := got[label]
		if !ok || r.Pass != pass || r.Error != "" {
			t.Errorf("%s = %+v (ok %v)", label, r, ok)
		}
	}
	if len(got) != 6 || !w.Pass {
		t.Errorf("sweep results = %v, pass %v", got, w.Pass)
	}
	if !near(got["ratio [M=4]"].Value, 45e6) || !near(got["ratio [M=4]"].Bound, 30e6) {
		t.Errorf("ratio [M=4] = %+v", got["ratio [M=4]"])
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sweep-b-share-vs-m", "sweep-bulk-share-vs-m", "sweep-fct-slowdown-p50", "sweep-fct-slowdown-p99", "sweep-group-share"} {
		if _, err := os.Stat(filepath.Join(dir, "plots", f+".png")); err != nil {
			t.Errorf("sweep plot: %v", err)
		}
		if !bytes.Contains(page, []byte(`id="`+f+`"`)) {
			t.Errorf("sweep report.html lacks %s", f)
		}
	}
	if !bytes.Contains(page, []byte(`href="poseidon-M2/report.html"`)) {
		t.Error("sweep report.html does not link the runs")
	}
	if _, err := RerenderSweep(dir); err != nil {
		t.Fatal(err)
	}
}

// A directory written by other means (plan.json, scenario.json, results.json and
// summary.json, as the runner leaves it) re-renders with the checks its summary lists.
func TestRenderDirWithoutInput(t *testing.T) {
	p := testPlan(t)
	sc, run := testRun("exp/cc=swift", 1, 1)
	xs := parse(t, expect.Spec{Name: "fair", Check: "jain(bulk) >= 0.8"},
		expect.Spec{Name: "not-here", Check: "jain(bulk) >= 0.8", When: "cc == 'hpcc'"})
	s, err := Summarize(p, sc, run, xs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, v := range map[string]any{"plan.json": p, "scenario.json": sc, ResultsFile: run, SummaryFile: s} {
		if err := writeJSON(filepath.Join(dir, name), v); err != nil {
			t.Fatal(err)
		}
	}
	pass, err := RenderDir(dir)
	if err != nil || !pass {
		t.Fatalf("RenderDir = %v, %v", pass, err)
	}
	back, err := ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Checks) != 2 || len(back.Expectations) != 1 || back.Expectations[0].Name != "fair" || back.Experiment != "exp" {
		t.Errorf("re-rendered summary: checks %+v, expectations %+v", back.Checks, back.Expectations)
	}
	if _, err := os.Stat(filepath.Join(dir, HTMLFile)); err != nil {
		t.Error(err)
	}
	if _, err := RenderDir(t.TempDir()); err == nil {
		t.Error("RenderDir of an empty directory succeeded")
	}
}

// BenchmarkSummarizeMessages summarises a run of 4 long-lived flows and 5000 messages
// (each message gets its own oracle call).
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
	}
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
			s, err := Summarize(p, sc, run, nil)
			if err != nil {
				t.Fatal(err)
			}
			f := s.Fidelity
			if f.WorstPort != tc.worst || f.LatePort != tc.latePort || f.Frames != 15 || math.Abs(f.SkewRatio-tc.ratio) > 1e-6 ||
				math.Abs(f.LateRatio-tc.lateRatio) > 1e-6 || math.Abs(f.StallFraction-stalled[tc.name]) > 1e-9 || f.Verdict != tc.verdict {
				t.Errorf("fidelity = %+v (port may be late %v, host skewed %v, late %v)", f, portMay, hostMay, lateMay)
			}
		})
	}
}
