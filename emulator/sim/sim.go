package sim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"reef/cc"
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

// Sim is one lab wired on a fabric.Group of one or more fabrics: a switchd.Switch per
// switch and a hostd.Host per host, each with one pending event at its NextDeadline,
// plus the scenario's timeline events and the sampler on the group's control engine.
// Not safe for concurrent use.
type Sim struct {
	// fabs are the lab's partitions (one when it is not split), run by grp, whose
	// control engine has the sim's own events (see Options).
	fabs     []*fabric.Fabric
	grp      *fabric.Group
	parts    []partition
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
	// sampledDone is, per host (as hosts), how many of its flows had finished at the
	// last sample (hostd.Host.AppendActiveProgress).
	sampledDone []int
	stage       portStage
	paths       map[pathKey]pathVal
}

// partition is a fabric's share of what the sim counts per packet: only the goroutine
// running that fabric touches it.
type partition struct {
	s *Sim
	// egress[fi] counts flow fi's data frames per switch egress port (an index into
	// Sim.ports) the frames reached their next node in this partition from, in
	// first-use order: a flow uses few ports, so a scan finds them.
	egress [][]portCount
}

type flowRec struct {
	res  results.Flow
	host *hostd.Host
}

type portCount struct {
	port   int
	frames int64
}

type portRef struct {
	sw   *fabric.Node
	port int
}

// Options tune how a lab is run; the zero value is the default.
type Options struct {
	// Partitions splits the lab into that many fabrics run in lockstep windows of
	// virtual time (see fabric.Group). 0 chooses by size: a lab of at least 64
	// switches gets one partition per 20 switches (a fat-tree k = 8 four, k = 16
	// sixteen), a smaller one none; 1 never splits. A split run fires the events of
	// one instant in another order than the whole lab's, which changes nothing a
	// node does unless frames from two partitions reach a switch at the same
	// nanosecond (then they may enter its pipeline in another order).
	Partitions int
	// Each runs the partitions' shares of a window, at once if it can (nil: one after
	// another). Results never depend on it.
	Each fabric.Each
	// WholeFrames stores every frame whole, as the daemons do. By default the sim
	// stores frames truncated after their headers (switchd.Config.Snap,
	// hostd.Options.Snap): its payloads carry nothing, and a frame then takes a few
	// hundred bytes instead of an MTU. Results never depend on it; captures show the
	// frames truncated unless it is set.
	WholeFrames bool
}

// snapOf is how many bytes of each frame the sim stores for sc's flows: every header
// with the most INT slots a flow asks for, rounded up to whole cache lines.
func snapOf(sc *scenario.Scenario) int {
	hops := 0
	for i := range sc.Flows {
		hops = max(hops, sc.Flows[i].INTHops)
	}
	return (wire.MaxHeaders(min(hops, wire.MaxHops)) + 63) &^ 63
}

// New wires p into an engine and adds sc's flows and events, with the default Options.
// It fails, creating nothing that outlives it, on a plan or scenario the cores reject.
func New(p *plan.Plan, sc *scenario.Scenario) (*Sim, error) { return NewWith(p, sc, Options{}) }

// NewWith is New with opts.
func NewWith(p *plan.Plan, sc *scenario.Scenario, opts Options) (*Sim, error) {
	s := &Sim{sc: sc, p: p, byHost: map[string]*fabric.Node{}, flowIdx: map[uint32]int{}, paths: map[pathKey]pathVal{}}
	hostOpts, err := sc.HostOptions(p)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	snap := 0
	if !opts.WholeFrames {
		snap = snapOf(sc)
	}
	swPart, hostPart := partitionLab(p, opts.Partitions)
	nparts := 1
	for _, k := range swPart {
		nparts = max(nparts, k+1)
	}
	for range nparts {
		s.fabs = append(s.fabs, fabric.New())
	}
	s.grp = fabric.NewGroup(s.fabs, opts.Each)
	swByName := map[string]*fabric.Node{}
	for i, sp := range p.Switches {
		cfg := sp.Config
		if cfg.Seed == 0 {
			cfg.Seed = sc.Seed ^ uint64(i+1)*0x9e3779b97f4a7c15
		}
		if cfg.Buffers == 0 {
			cfg.Buffers = 64 // the pool grows with the lab's bursts; a run allocates no more
		}
		cfg.Snap = snap
		sw, err := switchd.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("sim: switch %s: %w", cfg.Name, err)
		}
		n := s.fabs[swPart[i]].AddSwitch(sw)
		s.switches = append(s.switches, n)
		swByName[cfg.Name] = n
	}
	for i, hp := range p.Hosts {
		ho := hostOpts
		if mtu := cmp.Or(hp.Config.MTU, hostd.DefaultMTU); snap > 0 {
			ho.Snap = min(snap, mtu+wire.EthLen)
		}
		h, err := hostd.New(hp.Config, ho)
		if err != nil {
			return nil, fmt.Errorf("sim: host %s: %w", hp.Config.Name, err)
		}
		n := s.fabs[hostPart[i]].AddHost(h)
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
		if a.Fabric() != b.Fabric() {
			err = s.grp.Cut(a, ap, b, bp)
		} else {
			err = a.Fabric().Link(a, ap, b, bp)
		}
		if err != nil {
			return nil, fmt.Errorf("sim: link %d: %w", i, err)
		}
	}
	s.parts = make([]partition, nparts)
	for k, f := range s.fabs {
		s.parts[k] = partition{s: s}
		f.SetEgress(s.parts[k].countEgress)
	}
	for _, n := range s.switches {
		n.SetTag(len(s.portRef)) // its port 0's index in s.ports
		for i := range n.Switch().NumPorts() {
			s.portRef = append(s.portRef, portRef{n, i})
		}
	}
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
		s.events().At(ev.At, &linkEvent{s: s, ev: ev})
	}
	s.sampler = sampler{s: s}
	s.sampledDone = make([]int, len(s.hosts))
	s.sampler.slot = fabric.Slot{H: &s.sampler, Late: true}
	if sc.SampleInterval > 0 {
		s.events().Set(&s.sampler.slot, 0)
	}
	// Exact snapshots at the window's start and each flow's stop (Results takes the
	// run's end): window figures never depend on the sample interval.
	if sc.Warmup > 0 && sc.Warmup < sc.Duration {
		s.events().At(sc.Warmup, &edge{s: s, flow: -1})
	}
	for i := range s.flows {
		if stop := sc.Flows[i].Stop; stop > 0 && stop < sc.Duration {
			s.events().At(stop, &edge{s: s, flow: i})
		}
	}
	for k := range s.parts {
		s.parts[k].egress = make([][]portCount, len(s.flows))
	}
	s.grp.Start()
	return s, nil
}

