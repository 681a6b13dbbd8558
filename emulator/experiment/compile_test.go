package experiment

import (
	"encoding/json"
	"strings"
	"testing"

	"reef/emulator/scenario"
	"reef/switchd"
	"reef/units"
)

const inline = `name: pl
topology:
  name: pl
  defaults: {rate: 100Gbps, delay: 1us, buffer: 1MB, mtu: 1500}
  generator: {kind: parking-lot, hops: 3, hosts_per_switch: [3, 4, 1]}
time_scale: 100
backend_time_scale: {slow: 1000}
duration: 1ms
warmup: 200us
seed: 3
switches:
  "*": {int: {mode: mpd, mpd_unit: 256ns}}
  s2: {ecn: {mode: step, k: 30KB}}
defaults: {cc: xtest}
flows:
  - {name: victim, src: h1, dst: h8, params: {target: 25us, max_rate: 100Gbps}}
  - {group: green, count: "${M}", src: "h{i}", dst: h4, start: 0s, start_step: 100us, stop: 900us, stop_step: -100us}
timeline:
  - {at: 500us, link: s2-s1, rate: 50Gbps}
  - {at: 100us, link: "s3-h8", down: true}
sweep: {M: [0, 2]}
expectations:
  - {name: share, check: "victim.goodput >= 0.85 * victim.fair_share"}
`

