// Package daemon runs one emulated host for real: it builds the pure host (hostd.Host)
// from a Job the controller wrote, drives it over the host's interface with the AF_PACKET
// driver (the same one the switches use), samples every flow at the job's interval, and
// at the end of the run writes what it measured as results.Flow records. cmd/hostd is
// its thin main; the netns and docker backends write the jobs and read the outputs.
//
// Where it sits in the flow:
//
//	controller ── job.json ──► hostd (this package) ── output.json ──► controller
//	                               │
//	        eth0 ◄── AF_PACKET ──► hostd.Host (transport, cc/, NIC pacer)
//
// The kernel keeps its own stack on the same interface (ping, iperf3 still work); the
// daemon holds the reef UDP port so the kernel does not answer reef packets with ICMP
// port-unreachable.
//
// Times are the computed schedule's at both ends, as in the sim: the driver appends
// each frame's NIC Due in a release trailer (so the first switch computes from when the
// NIC was due to send, not from when this daemon got round to it), and a reef frame
// from the last switch reaches the host at the Due its trailer carries, so RTT samples
// and ECN/INT feedback are free of the last hop's release jitter (see afpacket).
package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"

	"reef/afpacket"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/hostd"
	"reef/hostd/transport"
	"reef/internal/hist"
	"reef/switchd"
	"reef/units"
	"reef/wire"
)

// Job is what the controller hands one host daemon.
type Job struct {
	// Host is the planner's configuration of this host.
	Host hostd.Config `json:"host"`
	// MPDUnit is the lab's Poseidon MPD unit (0 when no switch stamps MPD).
	MPDUnit units.Time `json:"mpd_unit,omitempty"`
	// Tuning is the transport's loss-recovery tuning, already scaled to lab time.
	Tuning transport.Tuning `json:"tuning"`
	// Seed is the run's seed (flows seed their algorithms from it and their ID).
	Seed uint64 `json:"seed"`
	// Duration is the lab time at which the daemon stops and writes its output.
	Duration units.Time `json:"duration"`
	// SampleInterval is how often every flow is sampled (lab time).
	SampleInterval units.Time `json:"sample_interval"`
	// Edges are the times (lab time) of exact snapshots of every flow
	// (results.Flow.Edges): the measurement window's edges and this host's flows'
	// stops, so window figures do not depend on the sample interval.
	Edges []units.Time `json:"edges,omitempty"`
	// Flows are the flows this host sends.
	Flows []scenario.HostFlow `json:"flows"`
	// RTPriority, when > 0, runs the datapath thread under SCHED_FIFO at that priority
	// (best effort), as the switch daemons do: on a busy machine an ordinary thread
	// wakes hundreds of µs late and the NIC pacer with it.
	RTPriority int `json:"rt_priority,omitempty"`
	// TimerGrace is how long after a timer's deadline the host fires it (at its
	// deadline in computed time; see hostd.Options.TimerGrace). 0 means
	// DefaultTimerGrace; a negative value fires timers when due.
	TimerGrace units.Time `json:"timer_grace,omitempty"`
}

// DefaultTimerGrace is Job.TimerGrace's default: longer than the stalls a daemon
// suffers on a quiet 2-core machine (its p99 release lateness is 1-2 ms, its worst
// 5-10 ms), so that an ACK read late still cancels the RTO it preceded. A real
// timeout's retransmission leaves up to this much late, still carrying its computed
// Due; the next switch accounts for it as skew.
const DefaultTimerGrace = 5 * units.Millisecond

// Output is what a host daemon writes at the end of its run.
type Output struct {
	Host string `json:"host"`
	// Flows are this host's sending flows with their time series.
	Flows []results.Flow `json:"flows"`
	// Receivers are the flows this host received.
	Receivers []hostd.ReceiverStats `json:"receivers"`
	// Stats are host-wide counters; Driver the I/O driver's, incl. timer lateness.
	Stats  hostd.HostStats `json:"stats"`
	Driver afpacket.Stats  `json:"driver"`
	// Lateness is how late the driver released the NIC's frames (now − Due at Poll).
	Lateness results.Lateness `json:"lateness"`
	// Skew is how stale the host's decisions were for the frames it read late
	// (hostd.Host.Skew).
	Skew results.Lateness `json:"skew"`
}