// partitionLab assigns the lab's switches and hosts to partitions (indices from 0;
// all 0 when the lab is not split): n of them (0: by size, see Options.Partitions), as
// plan.Partition splits a lab into shards, each host with the switch it links to. A
// lab with a host not linked to a switch is not split.
func partitionLab(p *plan.Plan, n int) (sw, host []int) {
	sw, host = make([]int, len(p.Switches)), make([]int, len(p.Hosts))
	if n == 0 && len(p.Switches) >= 64 {
		n = len(p.Switches) / 20
	}
	if n <= 1 {
		return sw, host
	}
	part := p.Partition(n)
	swIdx := map[string]int{}
	for i, sp := range p.Switches {
		swIdx[sp.Config.Name] = i
	}
	hostIdx := map[string]int{}
	for i, hp := range p.Hosts {
		hostIdx[hp.Config.Name] = i
	}
	linked := make([]bool, len(p.Hosts))
	for _, l := range p.Links {
		for _, e := range [][2]plan.Endpoint{{l.A, l.B}, {l.B, l.A}} {
			if h, o := e[0], e[1]; h.IsHost && !o.IsHost {
				host[hostIdx[h.Node]], linked[hostIdx[h.Node]] = part.Of[swIdx[o.Node]], true
			}
		}
	}
	for _, ok := range linked {
		if !ok {
			return make([]int, len(p.Switches)), make([]int, len(p.Hosts))
		}
	}
	return part.Of, host
}

// events is the engine the sim's own events go on: the timeline, the sampler and the
// snapshots. It is the group's control engine: they fire between windows, in the same
// order relative to the nodes' events as if they were on the nodes' engine.
func (s *Sim) events() *fabric.Engine { return s.grp.Control() }

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
		seed := s.sc.Seed
		// The host builds the algorithm as the flow starts (a run of many flows holds
		// algorithms only for those in progress), each time with its random source
		// seeded afresh.
		newAlg := func() (cc.Algorithm, error) {
			env := env
			env.Rand = rand.New(rand.NewPCG(seed, uint64(f.ID)))
			return f.Algorithm(env)
		}
		if _, err := newAlg(); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		spec := hostd.FlowSpec{ID: f.ID, Name: f.Name, Dst: dst, Size: f.Size, Start: f.Start, Stop: f.Stop,
			NewAlg: newAlg, HopCap: f.INTHops, Ack: transport.AckPolicy{Every: f.AckEvery}, BaseRTT: rtt}
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
			host: src.Host(),
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
	path, err := s.p.FirstPath(src, dst)
	if err != nil {
		return 0, 0, err
	}
	rtt, err := s.p.BaseRTT(src, dst, pkt)
	if err != nil {
		return 0, 0, err
	}
	v := pathVal{hops: len(path) - 1, rtt: rtt}
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
		sm.s.events().Set(&sm.slot, next)
	}
}

func (s *Sim) sample(now units.Time) {
	for k, h := range s.hosts {
		s.fprog, s.sampledDone[k] = h.Host().AppendActiveProgress(s.fprog[:0], s.sampledDone[k])
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
func (pt *partition) countEgress(n *fabric.Node, port int, frame []byte, reef int) {
	if reef == 0 {
		return
	}
	v := wire.View{Frame: frame, IP: wire.EthLen, Reef: reef}
	if v.Type() != wire.TypeData {
		return
	}
	fi, ok := pt.s.flowIndex(v.FlowID())
	if !ok {
		return
	}
	eg, k := &pt.egress[fi], n.Tag()+port
	for i := range *eg {
		if (*eg)[i].port == k {
			(*eg)[i].frames++
			return
		}
	}
	*eg = append(*eg, portCount{k, 1})
}

// Tap makes t see the frames crossing port of node (a switch's port index; a host's
// only port is 0); port -1 taps every port of the node. On a split lab whose Options.Each
// runs partitions at once, taps on nodes of different partitions are called from
// different goroutines (Backend.Run keeps a lab with captures whole).
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
	return s.grp.Run(min(t, s.sc.Duration))
}

// Now is the simulated time reached.
func (s *Sim) Now() units.Time { return s.grp.Now() }

// Hops is the number of frames delivered from one node to the next so far (packet-hops).
func (s *Sim) Hops() uint64 { return s.grp.Hops() }

// Partitions is the number of fabrics the lab is split into (1: not split).
func (s *Sim) Partitions() int { return len(s.fabs) }

// Results collects the run's record as of Now: end-of-run counters and every sample
// taken. WallTime is left for the caller.
func (s *Sim) Results() *results.Run {
	s.flushStage()
	now := s.Now()
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
		var egress []portCount
		for k := range s.parts {
			egress = append(egress, s.parts[k].egress[fi]...)
		}
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
