package switchd

import (
	"fmt"
	"math/rand/v2"

	"reef/units"
	"reef/wire"
)

// Out is a frame the switch hands to its driver: send Frame on Port. Due is when the
// frame was scheduled to reach the far end of the link (departure + propagation); now −
// Due at release is the driver's lateness. Frame is valid until the next call on the
// Switch.
type Out struct {
	Port  int
	Frame []byte
	Due   units.Time
}

// port is one port's state: the ingress delay line and PFC accounting on the way in,
// the egress queue on the way out.
type port struct {
	cfg PortConfig
	up  bool

	in      ring       // ingress delay line (constant delay, so a FIFO)
	lastIn  units.Time // time the last frame entered the line (keeps it in order)
	rxPkts  uint64
	rxBytes uint64
	drops   [NumDropReasons]uint64

	// PFC on this port's ingress.
	held      units.Bytes // bytes that arrived here and wait in the switch
	pausing   bool        // the upstream has been told to pause
	refreshAt units.Time  // when to repeat the pause while still pausing
	pausesTx  uint64
	pausesRx  uint64

	eg egress
}

// Switch is one switch's forwarding pipeline as a sans-I/O state machine (see the
// package doc). It is not safe for concurrent use: one driver goroutine owns it.
type Switch struct {
	name   string
	ports  []port
	router *router
	lb     balancer
	intMd  string
	mpdU   units.Time
	pfc    bool // some port has PFC on
	pool   *pool

	now  units.Time // every event up to now has been processed
	nin  int        // frames in ingress delay lines
	lent int32      // buffer handed out by the last Poll, freed on the next call
	upv  []bool     // scratch for router.setUp
	key  wire.FlowKey
}

// New validates cfg and builds the switch. Ports start up.
func New(cfg Config) (*Switch, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lbRng := rand.New(rand.NewPCG(cfg.Seed, 0x6c62)) // "lb"
	ecnRng := rand.New(rand.NewPCG(cfg.Seed, 0x65636e))
	s := &Switch{
		name:   cfg.Name,
		ports:  make([]port, len(cfg.Ports)),
		router: newRouter(&cfg),
		intMd:  cfg.INT.Mode,
		mpdU:   cfg.INT.MPDUnit,
		lent:   -1,
		upv:    make([]bool, len(cfg.Ports)),
	}
	s.lb = newBalancer(cfg.LB, cfg.Seed, lbRng, s)
	size, want := 0, 0
	for i, pc := range cfg.Ports {
		p := &s.ports[i]
		p.cfg, p.up = pc, true
		p.refreshAt = units.Never
		ecn := cfg.ECN
		if pc.ECN != nil {
			ecn = *pc.ECN
		}
		p.eg = egress{rate: pc.Rate, delay: pc.Delay, cap: pc.Buffer, mtu: maxFrame(pc.MTU), mark: newMarker(ecn, ecnRng)}
		s.pfc = s.pfc || pc.PFC.Enabled
		size = max(size, maxFrame(pc.MTU))
		// Budget: a full queue and both links' flight of full-size frames, plus slack.
		flight := pc.Rate.BytesIn(pc.Delay + pc.IngressDelay)
		want += int((pc.Buffer+flight)/units.Bytes(maxFrame(pc.MTU))) + 8
	}
	size = max(size, wire.PauseLen)
	// Small frames need more buffers than the budget: the pool grows on demand up to
	// 16× (at least 64 Ki frames), then drops with DropNoBuffer.
	s.pool = newPool(size, min(want, 4096), max(16*want, 1<<16))
	return s, nil
}

// Name is the switch's node name.
func (s *Switch) Name() string { return s.name }

// NumPorts is the number of ports.
func (s *Switch) NumPorts() int { return len(s.ports) }

func (s *Switch) backlog(p int) units.Bytes  { return s.ports[p].eg.qbytes }
func (s *Switch) capacity(p int) units.Bytes { return s.ports[p].eg.cap }

// release frees the buffer lent by the last Poll.
func (s *Switch) release() {
	if s.lent >= 0 {
		s.pool.put(s.lent)
		s.lent = -1
	}
}

