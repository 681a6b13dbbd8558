package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/fabric"
	"reef/hostd"
	"reef/hostd/transport"
	"reef/switchd"
	"reef/units"
	"reef/wire"
)

// Sim is one lab wired on an Engine: a switchd.Switch per switch and a hostd.Host per
// host, each with one pending event at its NextDeadline, plus the scenario's timeline
// events and the sampler. Not safe for concurrent use.
type Sim struct {
	fab      *fabric.Fabric
	sc       *scenario.Scenario
	p        *plan.Plan
	switches []*fabric.Node
	hosts    []*fabric.Node
	byHost   map[string]*fabric.Node
	flows    []flowRec // in scenario order
	flowIdx  map[uint32]int
	// flowDense[id] is flowIdx[id]+1 for the flow IDs below its length (0: no flow),
	// so that countEgress, which runs for every data frame a switch forwards, indexes
	// a slice instead of probing the map.
	flowDense []int32
	ports     []results.Port
	portRef   []portRef
	sampler   sampler
	fstats    []hostd.FlowStats
	pstats    []switchd.PortStats
	depths    []switchd.Depth
	psamples  []switchd.Sample
	fprog     []hostd.FlowProgress
	stage     portStage
	paths     map[pathKey]pathVal
	// portBase[i] is the index in ports of port 0 of the fabric's node i (a switch).
	portBase []int
}

type flowRec struct {
	res  results.Flow
	host *hostd.Host
	// idx is the flow's position in its host's FlowStats.
	idx int
	// egress counts the flow's data frames per switch egress port (an index into
	// Sim.ports), in first-use order: a flow uses few ports, so a scan finds them.
	egress []portCount
}

type portCount struct {
	port   int
	frames int64
}

type portRef struct {
	sw   *fabric.Node
	port int
}

