package shard

import (
	"fmt"
	"sort"

	"reef/emulator/results"
	"reef/fabric"
	"reef/switchd"
	"reef/units"
)

// Run is what a run asks of a shard besides forwarding. The zero value forwards only.
type Run struct {
	// Offset is the lab time of run time 0 (the run's epoch less the lab's).
	Offset units.Time
	// SampleInterval, when > 0, samples every port this often (run time).
	SampleInterval units.Time
	// SampleCap is how many samples per port to allocate room for up front.
	SampleCap int
	// Events are the run's timeline events; those for switches of other shards are
	// ignored.
	Events []PortEvent
	// Edges are the run times of exact snapshots of every port (results.Port.Edges):
	// the measurement window's edges, so window figures do not depend on the sample
	// interval.
	Edges []units.Time
}

// Shard is a running shard: its switches wired on one fabric, plus the run's sampler
// and timeline, which fire on the fabric's engine in time order with the frames. It
// is the I/O driver's node (afpacket: Receive, NextDeadline, Poll) and, like
// the fabric, never reads a clock. Not safe for concurrent use.
type Shard struct {
	cfg   *Config
	fab   *fabric.Fabric
	nodes []*fabric.Node
	run   Run
	// ports are each switch's ports' results (samples), by switch index.
	ports  [][]results.Port
	depths []switchd.Depth
	stats  []switchd.PortStats
	// extOf lists each switch's external ports (driver port indices).
	extOf [][]int
}

// New builds cfg's switches and wires them. It fails on a config the pipeline rejects
// and on events that name a port the shard's switches do not have.
func New(cfg *Config, run Run) (*Shard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Shard{cfg: cfg, fab: fabric.New(), run: run, extOf: make([][]int, len(cfg.Switches))}
	byName := map[string]*fabric.Node{}
	idx := map[string]int{}
	for i, sc := range cfg.Switches {
		sw, err := switchd.New(sc)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", cfg.Name, err)
		}
		n := s.fab.AddSwitch(sw)
		s.nodes = append(s.nodes, n)
		byName[sc.Name], idx[sc.Name] = n, i
		ports := make([]results.Port, len(sc.Ports))
		for j, p := range sc.Ports {
			ports[j] = results.Port{Switch: sc.Name, Port: j, Name: p.Name, Peer: p.Peer, Rate: p.Rate,
				Samples: make([]results.PortSample, 0, run.SampleCap), Edges: make([]results.PortSample, 0, len(run.Edges))}
		}
		s.ports = append(s.ports, ports)
	}
	for _, l := range cfg.Links {
		if err := s.fab.Link(byName[l.A.Switch], l.A.Port, byName[l.B.Switch], l.B.Port); err != nil {
			return nil, fmt.Errorf("shard %s: %w", cfg.Name, err)
		}
	}
	for i, p := range cfg.Ports {
		if _, err := s.fab.External(byName[p.Switch], p.Port); err != nil {
			return nil, fmt.Errorf("shard %s: %w", cfg.Name, err)
		}
		s.extOf[idx[p.Switch]] = append(s.extOf[idx[p.Switch]], i)
	}
	var events []PortEvent
	for _, e := range run.Events {
		n, ok := byName[e.Switch]
		if !ok {
			continue
		}
		if e.Port < 0 || e.Port >= n.Switch().NumPorts() {
			return nil, fmt.Errorf("shard %s: event at %v: switch %s has no port %d", cfg.Name, e.At, e.Switch, e.Port)
		}
		switch e.Kind {
		case EventRate, EventDown, EventUp:
		default:
			return nil, fmt.Errorf("shard %s: event at %v: unknown kind %q (want rate, down or up)", cfg.Name, e.At, e.Kind)
		}
		events = append(events, e)
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].At < events[j].At })
	eng := s.fab.Engine()
	for _, e := range events {
		eng.At(e.At+run.Offset, &portEvent{n: byName[e.Switch], e: e})
	}
	if run.SampleInterval > 0 {
		sm := &sampler{s: s}
		sm.slot.H = sm
		eng.Set(&sm.slot, run.Offset)
	}
	for _, t := range run.Edges {
		eng.At(t+run.Offset, &edge{s: s})
	}
	s.fab.Start()
	return s, nil
}

// Receive, NextDeadline and Poll make the shard the driver's node: external port i is
// Config.Ports[i].
func (s *Shard) Receive(now units.Time, port int, frame []byte) { s.fab.Receive(now, port, frame) }