// Receive hands the switch a frame that arrived on port at now. The switch copies it;
// the caller may reuse frame after the call. The frame enters the pipeline after the
// port's IngressDelay. A now earlier than a time the switch has already reached is
// taken as that time. Bad input (unknown port, any bytes) is counted, never fatal.
func (s *Switch) Receive(now units.Time, port int, frame []byte) {
	s.release()
	if port < 0 || port >= len(s.ports) {
		return
	}
	p := &s.ports[port]
	p.rxPkts++
	p.rxBytes += uint64(len(frame))
	switch {
	case !p.up:
		p.drops[DropPortDown]++
		return
	case len(frame) > s.pool.size:
		p.drops[DropOversize]++
		return
	}
	b, ok := s.pool.get()
	if !ok {
		p.drops[DropNoBuffer]++
		return
	}
	copy(s.pool.buf(b), frame)
	t := max(now+p.cfg.IngressDelay, s.now, p.lastIn)
	p.lastIn = t
	p.in.push(pkt{buf: b, n: int32(len(frame)), in: int16(port), t: t})
	s.nin++
}

// NextDeadline is the earliest time at which Poll may return a frame or the switch's
// state changes; units.Never when idle.
func (s *Switch) NextDeadline() units.Time {
	d := units.Never
	for i := range s.ports {
		p := &s.ports[i]
		if p.in.len() > 0 {
			d = min(d, p.in.at(0).t)
		}
		d = min(d, p.refreshAt, p.eg.deadline(s.pfc))
	}
	return max(d, s.now)
}

// Poll returns the next frame due at or before now, in order of Due across ports (a
// port's pause frames before its data at equal times). Drivers call it until it
// returns false. A late Poll returns the same frames with the same Due times as an
// on-time one: every time is computed from the schedule, never from now.
func (s *Switch) Poll(now units.Time) (Out, bool) {
	s.release()
	s.advance(now)
	best, bestDue, ctl := -1, units.Never, false
	for i := range s.ports {
		e := &s.ports[i].eg
		if e.ctl.len() > 0 && e.ctl.at(0).due < bestDue {
			best, bestDue, ctl = i, e.ctl.at(0).due, true
		}
		if e.ndep > 0 && e.q.at(0).due < bestDue {
			best, bestDue, ctl = i, e.q.at(0).due, false
		}
	}
	if best < 0 || bestDue > s.now {
		return Out{}, false
	}
	e := &s.ports[best].eg
	var p pkt
	if ctl {
		p = e.ctl.pop()
	} else {
		p = e.q.pop()
		e.ndep--
		e.late.add(s.now - p.due)
	}
	s.lent = p.buf
	return Out{Port: best, Frame: s.pool.buf(p.buf)[:p.n], Due: p.due}, true
}

// SetPortRate changes port's egress rate at now (a timeline event). The frame being
// serialised finishes at the old rate; the next starts at the new one. A rate ≤ 0 or
// an unknown port is ignored.
func (s *Switch) SetPortRate(now units.Time, port int, r units.Rate) {
	s.release()
	if port < 0 || port >= len(s.ports) || r <= 0 {
		return
	}
	s.advance(now)
	e := &s.ports[port].eg
	e.rate, e.newBusy = r, true
}

// SetPortUp brings port up or down at now (a timeline event). A down port drops what
// arrives on it, what is queued for it (the frame being serialised finishes) and what
// is still on its ingress delay line; routes skip it, so ECMP groups shrink, and pins
// to it fall back to routing.
func (s *Switch) SetPortUp(now units.Time, port int, up bool) {
	s.release()
	if port < 0 || port >= len(s.ports) || s.ports[port].up == up {
		return
	}
	s.advance(now)
	p := &s.ports[port]
	p.up = up
	if !up {
		e := &p.eg
		keep := e.ndep
		if e.sched {
			keep++
		}
		for e.q.len() > keep {
			d := e.q.popBack()
			e.qbytes -= units.Bytes(d.n)
			p.drops[DropPortDown]++
			s.unhold(int(d.in), units.Bytes(d.n), s.now)
			s.pool.put(d.buf)
		}
		for p.in.len() > 0 {
			d := p.in.pop()
			s.nin--
			p.drops[DropPortDown]++
			s.pool.put(d.buf)
		}
		p.pausing, p.refreshAt = false, units.Never
	}
	for i := range s.ports {
		s.upv[i] = s.ports[i].up
	}
	s.router.setUp(s.upv)
}

// advance processes every event up to t in time order: frames leaving ingress delay
// lines, PFC refreshes and, before each of them, the egress departures that precede it.
func (s *Switch) advance(t units.Time) {
	t = max(t, s.now)
	for {
		x, src, refresh := units.Never, -1, false
		if s.nin > 0 {
			for i := range s.ports {
				if p := &s.ports[i]; p.in.len() > 0 && p.in.at(0).t < x {
					x, src = p.in.at(0).t, i
				}
			}
		}
		if s.pfc {
			for i := range s.ports {
				if r := s.ports[i].refreshAt; r < x {
					x, src, refresh = r, i, true
				}
			}
		}
		if x > t {
			break
		}
		s.advanceEgress(x)
		s.now = x
		if refresh {
			s.sendPause(src, x, pauseQuanta)
		} else {
			s.ingress(src, x)
		}
	}
	s.advanceEgress(t)
	s.now = t
}