// ReadJob reads a job file.
func ReadJob(path string) (*Job, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hostd: %w", err)
	}
	var j Job
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("hostd: job %s: %w", path, err)
	}
	return &j, nil
}

// hostsNode lets the driver drive a group of hosts, host i on driver port i, and
// records how late each host's frames were released.
type hostsNode struct {
	hosts []*hostd.Host
	late  []*hist.Durations
	// edges are the snapshot times (lab time, sorted), next the first not yet taken;
	// snap takes one at its time.
	edges []units.Time
	next  int
	snap  func(at units.Time)
}

// catchUp takes the snapshots due at or before t, each at its own time: the driver
// calls the node at every frame and every deadline (the next edge's included), so
// nothing happened between a snapshot's time and t.
func (a *hostsNode) catchUp(t units.Time) {
	for a.next < len(a.edges) && a.edges[a.next] <= t {
		a.snap(a.edges[a.next])
		a.next++
	}
}

func (a *hostsNode) Receive(now units.Time, port int, frame []byte) {
	a.catchUp(now)
	if port >= 0 && port < len(a.hosts) {
		a.hosts[port].Receive(now, 0, frame)
	}
}

func (a *hostsNode) NextDeadline() units.Time {
	d := units.Never
	if a.next < len(a.edges) {
		d = a.edges[a.next]
	}
	for _, h := range a.hosts {
		d = min(d, h.NextDeadline())
	}
	return d
}

func (a *hostsNode) Resumed(from, now units.Time) {
	for _, h := range a.hosts {
		h.Resumed(from, now)
	}
}

// Poll returns the next frame due at or before now, from any host.
func (a *hostsNode) Poll(now units.Time) (switchd.Out, bool) {
	a.catchUp(now)
	for i := range a.hosts {
		if o, ok := a.poll(i, now+1, now); ok {
			return o, true
		}
	}
	return switchd.Out{}, false
}

// PollBefore returns the next frame host port had due before at, which the driver
// releases at now (afpacket.ArrivalClocked): the frames a host had due before a frame it
// read late arrived leave as they would have on time, each by its own ACK. The other
// hosts are independent of the frame, so they wait for the next Poll.
func (a *hostsNode) PollBefore(port int, at, now units.Time) (switchd.Out, bool) {
	if port < 0 || port >= len(a.hosts) {
		return switchd.Out{}, false
	}
	a.catchUp(at - 1)
	return a.poll(port, at, now)
}

// poll returns host i's next frame due before at, released at now.
func (a *hostsNode) poll(i int, at, now units.Time) (switchd.Out, bool) {
	h := a.hosts[i]
	if h.NextDeadline() >= at {
		return switchd.Out{}, false
	}
	o, ok := h.Poll(at - 1)
	if !ok {
		return switchd.Out{}, false
	}
	a.late[i].Add(now - o.Due)
	return switchd.Out{Port: i, Frame: o.Frame, Due: o.Due}, true
}

// Member is one host of a group a daemon runs: its job, the network namespace its
// interface is in (a path such as /run/netns/NAME; "": the daemon's own) and where its
// Output goes. A group's job file (hostd --group) is a JSON []Member.
type Member struct {
	Job   *Job   `json:"job"`
	Netns string `json:"netns,omitempty"`
	Out   string `json:"out"`
}

// ReadGroup reads a group's job file.
func ReadGroup(path string) ([]Member, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hostd: %w", err)
	}
	var g []Member
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("hostd: group %s: %w", path, err)
	}
	for i, m := range g {
		if m.Job == nil || m.Out == "" {
			return nil, fmt.Errorf("hostd: group %s: member %d: want a job and an out path", path, i)
		}
	}
	return g, nil
}