// New wires p into an engine and adds sc's flows and events. It fails, creating nothing
// that outlives it, on a plan or scenario the cores reject.
func New(p *plan.Plan, sc *scenario.Scenario) (*Sim, error) {
	s := &Sim{fab: fabric.New(), sc: sc, p: p, byHost: map[string]*fabric.Node{}, flowIdx: map[uint32]int{}, paths: map[pathKey]pathVal{}}
	hostOpts, err := sc.HostOptions(p)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	swByName := map[string]*fabric.Node{}
	for i, sp := range p.Switches {
		cfg := sp.Config
		if cfg.Seed == 0 {
			cfg.Seed = sc.Seed ^ uint64(i+1)*0x9e3779b97f4a7c15
		}
		if cfg.Buffers == 0 {
			cfg.Buffers = 64 // the pool grows with the lab's bursts; a run allocates no more
		}
		sw, err := switchd.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("sim: switch %s: %w", cfg.Name, err)
		}
		n := s.fab.AddSwitch(sw)
		s.switches = append(s.switches, n)
		swByName[cfg.Name] = n
	}
	for _, hp := range p.Hosts {
		h, err := hostd.New(hp.Config, hostOpts)
		if err != nil {
			return nil, fmt.Errorf("sim: host %s: %w", hp.Config.Name, err)
		}
		n := s.fab.AddHost(h)
		s.hosts = append(s.hosts, n)
		s.byHost[hp.Config.Name] = n
	}
	end := func(e plan.Endpoint) (*fabric.Node, int, error) {
		if e.IsHost {
			n, ok := s.byHost[e.Node]
			if !ok {
				return nil, 0, fmt.Errorf("sim: link end %s: no such host", e.Node)
			}
			return n, 0, nil
		}
		n, ok := swByName[e.Node]
		if !ok || e.Port < 0 || e.Port >= n.Switch().NumPorts() {
			return nil, 0, fmt.Errorf("sim: link end %s port %d: no such switch port", e.Node, e.Port)
		}
		return n, e.Port, nil
	}
	for i, l := range p.Links {
		a, ap, err := end(l.A)
		if err != nil {
			return nil, fmt.Errorf("link %d: %w", i, err)
		}
		b, bp, err := end(l.B)
		if err != nil {
			return nil, fmt.Errorf("link %d: %w", i, err)
		}
		if err := s.fab.Link(a, ap, b, bp); err != nil {
			return nil, fmt.Errorf("sim: link %d: %w", i, err)
		}
	}
	s.portBase = make([]int, len(s.switches)+len(s.hosts))
	for _, n := range s.switches {
		s.portBase[n.Index()] = len(s.portRef)
		for i := range n.Switch().NumPorts() {
			s.portRef = append(s.portRef, portRef{n, i})
		}
	}
	s.fab.SetEgress(s.countEgress)
	cfgByName := map[string]*switchd.Config{}
	for i := range p.Switches {
		cfgByName[p.Switches[i].Config.Name] = &p.Switches[i].Config
	}
	// Every port is sampled at every sample time: its series is allocated once.
	nsamples := 0
	if sc.SampleInterval > 0 {
		nsamples = int((sc.Duration + sc.SampleInterval - 1) / sc.SampleInterval)
	}
	for _, r := range s.portRef {
		pc := cfgByName[r.sw.Name()].Ports[r.port]
		port := results.Port{Switch: r.sw.Name(), Port: r.port, Name: pc.Name, Peer: pc.Peer, Rate: pc.Rate}
		if nsamples > 0 {
			port.Samples = make([]results.PortSample, 0, nsamples)
		}
		s.ports = append(s.ports, port)
	}
	if nsamples > 0 {
		s.stage.buf = make([]switchd.Sample, 0, len(s.ports)*stageLen)
	}
	if err := s.addFlows(); err != nil {
		return nil, err
	}
	for i := range sc.Events {
		ev := sc.Events[i]
		if ev.Link < 0 || ev.Link >= len(p.Links) {
			return nil, fmt.Errorf("sim: event %d: link index %d out of range", i, ev.Link)
		}
		switch ev.Kind {
		case scenario.EventRate, scenario.EventDown, scenario.EventUp:
		default:
			return nil, fmt.Errorf("sim: event %d: unknown kind %q", i, ev.Kind)
		}
		s.fab.Engine().At(ev.At, &linkEvent{s: s, ev: ev})
	}
	s.sampler = sampler{s: s}
	s.sampler.slot = fabric.Slot{H: &s.sampler, Late: true}
	if sc.SampleInterval > 0 {
		s.fab.Engine().Set(&s.sampler.slot, 0)
	}
	// Exact snapshots at the window's start and each flow's stop (Results takes the
	// run's end): window figures never depend on the sample interval.
	if sc.Warmup > 0 && sc.Warmup < sc.Duration {
		s.fab.Engine().At(sc.Warmup, &edge{s: s, flow: -1})
	}
	for i := range s.flows {
		if stop := sc.Flows[i].Stop; stop > 0 && stop < sc.Duration {
			s.fab.Engine().At(stop, &edge{s: s, flow: i})
		}
	}
	s.fab.Start()
	return s, nil
}

func (s *Sim) addFlows() error {
	networkRTT, err := s.sc.NetworkRTT(s.p)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	seen := map[uint32]bool{}
	for i := range s.sc.Flows {
		f := &s.sc.Flows[i]
		if seen[f.ID] {
			return fmt.Errorf("sim: flow %s: id %d used twice", f.Name, f.ID)
		}
		seen[f.ID] = true
		src, ok := s.byHost[f.Src]
		if !ok {
			return fmt.Errorf("sim: flow %s: no source host %q", f.Name, f.Src)
		}
		dst, ok := s.p.HostAddr(f.Dst)
		if !ok {
			return fmt.Errorf("sim: flow %s: no destination host %q", f.Name, f.Dst)
		}
		env := src.Host().FlowEnv(f.INTHops)
		hops, rtt, err := s.pathInfo(f.Src, f.Dst, env.PacketSize)
		if err != nil {
			return fmt.Errorf("sim: flow %s: %w", f.Name, err)
		}
		env.BaseRTT, env.PathHops, env.NetworkRTT = rtt, hops, networkRTT
		env.Rand = rand.New(rand.NewPCG(s.sc.Seed, uint64(f.ID)))
		alg, err := f.Algorithm(env)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		spec := hostd.FlowSpec{ID: f.ID, Name: f.Name, Dst: dst, Size: f.Size, Start: f.Start, Stop: f.Stop,
			Alg: alg, HopCap: f.INTHops, Ack: transport.AckPolicy{Every: f.AckEvery}, BaseRTT: rtt}
		if err := src.Host().AddFlow(spec); err != nil {
			return fmt.Errorf("sim: flow %s: %w", f.Name, err)
		}
		s.flowIdx[f.ID] = len(s.flows)
		if f.ID < maxDenseFlowID {
			if int(f.ID) >= len(s.flowDense) {
				s.flowDense = append(s.flowDense, make([]int32, int(f.ID)+1-len(s.flowDense))...)
			}
			s.flowDense[f.ID] = int32(len(s.flows) + 1)
		}
		rec := flowRec{
			res: results.Flow{ID: f.ID, Name: f.Name, Group: f.Group, Src: f.Src, Dst: f.Dst, CC: f.CC,
				Size: f.Size, Start: f.Start},
			host: src.Host(), idx: len(src.Host().FlowStats()) - 1,
		}
		if every := s.sc.SampleInterval; every > 0 && f.Size == 0 && f.Start < s.sc.Duration {
			// a long-lived flow is sampled from its start to the end: its series is
			// allocated once
			rec.res.Samples = make([]results.FlowSample, 0, (s.sc.Duration-f.Start)/every+1)
		}
		s.flows = append(s.flows, rec)
	}
	return nil
}

