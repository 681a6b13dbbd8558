package netns_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"reef/cc"
	_ "reef/cc/all"
	"reef/emulator"
	"reef/emulator/metrics"
	"reef/emulator/netns"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/emulator/topo"
	"reef/internal/testenv"
	"reef/units"
)

// dumbbellDoc is a dumbbell of hosts per side at rate; %s is the lab's name.
const dumbbellDoc = `name: %s
defaults: {rate: %s, delay: 20us, buffer: 1MB, mtu: 1500}
generator: {kind: dumbbell, hosts: %d}
switches:
  "*":
    ecn: {mode: step, k: %s}
    int: {mode: mpd, mpd_unit: 1us}
`

func labName(prefix string) string { return fmt.Sprintf("%s%05x", prefix, rand.Uint32()&0xfffff) }

func dumbbell(t testing.TB, prefix, rate string, hosts int, k string) *plan.Plan {
	t.Helper()
	lab := labName(prefix)
	tp, err := topo.Parse(lab+".yaml", []byte(fmt.Sprintf(dumbbellDoc, lab, rate, hosts, k)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// swiftTau scales Swift's defaults (25 µs target, 1 µs per hop) to 100 Mbit/s links,
// where one 1500 B packet takes 120 µs: a 1 ms target, 40 µs per hop.
const swiftTau = 40

// swiftFlows are n long-lived Swift flows from the left hosts to the right ones.
func swiftFlows(t testing.TB, n, hostsPerSide int) []scenario.Flow {
	t.Helper()
	spec, err := cc.Lookup("swift")
	if err != nil {
		t.Fatal(err)
	}
	params := spec.Defaults()
	if err := cc.ScaleParams(params, swiftTau); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	var fs []scenario.Flow
	for i := range n {
		fs = append(fs, scenario.Flow{ID: uint32(i + 1), Name: fmt.Sprintf("f%d", i+1), Group: "swift",
			Src: fmt.Sprintf("h%d", i%hostsPerSide+1), Dst: fmt.Sprintf("h%d", hostsPerSide+i%hostsPerSide+1), CC: "swift", CCParams: raw})
	}
	return fs
}

func runOn(t testing.TB, be emulator.Backend, p *plan.Plan, sc *scenario.Scenario) *results.Run {
	t.Helper()
	run, err := be.Run(context.Background(), p, sc, emulator.RunOptions{OutDir: "/tmp/rt/" + t.Name()})
	if err != nil {
		t.Fatalf("%s: %v", be.Name(), err)
	}
	return run
}

func goodput(run *results.Run, sc *scenario.Scenario, i int) units.Rate {
	f := run.Flows[i]
	return metrics.Goodput(f.Start, f.Samples, sc.Warmup, sc.Duration)
}

func TestRunSwiftDumbbell(t *testing.T) {
	testenv.RequireRoot(t)
	p := dumbbell(t, "rsw", "100Mbps", 1, "30KB")
	sc := &scenario.Scenario{Name: "swift-1", Seed: 1, Duration: units.Second, Warmup: 300 * units.Millisecond,
		SampleInterval: 10 * units.Millisecond, Flows: swiftFlows(t, 1, 1)}
	run := runOn(t, netns.Backend{}, p, sc)
	g := goodput(run, sc, 0)
	t.Logf("netns goodput %v over [%v, %v), %d samples", g, sc.Warmup, sc.Duration, len(run.Flows[0].Samples))
	for _, pt := range run.Ports {
		t.Logf("port %s:%s tx %d B, %d samples, lateness %+v", pt.Switch, pt.Name, pt.TxBytes, len(pt.Samples), pt.Lateness)
	}
	for _, h := range run.Hosts {
		t.Logf("host %s lateness %+v", h.Name, h.Lateness)
	}
	if g < 90*units.Mbps {
		t.Errorf("goodput %v, want ≥ 90%% of 100 Mbit/s", g)
	}
}