// advanceEgress processes every departure up to x. With PFC on, departures across
// ports are merged in time order, because each may resume an upstream.
func (s *Switch) advanceEgress(x units.Time) {
	if !s.pfc {
		for i := range s.ports {
			e := &s.ports[i].eg
			for e.schedule(x) <= x {
				s.depart(i)
			}
		}
		return
	}
	for {
		best, bd := -1, units.Never
		for i := range s.ports {
			if d := s.ports[i].eg.schedule(x); d <= x && d < bd {
				best, bd = i, d
			}
		}
		if best < 0 {
			return
		}
		s.depart(best)
	}
}

// ingress runs the pipeline on the head of port src's ingress line at t: parse, TTL,
// route, balance, enqueue.
func (s *Switch) ingress(src int, t units.Time) {
	p := &s.ports[src]
	k := p.in.pop()
	s.nin--
	frame := s.pool.buf(k.buf)[:k.n]
	if q, ok := wire.ParsePause(frame); ok {
		p.pausesRx++
		p.eg.pause(t, q)
		s.pool.put(k.buf)
		return
	}
	v, ok := wire.Classify(frame)
	if !ok {
		r := DropNotIPv4
		if len(frame) >= wire.EthLen && frame[12] == 0x08 && frame[13] == 0x00 {
			r = DropMalformed
		}
		s.drop(src, k.buf, r)
		return
	}
	if wire.IPv4Checksum(frame[v.IP:]) != 0 {
		s.drop(src, k.buf, DropMalformed)
		return
	}
	if !v.DecTTL() {
		s.drop(src, k.buf, DropTTL)
		return
	}
	s.key = v.Key() // a field, not a local: a pointer to a local would escape through the balancer interface
	out, why := s.route(t, &s.key)
	if out < 0 {
		s.drop(src, k.buf, why)
		return
	}
	s.enqueue(out, t, k, v)
}

// route picks the egress port for key: a pin, else the longest-prefix route's group
// through the balancer.
func (s *Switch) route(t units.Time, key *wire.FlowKey) (int, DropReason) {
	for i := range s.router.pins {
		pn := &s.router.pins[i]
		if pn.dst == key.Dst && pn.src == key.Src && (pn.srcPort == 0 || pn.srcPort == key.SrcPort) && s.ports[pn.port].up {
			return pn.port, 0
		}
	}
	r := s.router.lookup(key.Dst)
	if r < 0 {
		return -1, DropNoRoute
	}
	switch c := s.router.groups[r].up; len(c) {
	case 0:
		return -1, DropPortDown
	case 1:
		return c[0], 0
	default:
		return s.lb.pick(t, key, c), 0
	}
}

func (s *Switch) drop(port int, buf int32, r DropReason) {
	s.ports[port].drops[r]++
	s.pool.put(buf)
}

// enqueue admits k to port out's queue at t (tail drop), marks ECN on the backlog it
// finds, rewrites the Ethernet header and does PFC accounting.
func (s *Switch) enqueue(out int, t units.Time, k pkt, v wire.View) {
	p := &s.ports[out]
	e := &p.eg
	n := units.Bytes(k.n)
	switch {
	case int(k.n) > e.mtu:
		s.drop(out, k.buf, DropOversize)
		return
	case e.qbytes+n > e.cap:
		s.drop(out, k.buf, DropTail)
		return
	}
	if e.mark != nil {
		if ecn := v.ECN(); ecn != wire.NotECT && ecn != wire.CE && e.mark.mark(e.qbytes, e.cap) {
			v.SetCE()
			e.marks++
		}
	}
	f := v.Frame
	copy(f[0:6], p.cfg.PeerMAC[:])
	copy(f[6:12], p.cfg.MAC[:])
	k.t, k.reef = t, int16(v.Reef)
	e.q.push(k)
	e.qbytes += n
	e.maxQ = max(e.maxQ, e.qbytes)
	in := &s.ports[k.in]
	if in.cfg.PFC.Enabled {
		in.held += n
		if !in.pausing && in.held > in.cfg.PFC.XOff && in.up {
			in.pausing = true
			s.sendPause(int(k.in), t, pauseQuanta)
		}
	}
}