// pathInfo returns the number of switches on the flow's path and its unloaded RTT
// for data frames of pkt bytes (plan.BaseRTT), cached per host pair and size.
func (s *Sim) pathInfo(src, dst string, pkt units.Bytes) (int, units.Time, error) {
	key := pathKey{src, dst, pkt}
	if v, ok := s.paths[key]; ok {
		return v.hops, v.rtt, nil
	}
	paths, err := s.p.Paths(src, dst)
	if err != nil {
		return 0, 0, err
	}
	if len(paths) == 0 {
		return 0, 0, fmt.Errorf("no path from %s to %s", src, dst)
	}
	rtt, err := s.p.BaseRTT(src, dst, pkt)
	if err != nil {
		return 0, 0, err
	}
	v := pathVal{hops: len(paths[0]) - 1, rtt: rtt}
	s.paths[key] = v
	return v.hops, v.rtt, nil
}

type pathKey struct {
	src, dst string
	pkt      units.Bytes
}

type pathVal struct {
	hops int
	rtt  units.Time
}

// linkEvent applies a timeline event to both ends of a link.
type linkEvent struct {
	s  *Sim
	ev scenario.Event
}

func (e *linkEvent) Fire(now units.Time) {
	l := e.s.p.Links[e.ev.Link]
	for _, end := range []plan.Endpoint{l.A, l.B} {
		if end.IsHost {
			continue // a host NIC keeps its rate; the switch side of the link shapes it
		}
		for _, n := range e.s.switches {
			if n.Name() != end.Node {
				continue
			}
			switch e.ev.Kind {
			case scenario.EventRate:
				n.Switch().SetPortRate(now, end.Port, e.ev.Rate)
			case scenario.EventDown:
				n.Switch().SetPortUp(now, end.Port, false)
			case scenario.EventUp:
				n.Switch().SetPortUp(now, end.Port, true)
			}
			n.Rearm()
		}
	}
}

// sampler records flow and port samples every SampleInterval. Its slot is Late: it
// reads the state each sample time ends in, after every frame and timer of that
// instant, so when it looks (and how often) changes nothing the nodes do.
type sampler struct {
	s    *Sim
	slot fabric.Slot
}

func (sm *sampler) Fire(now units.Time) {
	sm.s.sample(now)
	if next := now + sm.s.sc.SampleInterval; next < sm.s.sc.Duration {
		sm.s.fab.Engine().Set(&sm.slot, next)
	}
}

func (s *Sim) sample(now units.Time) {
	for _, h := range s.hosts {
		s.fprog = h.Host().AppendFlowProgress(s.fprog[:0])
		for i := range s.fprog {
			p := &s.fprog[i]
			fi, ok := s.flowIndex(p.ID)
			if !ok || !p.Started {
				continue
			}
			r := &s.flows[fi].res
			if p.Done && len(r.Samples) > 0 && r.Samples[len(r.Samples)-1].Acked == p.BytesAcked {
				continue // finished and already recorded at its final state
			}
			r.Samples = append(r.Samples, results.FlowSampleFrom(now, p))
		}
	}
	s.stage.times[s.stage.n] = now
	for _, sw := range s.switches {
		s.stage.buf = sw.Switch().AppendSamples(now, s.stage.buf)
		sw.Rearm()
	}
	if s.stage.n++; s.stage.n == stageLen {
		s.flushStage()
	}
}

