package daemon

import (
	"log/slog"
	"testing"

	_ "reef/cc/all"
	"reef/emulator/plan"
	"reef/emulator/scenario"
	"reef/hostd"
	"reef/hostd/transport"
	"reef/internal/hist"
	"reef/internal/testlab"
	"reef/units"
)

// TestSampleAllocatesNothing checks that sampling a host's flows allocates nothing but
// the samples' own room (given, here, up front): the daemon samples on the datapath
// thread every sample interval with the GC off. The driver's side of the tick is
// afpacket's TestTickAllocatesNothing.
func TestSampleAllocatesNothing(t *testing.T) {
	p := dumbbell(t)
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
	// Room for a second's samples at 1 ms is made (and touched) before the run.
	s := newFlowSampler([]*hostd.Host{h}, []*Output{out}, job.Duration, job.SampleInterval)
	if c := cap(out.Flows[0].Samples); c < 1000 {
		t.Fatalf("room for %d samples before the run; want the run's 1000", c)
	}
	now := units.Millisecond
	s.sample(now)
	if allocs := testing.AllocsPerRun(100, func() { now += units.Millisecond; s.sample(now) }); allocs != 0 {
		t.Errorf("%v allocations per sample, want 0", allocs)
	}
	if n := len(out.Flows[0].Samples); n < 100 {
		t.Errorf("%d samples of a started flow, want one per sample", n)
	}
}

// TestEdgeSnapshots drives a group node as the driver would (polls at 37 µs steps): it
// wakes at each of the jobs' edges and snapshots every started flow at exactly that
// time, once, and the edges the run never reached are taken at the end only if the
// driver stopped past them.
func TestEdgeSnapshots(t *testing.T) {
	p := dumbbell(t)
	h1, _ := p.HostByName("h1")
	h3, _ := p.HostByName("h3")
	job := &Job{Host: h1.Config, Tuning: transport.DefaultTuning(), Seed: 1, Duration: units.Millisecond,
		Flows: []scenario.HostFlow{{Flow: scenario.Flow{ID: 1, Name: "f", Src: "h1", Dst: "h3", CC: "dctcp", Start: 100 * units.Microsecond},
			DstAddr: h3.Config.Addr, BaseRTT: 100 * units.Microsecond, PathHops: 2}}}
	h, out, err := build(job, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	edges := []units.Time{50 * units.Microsecond, 300 * units.Microsecond, 700 * units.Microsecond, 2 * units.Millisecond}
	s := newFlowSampler([]*hostd.Host{h}, []*Output{out}, job.Duration, 0)
	node := &hostsNode{hosts: []*hostd.Host{h}, late: []*hist.Durations{new(hist.Durations)}, edges: edges, snap: s.edge}
	for now := units.Time(0); now <= units.Millisecond; now += 37 * units.Microsecond {
		if d := node.NextDeadline(); node.next < len(edges) && d > edges[node.next] {
			t.Fatalf("at %v: deadline %v after the next edge %v", now, d, edges[node.next])
		}
		for {
			if _, ok := node.Poll(now); !ok {
				break
			}
		}
	}
	node.catchUp(units.Millisecond + 10*units.Microsecond) // the driver stopped before 2ms
	got := out.Flows[0].Edges
	// 50µs is before the flow started: no snapshot of it.
	if len(got) != 2 || got[0].T != edges[1] || got[1].T != edges[2] {
		t.Fatalf("edges %+v; want snapshots at exactly %v and %v", got, edges[1], edges[2])
	}
}

// dumbbell plans a 1 Gbit/s dumbbell with two hosts a side (h1, h2 | h3, h4).
func dumbbell(t *testing.T) *plan.Plan {
	t.Helper()
	return testlab.Plan(t, "t", `name: t
defaults: {rate: 1Gbps, delay: 18us, buffer: 4MB, mtu: 1500}
generator: {kind: dumbbell, hosts: 2}
`)
}

// PollBefore(port, …) takes only that port's host's frames due before the arrival:
// the other hosts cannot depend on the frame, and wait for the next Poll.
func TestPollBeforePollsOnlyThePort(t *testing.T) {
	p := dumbbell(t)
	h3, _ := p.HostByName("h3")
	node := &hostsNode{}
	for i, name := range []string{"h1", "h2"} {
		hc, _ := p.HostByName(name)
		job := &Job{Host: hc.Config, Tuning: transport.DefaultTuning(), Seed: 1, Duration: units.Millisecond,
			Flows: []scenario.HostFlow{{Flow: scenario.Flow{ID: uint32(i + 1), Name: name, Src: name, Dst: "h3", CC: "dctcp"},
				DstAddr: h3.Config.Addr, BaseRTT: 100 * units.Microsecond, PathHops: 2}}}
		h, _, err := build(job, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		node.hosts = append(node.hosts, h)
		node.late = append(node.late, new(hist.Durations))
	}
	// Both hosts have frames due from 0 on; an arrival on port 1 at 50 µs, read at 80 µs.
	const at, now = 50 * units.Microsecond, 80 * units.Microsecond
	var got []int
	for {
		o, ok := node.PollBefore(1, at, now)
		if !ok {
			break
		}
		if o.Due >= at {
			t.Fatalf("frame due %v, after the arrival at %v", o.Due, at)
		}
		got = append(got, o.Port)
	}
	if len(got) == 0 {
		t.Fatal("no frame from port 1's host before the arrival")
	}
	for _, port := range got {
		if port != 1 {
			t.Fatalf("PollBefore(1, …) returned a frame of port %d", port)
		}
	}
	if o, ok := node.Poll(now); !ok || o.Port != 0 {
		t.Fatalf("Poll after it: port %d (ok %v), want host 0's frames, left for it", o.Port, ok)
	}
}