// RunGroup runs the members' hosts in one daemon until the jobs' duration has passed on
// clock (or ctx ends), and returns each member's output, in order. Each host keeps its
// own namespace, interface, address and held UDP port (kernel programs still run in
// it), while one datapath thread paces them all. ready, when non-nil, is called once
// every interface is open.
func RunGroup(ctx context.Context, members []Member, clock *afpacket.Clock, log *slog.Logger, ready func()) ([]*Output, error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("hostd: no hosts to run")
	}
	node := &hostsNode{}
	outs := make([]*Output, len(members))
	until := units.Time(0)
	var (
		ports, nss []string
		mtu        int
		rtPrio     int
		interval   units.Time
	)
	for k, m := range members {
		job := m.Job
		h, out, err := build(job, log.With("host", job.Host.Name))
		if err != nil {
			return nil, err
		}
		node.hosts = append(node.hosts, h)
		node.late = append(node.late, new(hist.Durations))
		outs[k] = out
		// Hold the reef port so the kernel drops reef packets quietly instead of
		// answering with ICMP port unreachable.
		var hold *net.UDPConn
		err = afpacket.InNetns(m.Netns, func() error {
			var err error
			hold, err = net.ListenUDP("udp4", &net.UDPAddr{IP: job.Host.Addr.AsSlice(), Port: wire.Port})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("hostd %s: hold UDP port %d: %w", job.Host.Name, wire.Port, err)
		}
		defer hold.Close()
		_ = hold.SetReadBuffer(4096)
		ports, nss = append(ports, job.Host.Iface), append(nss, m.Netns)
		mtu, rtPrio, until = max(mtu, job.Host.MTU), max(rtPrio, job.RTPriority), max(until, job.Duration)
		if interval == 0 || (job.SampleInterval > 0 && job.SampleInterval < interval) {
			interval = job.SampleInterval
		}
		node.edges = append(node.edges, job.Edges...)
	}
	slices.Sort(node.edges)
	node.edges = slices.Compact(node.edges)
	if interval <= 0 {
		interval = units.Millisecond
	}
	sampler := newFlowSampler(node.hosts, outs, until, interval)
	node.snap = sampler.edge
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	drv, err := afpacket.Open(node, afpacket.Config{
		Ports: ports,
		Netns: nss,
		// Bypass the qdisc: hostd paces reef traffic itself; the tbf on the interface
		// shapes the kernel's own traffic (ping, iperf3).
		Port:       afpacket.PortOptions{MTU: mtu, QdiscBypass: true},
		Clock:      clock,
		RTPriority: rtPrio,
		Tick:       interval,
		Until:      until,
		OnTick: func(now units.Time, _ *afpacket.Stats) {
			sampler.sample(now)
			if now >= until {
				cancel()
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("hostd %s: %w", members[0].Job.Host.Name, err)
	}
	defer drv.Close()
	if ready != nil {
		ready()
	}
	if err := drv.Run(runCtx); err != nil && runCtx.Err() == nil {
		return nil, fmt.Errorf("hostd %s: %w", members[0].Job.Host.Name, err)
	}
	now := clock.Now()
	node.catchUp(now) // edges the driver stopped at or after: nothing happened since
	sampler.sample(now)
	st := drv.Stats()
	for k, h := range node.hosts {
		out := outs[k]
		finish(out, h)
		out.Driver = st
		out.Driver.Ports = st.Ports[k : k+1]
		out.Lateness = results.LatenessOf(node.late[k].Summary())
		out.Skew = results.LatenessOf(h.Skew())
	}
	return outs, nil
}

// flowSampler samples every started flow of a group's hosts into their outputs, on the
// datapath thread every sample interval. The daemon runs with the GC off: it allocates
// nothing but the room the samples it appends (the run's data) take, and that room is
// allocated and touched before the run for as many samples as the run takes (up to
// maxSampleRoom a flow): appending to fresh memory on the datapath faulted a page at a
// time, in the run's first milliseconds.
type flowSampler struct {
	hosts []*hostd.Host
	outs  []*Output
	stats []hostd.FlowStats // reused
	done  [][]bool          // a finished flow gets one last sample
}

// maxSampleRoom caps the samples a long-lived flow's series has room for before the
// run, and messageSampleRoom a message's.
const (
	maxSampleRoom     = 4096
	messageSampleRoom = 16
)

func newFlowSampler(hosts []*hostd.Host, outs []*Output, until, interval units.Time) *flowSampler {
	s := &flowSampler{hosts: hosts, outs: outs, done: make([][]bool, len(hosts))}
	room := 2
	if interval > 0 {
		room = int(min(until/interval+2, maxSampleRoom))
	}
	for k := range hosts {
		s.done[k] = make([]bool, len(outs[k].Flows))
		for i := range outs[k].Flows {
			f := &outs[k].Flows[i]
			want := room
			if f.Size > 0 {
				// A message is sampled only while it is active: a workload of thousands
				// would otherwise hold room for the whole run each.
				want = min(room, messageSampleRoom)
			}
			if cap(f.Samples) < want {
				f.Samples = make([]results.FlowSample, 0, want)
			}
			clear(f.Samples[:cap(f.Samples)]) // touched now, not in the run
		}
	}
	return s
}

func (s *flowSampler) sample(now units.Time) {
	for k, h := range s.hosts {
		s.stats = h.AppendFlowStats(s.stats[:0])
		for i := range s.stats {
			st := &s.stats[i]
			if !st.Started || s.done[k][i] {
				continue
			}
			s.done[k][i] = st.Done
			s.outs[k].Flows[i].Samples = append(s.outs[k].Flows[i].Samples, results.FlowSampleOf(now, st))
		}
	}
}

// edge snapshots every started flow exactly at one of the jobs' edges (at), into its
// Edges.
func (s *flowSampler) edge(at units.Time) {
	for k, h := range s.hosts {
		s.stats = h.AppendFlowStats(s.stats[:0])
		for i := range s.stats {
			if st := &s.stats[i]; st.Started {
				s.outs[k].Flows[i].Edges = append(s.outs[k].Flows[i].Edges, results.FlowSampleOf(at, st))
			}
		}
	}
}

// build makes job's host with its flows, and its output with the flows' records.
func build(job *Job, log *slog.Logger) (*hostd.Host, *Output, error) {
	grace := job.TimerGrace
	switch {
	case grace == 0:
		grace = DefaultTimerGrace
	case grace < 0:
		grace = 0
	}
	h, err := hostd.New(job.Host, hostd.Options{MPDUnit: job.MPDUnit, Tuning: job.Tuning, Logger: log, TimerGrace: grace})
	if err != nil {
		return nil, nil, err
	}
	out := &Output{Host: job.Host.Name}
	for i := range job.Flows {
		f := &job.Flows[i]
		spec, err := f.Spec(h, job.Seed)
		if err != nil {
			return nil, nil, fmt.Errorf("hostd %s: %w", job.Host.Name, err)
		}
		if err := h.AddFlow(spec); err != nil {
			return nil, nil, fmt.Errorf("hostd %s: %w", job.Host.Name, err)
		}
		out.Flows = append(out.Flows, results.Flow{ID: f.ID, Name: f.Name, Group: f.Group, Src: f.Src, Dst: f.Dst,
			CC: f.CC, Size: f.Size, Start: f.Start})
	}
	return h, out, nil
}

// finish fills the end-of-run totals.
func finish(out *Output, h *hostd.Host) {
	for i, s := range h.FlowStats() {
		out.Flows[i].Close(&s)
	}
	out.Receivers = h.ReceiverStats()
	out.Stats = h.Stats()
}