// stageLen is how many sample times portStage holds.
const stageLen = 16

// portStage holds the ports' latest samples before they join their series, stageLen
// sample times at a time. Switch.AppendSamples writes them straight into buf; they
// become results records on the way to the series. Written one by one, the series
// are as many streams of writes to memory as there are ports, more than a
// processor's prefetchers follow; a block of samples written at once is one short
// stream.
type portStage struct {
	// buf holds every port's sample (in the order of Sim.ports) at times[0], then
	// every port's at times[1], and so on up to times[n-1].
	buf   []switchd.Sample
	times [stageLen]units.Time
	n     int
}

// flushStage appends the staged samples to the ports' series.
func (s *Sim) flushStage() {
	n, np := s.stage.n, len(s.ports)
	if n == 0 {
		return
	}
	for k := range s.ports {
		p := &s.ports[k]
		m := len(p.Samples)
		p.Samples = slices.Grow(p.Samples, n)[:m+n]
		for i, t := range s.stage.times[:n] {
			p.Samples[m+i] = results.PortSampleFrom(t, &s.stage.buf[i*np+k])
		}
	}
	s.stage.buf, s.stage.n = s.stage.buf[:0], 0
}

// edge takes exact snapshots at a window edge: every started flow and every port
// (flow < 0), or one flow (an index into Sim.flows) at its stop.
type edge struct {
	s    *Sim
	flow int
}

func (e *edge) Fire(now units.Time) {
	add := func(r *results.Flow, st *hostd.FlowStats) { r.Edges = append(r.Edges, results.FlowSampleOf(now, st)) }
	e.s.flowSnapshots(now, e.flow, add)
	if e.flow < 0 {
		e.s.portSnapshots(now, func(p *results.Port, smp results.PortSample) { p.Edges = append(p.Edges, smp) })
	}
}

// flowSnapshots calls add with the record and the stats at now of every started flow,
// or of flow only (an index into s.flows) when only ≥ 0.
func (s *Sim) flowSnapshots(now units.Time, only int, add func(*results.Flow, *hostd.FlowStats)) {
	for _, n := range s.hosts {
		if only >= 0 && n.Host() != s.flows[only].host {
			continue
		}
		s.fstats = n.Host().AppendFlowStats(s.fstats[:0])
		for i := range s.fstats {
			st := &s.fstats[i]
			fi, ok := s.flowIndex(st.ID)
			if !ok || !st.Started || (only >= 0 && fi != only) {
				continue
			}
			add(&s.flows[fi].res, st)
		}
	}
}

// portSnapshots calls add with every port's record and its sample at now.
func (s *Sim) portSnapshots(now units.Time, add func(*results.Port, results.PortSample)) {
	k := 0
	for _, n := range s.switches {
		s.psamples = n.Switch().AppendSamples(now, s.psamples[:0])
		for i := range s.psamples {
			add(&s.ports[k], results.PortSampleFrom(now, &s.psamples[i]))
			k++
		}
		n.Rearm()
	}
}

// maxDenseFlowID bounds the flow IDs flowDense indexes (larger ones use the map).
const maxDenseFlowID = 1 << 20

// flowIndex is the position in s.flows of the flow with ID id.
func (s *Sim) flowIndex(id uint32) (int, bool) {
	if int(id) < len(s.flowDense) {
		i := int(s.flowDense[id]) - 1
		return i, i >= 0
	}
	if id < maxDenseFlowID {
		return 0, false
	}
	i, ok := s.flowIdx[id]
	return i, ok
}

// countEgress counts a data frame switch n sends on port against its flow: the paths
// each flow took (results.Flow.Egress). The switch parsed the frame already: reef is
// where its reef header is (0: none).
func (s *Sim) countEgress(n *fabric.Node, port int, frame []byte, reef int) {
	if reef == 0 {
		return
	}
	v := wire.View{Frame: frame, IP: wire.EthLen, Reef: reef}
	if v.Type() != wire.TypeData {
		return
	}
	fi, ok := s.flowIndex(v.FlowID())
	if !ok {
		return
	}
	f, k := &s.flows[fi], s.portBase[n.Index()]+port
	for i := range f.egress {
		if f.egress[i].port == k {
			f.egress[i].frames++
			return
		}
	}
	f.egress = append(f.egress, portCount{k, 1})
}