// NextDeadline is the earliest time the shard has work: a frame, a sample or an event.
func (s *Shard) NextDeadline() units.Time { return s.fab.NextDeadline() }

// Poll fires what is due by now, in time order, and returns the next frame that leaves
// on an external port.
func (s *Shard) Poll(now units.Time) (switchd.Out, bool) { return s.fab.Poll(now) }

// Hops is the number of frames the shard carried over in-memory links.
func (s *Shard) Hops() uint64 { return s.fab.Hops() }

// Config is the shard's configuration.
func (s *Shard) Config() *Config { return s.cfg }

// Switch returns the shard's i-th switch (Config.Switches order).
func (s *Shard) Switch(i int) *switchd.Switch { return s.nodes[i].Switch() }

// External lists the driver ports (indices into Config.Ports) of switch i.
func (s *Shard) External(i int) []int { return s.extOf[i] }

// InMemory lists the switch ports the shard carries in memory (both ends of every
// link of Config.Links), in the links' order.
func (s *Shard) InMemory() []End {
	ends := make([]End, 0, 2*len(s.cfg.Links))
	for _, l := range s.cfg.Links {
		ends = append(ends, l.A, l.B)
	}
	return ends
}

// SetTap makes t see every frame crossing port e.Port of switch e.Switch, both ways
// (fabric.Node.SetTap); t runs on the shard's loop. Call it before the loop starts.
func (s *Shard) SetTap(e End, t fabric.Tap) error {
	for i, sc := range s.cfg.Switches {
		if sc.Name == e.Switch {
			return s.nodes[i].SetTap(e.Port, t)
		}
	}
	return fmt.Errorf("shard %s: no switch %q", s.cfg.Name, e.Switch)
}

// Prefault writes every page the shard will fill during a run: its switches' frame
// buffers (switchd.Switch.Prefault) and the room allocated for its ports' samples. A
// daemon calls it before the run, so its real-time thread takes no page faults then.
func (s *Shard) Prefault() {
	for i, n := range s.nodes {
		n.Switch().Prefault()
		for j := range s.ports[i] {
			p := &s.ports[i][j]
			clear(p.Samples[:cap(p.Samples)])
			clear(p.Edges[:cap(p.Edges)])
		}
	}
}

// Samples returns switch i's samples file as of lab time now, closing every port's
// series with the switch's final counters.
func (s *Shard) Samples(i int, now units.Time) Samples {
	stats := s.Switch(i).Stats()
	out := Samples{Node: s.cfg.Switches[i].Name, Time: now - s.run.Offset, Ports: s.ports[i]}
	for j := range out.Ports {
		out.Ports[j].Close(&stats[j])
	}
	return out
}

// portEvent applies one timeline event at its time.
type portEvent struct {
	n *fabric.Node
	e PortEvent
}

func (p *portEvent) Fire(now units.Time) {
	sw := p.n.Switch()
	switch p.e.Kind {
	case EventRate:
		sw.SetPortRate(now, p.e.Port, p.e.Rate)
	case EventDown:
		sw.SetPortUp(now, p.e.Port, false)
	case EventUp:
		sw.SetPortUp(now, p.e.Port, true)
	}
	p.n.Rearm()
}

// sampler samples every port of the shard every SampleInterval, on one slot (a daemon
// runs with the GC off: nothing on its loop may allocate).
type sampler struct {
	s    *Shard
	slot fabric.Slot
}

func (sm *sampler) Fire(now units.Time) {
	s := sm.s
	s.snapshot(now, func(p *results.Port, smp results.PortSample) { p.Samples = append(p.Samples, smp) })
	s.fab.Engine().Set(&sm.slot, now+s.run.SampleInterval)
}

// edge takes the exact snapshot of every port at one of the run's window edges, in
// time order with the frames (room for it was allocated up front).
type edge struct{ s *Shard }

func (e *edge) Fire(now units.Time) {
	e.s.snapshot(now, func(p *results.Port, smp results.PortSample) { p.Edges = append(p.Edges, smp) })
}

// snapshot calls add with every port's record and its sample at lab time now.
func (s *Shard) snapshot(now units.Time, add func(*results.Port, results.PortSample)) {
	for i, n := range s.nodes {
		s.depths = n.Switch().Depths(now, s.depths[:0])
		s.stats = n.Switch().AppendStats(s.stats[:0])
		for j := range s.ports[i] {
			add(&s.ports[i][j], results.PortSampleOf(now-s.run.Offset, &s.stats[j], s.depths[j]))
		}
		n.Rearm()
	}
}
