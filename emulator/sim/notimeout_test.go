package sim_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"reef/cc"
	_ "reef/cc/all"
	"reef/emulator/experiment"
	"reef/emulator/results"
	"reef/emulator/sim"
	"reef/units"
)

// noLossCC is how each algorithm runs in the lossless runs: the switch features and
// INT slots it needs, set as the reproductions set them (experiments/*.yaml).
var noLossCC = map[string]struct {
	switches string // the "*" entry of switches:
	intHops  int
	params   string // cc_params entry, "" for the defaults
}{
	"swift":  {},
	"lswift": {},
	"mswift": {},
	"oscar":  {params: "{batch_period: 5us}"},
	// TIMELY runs over PFC, as in its paper's incast (timely-incast.yaml): without
	// it the line-rate starts overflow any buffer before the rate comes down.
	"timely":         {switches: timelyPFC},
	"timely-patched": {switches: timelyPFC},
	"poseidon":       {switches: "{int: {mode: mpd, mpd_unit: 32ns}}"},
	"hpcc":           {switches: "{int: {mode: hpcc}}", intHops: 2},
	"powertcp":       {switches: "{int: {mode: hpcc}}", intHops: 2},
	"theta-powertcp": {},
	"dctcp":          {switches: "{ecn: {mode: step, k: 100KB}}"},
	"dcqcn":          {switches: "{ecn: {mode: red, min: 5KB, max: 200KB, pmax: 0.01}}"},
}

const timelyPFC = "{pfc: {enabled: true, xoff: 200KB, xon: 100KB}}"

// notLongLived are the registered algorithms the test leaves out: "none" sends at a
// fixed rate (an incast of it overflows any buffer) and "fixedwin" is a test fixture.
var notLongLived = []string{"none", "fixedwin"}

// noLossFabric is one lossless set-up, in paper units, run at time scale tau.
type noLossFabric struct {
	name     string
	rate     string // every link
	delay    string // every link
	tau      float64
	senders  int
	step     string // the senders start this far apart
	duration string
}

var noLossFabrics = []noLossFabric{
	// issue 21: a 16-to-1 incast at 10 Gbit/s, 1500 B frames, deep buffers, time scale 1
	{name: "incast16", rate: "10Gbps", delay: "1us", tau: 1, senders: 16, step: "0s", duration: "20ms"},
	{name: "incast16", rate: "10Gbps", delay: "5us", tau: 1, senders: 16, step: "0s", duration: "20ms"},
	{name: "incast16", rate: "10Gbps", delay: "10us", tau: 1, senders: 16, step: "0s", duration: "20ms"},
	// the same at the reproductions' time scales and rates
	{name: "incast16", rate: "10Gbps", delay: "2us", tau: 10, senders: 16, step: "0s", duration: "20ms"},
	{name: "incast16", rate: "100Gbps", delay: "1us", tau: 100, senders: 16, step: "0s", duration: "4ms"},
	{name: "incast16", rate: "200Gbps", delay: "700ns", tau: 200, senders: 16, step: "0s", duration: "2ms"},
	// flows joining a standing queue one by one, on a short and a long path (base RTT
	// ≈ 10 and 65 µs). Not covered: a flow joining a standing queue longer than
	// Tuning.InitRTO (its timeout before the first RTT sample), as Patched TIMELY
	// builds over PFC with 16 flows joining 1 ms apart.
	{name: "join4", rate: "10Gbps", delay: "1us", tau: 1, senders: 4, step: "2ms", duration: "20ms"},
	{name: "join4", rate: "10Gbps", delay: "10us", tau: 1, senders: 4, step: "2ms", duration: "20ms"},
	{name: "join4", rate: "200Gbps", delay: "700ns", tau: 200, senders: 4, step: "100us", duration: "2ms"},
}

// noLossExperiment writes the experiment file of one algorithm on one fabric: senders
// h1…hN on s1, the receiver alone on s2, buffers deep enough that nothing is dropped.
func noLossExperiment(alg string, f noLossFabric) string {
	c := noLossCC[alg]
	var b strings.Builder
	fmt.Fprintf(&b, "name: noloss-%s\n", f.name)
	fmt.Fprintf(&b, "topology:\n  name: %s\n  defaults: {rate: %s, delay: %s, buffer: 256MB, mtu: 1500}\n", f.name, f.rate, f.delay)
	fmt.Fprintf(&b, "  generator: {kind: dumbbell, hosts_left: %d, hosts_right: 1}\n", f.senders)
	fmt.Fprintf(&b, "time_scale: %g\nduration: %s\nsample_interval: 100us\nseed: 1\n", f.tau, f.duration)
	if c.switches != "" {
		fmt.Fprintf(&b, "switches:\n  \"*\": %s\n", c.switches)
	}
	fmt.Fprintf(&b, "defaults:\n  cc: %s\n  int_hops: %d\n", alg, c.intHops)
	if c.params != "" {
		fmt.Fprintf(&b, "  cc_params: {%s: %s}\n", alg, c.params)
	}
	fmt.Fprintf(&b, "flows:\n  - {group: bulk, count: %d, src: \"h{i}\", dst: h%d, start_step: %s}\n", f.senders, f.senders+1, f.step)
	return b.String()
}

// noLossRun compiles the experiment of alg on f and runs it on the sim.
func noLossRun(t *testing.T, alg string, f noLossFabric) *results.Run {
	t.Helper()
	_, run := runExperiment(t, noLossExperiment(alg, f))
	return run
}

// runExperiment compiles the experiment file src (one point) for the sim and runs it.
func runExperiment(t *testing.T, src string) (*experiment.Run, *results.Run) {
	t.Helper()
	x, err := experiment.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	r, err := x.Compile(x.Points[0], experiment.CompileOptions{Backend: sim.Name})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(r.Plan, r.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(r.Scenario.Duration)
	return r, s.Results()
}

// A long-lived run that drops nothing has no retransmission timeouts and no
// retransmissions (issue 21: a lossless 16-to-1 DCTCP incast took 8 timeouts), for every
// algorithm, at time scale 1 and at the reproductions' scales.
func TestNoTimeoutsWithoutLoss(t *testing.T) {
	for _, alg := range cc.Names() {
		if _, ok := noLossCC[alg]; !ok && !slices.Contains(notLongLived, alg) {
			t.Errorf("%s: add a row to noLossCC (how it runs without loss)", alg)
		}
	}
	algs := slices.Sorted(maps.Keys(noLossCC))
	for _, f := range noLossFabrics {
		for _, alg := range algs {
			t.Run(fmt.Sprintf("%s/%s,%s,tau=%g/%s", f.name, f.rate, f.delay, f.tau, alg), func(t *testing.T) {
				t.Parallel()
				run := noLossRun(t, alg, f)
				for _, p := range run.Ports {
					if p.Drops > 0 {
						t.Fatalf("port %s→%s dropped %d packets: the run is not lossless", p.Switch, p.Peer, p.Drops)
					}
				}
				var acked units.Bytes
				for _, fl := range run.Flows {
					acked += fl.Acked
					if fl.Timeouts > 0 || fl.Retransmits > 0 || fl.Spurious > 0 {
						t.Errorf("flow %s: %d timeouts, %d retransmissions (%d spurious) without loss",
							fl.Name, fl.Timeouts, fl.Retransmits, fl.Spurious)
					}
				}
				if acked == 0 {
					t.Fatal("no flow made progress")
				}
			})
		}
	}
}
