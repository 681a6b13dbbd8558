package daemon

import (
	"log/slog"
	"testing"

	_ "reef/cc/all"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/emulator/topo"
	"reef/hostd"
	"reef/hostd/transport"
	"reef/units"
)

// TestSampleAllocatesNothing checks that sampling a host's flows allocates nothing but
// the samples' own room (given, here, up front): the daemon samples on the datapath
// thread every sample interval with the GC off. The driver's side of the tick is
// afpacket's TestTickAllocatesNothing.
func TestSampleAllocatesNothing(t *testing.T) {
	tp, err := topo.Parse("t.yaml", []byte(`name: t
defaults: {rate: 1Gbps, delay: 18us, buffer: 4MB, mtu: 1500}
generator: {kind: dumbbell, hosts: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	h1, _ := p.HostByName("h1")
	h3, _ := p.HostByName("h3")
	job := &Job{Host: h1.Config, Tuning: transport.DefaultTuning(), Seed: 1, Duration: units.Second,
		SampleInterval: units.Millisecond}
	for i, cc := range []string{"dctcp", "swift", "hpcc"} {
		job.Flows = append(job.Flows, scenario.HostFlow{Flow: scenario.Flow{ID: uint32(i + 1), Name: cc, Src: "h1", Dst: "h3", CC: cc},
			DstAddr: h3.Config.Addr, BaseRTT: 100 * units.Microsecond, PathHops: 2})
	}
	h, out, err := build(job, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for now := units.Time(0); now < units.Millisecond; now += 10 * units.Microsecond {
		for {
			if _, ok := h.Poll(now); !ok {
				break
			}
		}
	}
	for i := range out.Flows {
		out.Flows[i].Samples = make([]results.FlowSample, 0, 1000)
	}
	s := newFlowSampler([]*hostd.Host{h}, []*Output{out})
	now := units.Millisecond
	s.sample(now)
	if allocs := testing.AllocsPerRun(100, func() { now += units.Millisecond; s.sample(now) }); allocs != 0 {
		t.Errorf("%v allocations per sample, want 0", allocs)
	}
	if n := len(out.Flows[0].Samples); n < 100 {
		t.Errorf("%d samples of a started flow, want one per sample", n)
	}
}