// depart moves the scheduled head of port i's queue onto its delay line at its computed
// departure: counters, INT, PFC.
func (s *Switch) depart(i int) {
	e := &s.ports[i].eg
	h := e.q.at(e.ndep)
	e.ndep++
	e.sched = false
	n := units.Bytes(h.n)
	e.qbytes -= n
	e.txPackets++
	e.txBytes += uint64(n)
	h.due = h.dep + e.delay
	if h.reef != 0 {
		s.stampINT(e, h)
	}
	s.unhold(int(h.in), n, h.dep)
}

// stampINT applies the INT mode to a reef packet at its departure.
func (s *Switch) stampINT(e *egress, h *pkt) {
	v := wire.View{Frame: s.pool.buf(h.buf)[:h.n], IP: wire.EthLen, Reef: int(h.reef)}
	switch s.intMd {
	case INTMPD:
		// Queueing delay = departure − serialisation − arrival = start − arrival.
		q := h.start - h.t
		u := (q + s.mpdU - 1) / s.mpdU
		own := uint16(min(u, 0xffff))
		if own > v.MPD() {
			v.SetMPD(own)
		}
	case INTHPCC:
		if v.Flags()&wire.FlagINT != 0 {
			v.PushHop(wire.Hop{
				TS:       int64(h.dep),
				TxBytes:  e.txBytes,
				QLen:     uint32(min(e.qbytes, 0xffffffff)),
				RateKbps: uint32(min(e.rate/units.Kbps, 0xffffffff)),
			})
		}
	}
}

// unhold releases n bytes held for ingress port in at t, resuming its upstream once
// they fall to XOn.
func (s *Switch) unhold(in int, n units.Bytes, t units.Time) {
	p := &s.ports[in]
	if !p.cfg.PFC.Enabled {
		return
	}
	p.held -= n
	if p.pausing && p.held <= p.cfg.PFC.XOn {
		p.pausing = false
		p.refreshAt = units.Never
		s.sendPause(in, t, 0)
	}
}

// sendPause emits a PFC frame with quanta out of port i at t. It bypasses the egress
// queue but takes the link's delay. While pausing, it is repeated at half its length.
func (s *Switch) sendPause(i int, t units.Time, quanta uint16) {
	p := &s.ports[i]
	if quanta != 0 {
		p.refreshAt = t + max(1, p.eg.rate.TxTime(units.Bytes(quanta)*64)/2)
	}
	if !p.up {
		return
	}
	b, ok := s.pool.get()
	if !ok {
		return
	}
	n := wire.BuildPause(s.pool.buf(b), p.cfg.MAC, quanta)
	p.pausesTx++
	p.eg.ctl.push(pkt{buf: b, n: int32(n), in: int16(i), t: t, dep: t, due: t + p.eg.delay})
}

// Stats returns a snapshot of every port's counters, as of the latest time the switch
// has reached.
func (s *Switch) Stats() []PortStats { return s.AppendStats(nil) }

// AppendStats appends the snapshot Stats returns to dst, so a driver sampling often can
// reuse one slice.
func (s *Switch) AppendStats(dst []PortStats) []PortStats {
	for i := range s.ports {
		p := &s.ports[i]
		e := &p.eg
		dst = append(dst, PortStats{
			Name: p.cfg.Name, Up: p.up, Rate: e.rate,
			RxPackets: p.rxPkts, RxBytes: p.rxBytes,
			TxPackets: e.txPackets, TxBytes: e.txBytes,
			Drops:     p.drops,
			ECNMarks:  e.marks,
			PauseTime: e.pauseTime(s.now), PausesRx: p.pausesRx, PausesTx: p.pausesTx,
			QueueBytes: e.qbytes, MaxQueueBytes: e.maxQ,
			HeldBytes: p.held,
			Lateness:  e.late.summary(),
		})
	}
	return dst
}

// Depth is one port's queue as telemetry samples it.
type Depth struct {
	// Backlog is the bytes queued (the frame being serialised included).
	Backlog units.Bytes
	// Delay is how long a frame arriving now would wait before its serialisation
	// starts, if no pause or rate change intervened.
	Delay units.Time
}

// Depths advances the switch to now and appends every port's Depth to dst (indexed by
// port). It is cheap: O(ports) plus any events due by now.
func (s *Switch) Depths(now units.Time, dst []Depth) []Depth {
	s.release()
	s.advance(now)
	for i := range s.ports {
		e := &s.ports[i].eg
		dst = append(dst, Depth{Backlog: e.qbytes, Delay: e.queueDelay(s.now)})
	}
	return dst
}

// String describes the switch for logs.
func (s *Switch) String() string {
	return fmt.Sprintf("switch %q (%d ports)", s.name, len(s.ports))
}