func TestCompileScalesAndExpands(t *testing.T) {
	x, err := Parse("inline.yaml", []byte(inline))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := x.CompileAll(CompileOptions{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("runs %d", len(runs))
	}
	r := runs[1] // M=2
	sc := r.Scenario
	if sc.Name != "pl/M=2" || sc.Seed != 9 || sc.TimeScale != 100 {
		t.Fatalf("scenario %q seed %d τ %g", sc.Name, sc.Seed, sc.TimeScale)
	}
	if sc.Duration != 100*units.Millisecond || sc.Warmup != 20*units.Millisecond || sc.SampleInterval != 500*units.Microsecond {
		t.Fatalf("times not scaled ×100: %v %v %v", sc.Duration, sc.Warmup, sc.SampleInterval)
	}
	if len(sc.Flows) != 3 {
		t.Fatalf("flows %d, want victim + 2 green", len(sc.Flows))
	}
	g2 := sc.Flows[2]
	if g2.Name != "green2" || g2.Src != "h2" || g2.Group != "green" || g2.Start != 10*units.Millisecond || g2.Stop != 80*units.Millisecond {
		t.Fatalf("green2 = %+v", g2)
	}
	var prm testParams
	if err := json.Unmarshal(sc.Flows[0].CCParams, &prm); err != nil {
		t.Fatal(err)
	}
	if prm.Target != 2500*units.Microsecond || prm.Max != units.Gbps {
		t.Fatalf("params not scaled: %+v", prm)
	}
	for _, l := range r.Plan.Links {
		if l.Rate != units.Gbps || l.Delay != 100*units.Microsecond || l.Buffer != units.Megabyte {
			t.Fatalf("link not scaled (rate ÷ τ, delay × τ, buffer kept): %+v", l)
		}
	}
	s2, _ := r.Plan.SwitchByName("s2")
	s1, _ := r.Plan.SwitchByName("s1")
	if s2.Config.ECN.Mode != switchd.ECNStep || s1.Config.ECN.Mode == switchd.ECNStep {
		t.Fatalf("ecn applied to the wrong switches: s1 %v s2 %v", s1.Config.ECN, s2.Config.ECN)
	}
	if s1.Config.INT.Mode != switchd.INTMPD || s1.Config.INT.MPDUnit != 25600*units.Nanosecond {
		t.Fatalf("int %+v, want mpd with 256ns × 100", s1.Config.INT)
	}
	if len(sc.Events) != 2 || sc.Events[0].Kind != scenario.EventDown || sc.Events[1].Rate != 500*units.Mbps || sc.Events[1].At != 50*units.Millisecond {
		t.Fatalf("events %+v", sc.Events)
	}
	if l := r.Plan.Links[sc.Events[1].Link]; !(l.A.Node == "s1" && l.B.Node == "s2" || l.A.Node == "s2" && l.B.Node == "s1") {
		t.Fatalf("event link %+v", l)
	}
	if len(r.Expectations) != 1 {
		t.Fatalf("expectations %d", len(r.Expectations))
	}
	slow, err := x.Compile(x.Points[1], CompileOptions{Backend: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	if slow.TimeScale != 1000 || slow.Scenario.Duration != units.Second || slow.Plan.Links[0].Rate != 100*units.Mbps {
		t.Fatalf("backend_time_scale: τ %g, duration %v, rate %v", slow.TimeScale, slow.Scenario.Duration, slow.Plan.Links[0].Rate)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{"missing host", func(s string) string { return strings.Replace(s, "dst: h8,", "dst: h80,", 1) }, []string{"inline.yaml:16:", `no host "h80"`, "did you mean"}},
		{"missing group host", func(s string) string {
			return strings.Replace(s, "hosts_per_switch: [3, 4, 1]", "hosts_per_switch: [1, 4, 1]", 1)
		}, []string{"inline.yaml:", `no host`}},
		{"unknown link", func(s string) string { return strings.Replace(s, "link: s2-s1", "link: s1-s3", 1) }, []string{"inline.yaml:19:", `no link`}},
		{"bad topology", func(s string) string { return strings.Replace(s, "hops: 3", "hops: 1", 1) }, []string{"inline.yaml:5"}},
		{"unknown port in check", func(s string) string {
			return strings.Replace(s, "victim.goodput >= 0.85 * victim.fair_share", "queue_delay_p99(s1:p99) < 50us", 1)
		}, []string{"inline.yaml:23:", "s1:p99"}},
		{"pattern matches nothing", func(s string) string { return strings.Replace(s, "s2: {ecn", "tor*: {ecn", 1) }, []string{"inline.yaml:13:", "matches no switch"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.edit(inline)
			if src == inline {
				t.Fatal("edit did not change the file")
			}
			x, err := Parse("inline.yaml", []byte(src))
			if err == nil {
				_, err = x.CompileAll(CompileOptions{})
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

const withWorkloads = `name: wl
topology:
  name: wl
  defaults: {rate: 100Gbps, delay: 1us, buffer: 1MB, mtu: 1500}
  generator: {kind: dumbbell, hosts: 4}
time_scale: 100
duration: 2ms
defaults: {cc: xtest}
workloads:
  - {kind: poisson, cdf: websearch, load: 0.5, hosts: [left], receivers: [right]}
  - {kind: poisson, size: 64KB, load: 0.2, group: fixed, senders: ["h1"], receivers: ["h[5-8]"]}
  - {kind: incast, senders: [left], receivers: [h5, h6], size: 100KB, period: 500us, jitter: 10us}
`

// Random workloads are reproducible for a seed and change with it.
func TestWorkloadsSeeded(t *testing.T) {
	x, err := Parse("wl.yaml", []byte(withWorkloads))
	if err != nil {
		t.Fatal(err)
	}
	flows := func(seed uint64) []scenario.Flow {
		r, err := x.Compile(x.Points[0], CompileOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return r.Scenario.Flows
	}
	a, b, c := flows(1), flows(1), flows(2)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	jc, _ := json.Marshal(c)
	if string(ja) != string(jb) {
		t.Fatal("same seed, different workloads")
	}
	if string(ja) == string(jc) {
		t.Fatal("a different seed left the random workloads unchanged")
	}
	groups := map[string]int{}
	for _, f := range a {
		groups[f.Group]++
		switch f.Group {
		case "poisson":
			if f.Src > "h4" || f.Dst < "h5" {
				t.Fatalf("poisson flow %s from %s to %s: want left → right", f.Name, f.Src, f.Dst)
			}
		case "fixed":
			if f.Size != 64*units.Kilobyte || f.Src != "h1" {
				t.Fatalf("fixed flow %+v", f)
			}
		case "incast":
			if f.Size != 100*units.Kilobyte || f.Start >= 200*units.Millisecond {
				t.Fatalf("incast flow %+v", f)
			}
		}
	}
	// incast: 4 rounds (2 ms / 500 µs) of 4 senders
	if groups["incast"] != 16 || groups["poisson"] == 0 || groups["fixed"] == 0 {
		t.Fatalf("groups %v", groups)
	}
	ids := map[uint32]bool{}
	for _, f := range a {
		if ids[f.ID] {
			t.Fatalf("id %d twice", f.ID)
		}
		ids[f.ID] = true
	}
}