// Tap makes t see the frames crossing port of node (a switch's port index; a host's
// only port is 0); port -1 taps every port of the node.
func (s *Sim) Tap(node string, port int, t fabric.Tap) error {
	n := s.byHost[node]
	for _, sw := range s.switches {
		if sw.Name() == node {
			n = sw
		}
	}
	if n == nil {
		return fmt.Errorf("sim: no node %q", node)
	}
	if port >= 0 {
		return n.SetTap(port, t)
	}
	for i := range n.NumPorts() {
		if err := n.SetTap(i, t); err != nil {
			return err
		}
	}
	return nil
}

// RunUntil advances the simulation to t (at most the scenario's duration) and returns
// the number of events fired.
func (s *Sim) RunUntil(t units.Time) uint64 {
	t = min(t, s.sc.Duration)
	return s.fab.Run(t)
}

// Now is the simulated time reached.
func (s *Sim) Now() units.Time { return s.fab.Now() }

// Hops is the number of frames delivered from one node to the next so far (packet-hops).
func (s *Sim) Hops() uint64 { return s.fab.Hops() }

// Results collects the run's record as of Now: end-of-run counters and every sample
// taken. WallTime is left for the caller.
func (s *Sim) Results() *results.Run {
	s.flushStage()
	now := s.fab.Now()
	run := &results.Run{Backend: Name, Scenario: s.sc.Name, Duration: now}
	for _, n := range s.hosts {
		s.fstats = n.Host().AppendFlowStats(s.fstats[:0])
		for i := range s.fstats {
			st := &s.fstats[i]
			fi, ok := s.flowIdx[st.ID]
			if !ok {
				continue
			}
			s.flows[fi].res.Close(st)
		}
	}
	// The run's end is the window's last edge: a snapshot of every flow and port at
	// now, on copies (Results may be called again later in the run).
	ends := make([]results.FlowSample, len(s.flows))
	started := make([]bool, len(s.flows))
	s.flowSnapshots(now, -1, func(r *results.Flow, st *hostd.FlowStats) {
		fi := s.flowIdx[r.ID]
		ends[fi], started[fi] = results.FlowSampleOf(now, st), true
	})
	portEnds := make([]results.PortSample, 0, len(s.ports))
	s.portSnapshots(now, func(_ *results.Port, smp results.PortSample) { portEnds = append(portEnds, smp) })
	for fi, f := range s.flows {
		r := f.res
		if n := len(r.Edges); started[fi] && (n == 0 || r.Edges[n-1].T != now) {
			r.Edges = append(slices.Clip(r.Edges), ends[fi])
		}
		egress := slices.Clone(f.egress)
		slices.SortFunc(egress, func(a, b portCount) int { return a.port - b.port })
		for _, e := range egress {
			ref := s.portRef[e.port]
			r.Egress = append(r.Egress, results.PortFrames{Switch: ref.sw.Name(), Port: ref.port, Frames: e.frames})
		}
		run.Flows = append(run.Flows, r)
	}
	k := 0
	for _, n := range s.switches {
		// A switch processes its departures lazily, when it is next polled: bring it to
		// now so that its counters do not depend on when it was last looked at (by a
		// sample, say).
		s.depths = n.Switch().Depths(now, s.depths[:0])
		s.pstats = n.Switch().AppendStats(s.pstats[:0])
		for i := range s.pstats {
			ps := &s.pstats[i]
			p := s.ports[k]
			if n := len(p.Edges); n == 0 || p.Edges[n-1].T != now {
				p.Edges = append(slices.Clip(p.Edges), portEnds[k])
			}
			p.TxBytes, p.TxPackets = int64(ps.TxBytes), int64(ps.TxPackets)
			p.Drops, p.Marks, p.PauseTime = int64(ps.Dropped()), int64(ps.ECNMarks), ps.PauseTime
			run.Ports = append(run.Ports, p)
			k++
		}
	}
	return run
}
