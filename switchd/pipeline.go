package switchd

import (
	"math/bits"

	"reef/units"
	"reef/wire"
)

// advance processes every event up to t in time order: frames leaving ingress delay
// lines, PFC refreshes and, before each of them, the egress departures that precede it.
func (s *Switch) advance(t units.Time) {
	t = min(max(t, s.now), units.Never-1) // Poll(units.Never) drains everything
	nx := s.nextTimes()
	if t < nx.work {
		s.now = t // nothing to process: no ingress, refresh, scheduling or departure by t
		return
	}
	egIdle, first := nx.egwork, true // before the first event the egress is idle until egIdle
	s.nx.ok = false
	for {
		// The earliest ingress line head is next, unless a PFC refresh comes first; ties
		// counts the heads that arrived at that same instant (see pickTied).
		x, src, refresh, ties := units.Never, -1, false, 1
		if s.nin > 0 {
			if len(s.ports) > 64 {
				for i := range s.ports {
					p := &s.ports[i]
					if p.in.len() == 0 {
						continue
					}
					if t := p.in.at(0).t; t < x {
						x, src, ties = t, i, 1
					} else if t == x {
						ties++
					}
				}
			} else {
				for m := s.inq; m != 0; m &= m - 1 {
					i := bits.TrailingZeros64(m)
					if t := s.ports[i].in.at(0).t; t < x {
						x, src, ties = t, i, 1
					} else if t == x {
						ties++
					}
				}
			}
		}
		if s.pfc {
			for i := range s.ports {
				if r := s.ports[i].pfc.refreshAt; r < x {
					x, src, refresh = r, i, true
				}
			}
		}
		// A frame whose arrival is earlier than the time reached (see Receive) is
		// processed now; it keeps its arrival for the schedule.
		x = max(x, s.now)
		if x > t {
			break
		}
		if !first || x >= egIdle {
			s.advanceEgress(x)
		}
		first = false // the event below may give the egress work
		s.now = x
		if refresh {
			// The departures just processed may have resumed the upstream.
			if f := &s.ports[src].pfc; f.pausing && f.refreshAt == x {
				s.sendPause(src, x, pauseQuanta)
			}
		} else {
			if ties > 1 {
				src = s.pickTied(s.ports[src].in.at(0).t, ties)
			}
			s.ingress(src, x)
		}
	}
	s.advanceEgress(t)
	s.now = t
}

// pickTied returns one of the n ports whose ingress line head arrived at t, uniformly
// at random. Frames that arrive at the same instant on different ports enter the
// pipeline in a random order: a fixed rule (lowest port first) would queue the same
// flows first every time a fabric without jitter lines their arrivals up to the
// nanosecond (ACK-clocked senders on equal paths do, in the sim), and lock their
// shares of a bottleneck. There is one draw per tied frame processed, from Config.Seed,
// so the order is reproducible and, like every other result, independent of the
// moments the driver polls at; a run without such ties draws nothing.
func (s *Switch) pickTied(t units.Time, n int) int {
	k := s.ties.IntN(n)
	for i := range s.ports {
		if p := &s.ports[i]; p.in.len() > 0 && p.in.at(0).t == t {
			if k == 0 {
				return i
			}
			k--
		}
	}
	panic("switchd: pickTied: fewer tied ingress heads than counted")
}

// next caches the switch's earliest event times, so that the calls a driver makes
// between events (Poll finding nothing due, NextDeadline after every call) cost O(1)
// instead of a scan of every port. Whatever changes a port's lines or queue clears ok
// and touches the port, whose share (portNext) alone is then recomputed; Receive, which
// only appends to an ingress line, lowers work and deadline in place.
type next struct {
	ok bool
	// work is the earliest time at which advance has something to do: a frame leaving
	// an ingress line, a PFC refresh, a queue head becoming schedulable (its start) or a
	// scheduled head departing. advance(t) with t < work only moves now.
	work units.Time
	// egwork is the part of work due to the egress queues: a head's start or departure.
	egwork units.Time
	// deadline is NextDeadline before it is raised to now.
	deadline units.Time
	// out is the port whose frame Poll returns next (-1: none), due its Due and ctl
	// whether it is a pause frame; ties go to the lower port, a port's pause frames first.
	out int
	due units.Time
	ctl bool
}

// portNext is one port's share of next: the earliest times its ingress line, PFC
// refresh and egress contribute, and its next frame out.
type portNext struct {
	work, egwork, deadline units.Time
	due                    units.Time // the port's next frame out (Never: none)
	ctl                    bool       // that frame is a pause frame
}

// touch records that port i's lines, queue, schedule or PFC state changed: nextTimes
// recomputes its share. Every change to what portNext reads must touch the port.
func (s *Switch) touch(i int) { s.dirty |= 1 << (uint(i) & 63) }

// nextTimes returns the cached event times, recomputing them if anything changed since
// the last call.
func (s *Switch) nextTimes() *next {
	if !s.nx.ok {
		s.recomputeNext()
	}
	return &s.nx
}

// checkNext, when set (by the package's tests), checks every recomputation of nx.
var checkNext func(*Switch)

// recomputeNext recomputes the shares of the ports touched since the last call (every
// port's on switches with more than 64), then the minimum over the ports.
//
// The minimum is a branch-free scan of every port's share, once per event (1.9 a
// packet-hop). A tournament tree over the shares, each touched port re-joining its path
// to the root, was measured against it (2026-11-29, cachegrind): on the k = 4
// permutation (4 ports a switch) 3,546 → 3,623 instructions a packet-hop, on the k = 16
// one (16 ports) 12% fewer instructions in this code but barely fewer in all. About
// two ports are touched per call, and a join costs several times a scan's step: the
// scan stays.
func (s *Switch) recomputeNext() {
	pn := s.pn
	if len(pn) > 64 {
		for i := range pn {
			s.portNext(i, &pn[i])
		}
	} else {
		for m := s.dirty; m != 0; m &= m - 1 {
			if i := bits.TrailingZeros64(m); i < len(pn) {
				s.portNext(i, &pn[i])
			}
		}
	}
	s.dirty = 0
	x := &s.nx
	x.ok = true
	x.work, x.egwork, x.deadline, x.out, x.due, x.ctl = reduceNext(pn)
	if checkNext != nil {
		checkNext(s)
	}
}

// reduceNext is the minimum of the ports' shares (ties for the next frame out go to the
// lower port).
func reduceNext(pn []portNext) (work, egwork, dl units.Time, out int, due units.Time, ctl bool) {
	work, egwork, dl, out, due = units.Never, units.Never, units.Never, -1, units.Never
	for i := range pn {
		p := &pn[i]
		work = min(work, p.work)
		egwork = min(egwork, p.egwork)
		dl = min(dl, p.deadline)
		// Which port is next out is a coin flip: no branch. Times are never negative,
		// so d − due is negative exactly when d < due.
		d := p.due
		out += (i - out) * int(uint64(d-due)>>63)
		due = min(due, d)
	}
	if out >= 0 {
		ctl = pn[out].ctl
	}
	return min(work, egwork), egwork, dl, out, due, ctl
}

// portNext computes port i's share of next into x.
func (s *Switch) portNext(i int, x *portNext) {
	p := &s.ports[i]
	work, dl := units.Never, p.pfc.refreshAt
	if p.in.n > 0 {
		t := p.in.at(0).t
		work, dl = t, min(dl, t)
	}
	if s.pfc {
		work = min(work, p.pfc.refreshAt)
	}
	e := &p.eg
	due, ctl := e.nextOut()
	dl = min(dl, due)
	egwork := units.Never
	if e.ndep < e.q.n {
		// The head departs at its dep once scheduled (the line's last, so the ring is
		// not read); until then, advance has work as soon as it can start.
		start, dep := e.last, e.last
		if !e.sched {
			start, dep = e.next(e.q.at(e.ndep))
		}
		egwork = start
		if !s.pfc {
			dep += e.delay // without PFC only the frame's arrival at the far end matters
		}
		dl = min(dl, dep) // with PFC a departure may resume an upstream
	}
	x.work, x.egwork, x.deadline, x.due, x.ctl = work, egwork, dl, due, ctl
}

// advanceEgress processes every departure up to x. With PFC on, departures across
// ports are merged in time order, because each may resume an upstream.
func (s *Switch) advanceEgress(x units.Time) {
	if !s.pfc {
		if len(s.ports) > 64 {
			for i := range s.ports {
				e := &s.ports[i].eg
				for e.schedule(x) <= x {
					s.depart(i)
				}
			}
			return
		}
		for m := s.queued; m != 0; m &= m - 1 {
			i := bits.TrailingZeros64(m)
			if s.dirty&(1<<uint(i)) == 0 && s.pn[i].egwork > x {
				continue // the cached share is exact: the head starts (or departs) after x
			}
			e := &s.ports[i].eg
			was := e.sched
			for e.schedule(x) <= x {
				s.depart(i) // touches the port
			}
			if !was && e.sched {
				s.touch(i) // the head was scheduled
			}
		}
		return
	}
	for {
		best, bd := -1, units.Never
		for i := range s.ports {
			if len(s.ports) <= 64 && s.dirty&(1<<uint(i)) == 0 && s.pn[i].egwork > x {
				continue // as above
			}
			e := &s.ports[i].eg
			was := e.sched
			d := e.schedule(x)
			if !was && e.sched {
				s.touch(i) // the head was scheduled
			}
			if d <= x && d < bd {
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
	s.touch(src)
	if p.in.len() == 0 {
		s.inq &^= 1 << (uint(src) & 63)
	}
	frame := s.frame(k.buf, k.n)
	v := wire.View{Frame: frame, IP: wire.EthLen, Reef: int(k.reef)}
	if !k.valid {
		if q, ok := wire.ParsePause(frame); ok {
			p.pausesRx++
			p.eg.pause(t, q)
			s.pool.put(k.buf)
			return
		}
		var ok bool
		if v, ok = wire.Classify(frame); !ok {
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
		if pn.matches(key) && s.ports[pn.port].up {
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
	s.ports[port].drop(r)
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
		q := e.qbytes
		if k.t < t {
			// Read late: mark on the backlog the frame met when it arrived (the queue has
			// drained since), as its queueing delay and INT will say.
			q = max(q, e.rate.BytesIn(e.queueDelay(k.t)))
		}
		if ecn := v.ECN(); ecn != wire.NotECT && ecn != wire.CE && e.mark.mark(q, e.cap) {
			v.SetCE()
			e.marks++
		}
	}
	if k.t < e.lastArr {
		histOf(&e.skew).Add(e.displaced(k.t)) // read late: behind frames that arrived after it
		e.maxBehind = max(e.maxBehind, e.lastArr-k.t)
	} else {
		e.lastArr = k.t
		e.skew0++ // see lateness
	}
	f := v.Frame
	copy(f[0:6], p.cfg.PeerMAC[:])
	copy(f[6:12], p.cfg.MAC[:])
	k.reef = int16(v.Reef) // k.t stays the arrival, which may be earlier than t (see Receive)
	e.q.push(k)
	s.queued |= 1 << (uint(out) & 63)
	s.touch(out)
	e.qbytes += n
	e.maxQ = max(e.maxQ, e.qbytes)
	s.hold(int(k.in), n, t)
}

// depart moves the scheduled head of port i's queue onto its delay line at its computed
// departure: counters, INT, PFC.
func (s *Switch) depart(i int) {
	e := &s.ports[i].eg
	h := e.q.at(e.ndep)
	e.ndep++
	s.touch(i)
	if e.ndep == e.q.len() {
		s.queued &^= 1 << (uint(i) & 63)
	}
	e.sched = false
	n := units.Bytes(h.n)
	e.qbytes -= n
	e.txPackets++
	e.txBytes += uint64(n)
	e.waited += h.start - h.t
	h.due = h.dep + e.delay
	if h.reef != 0 && s.intMd == intHPCC {
		s.stampHop(e, h)
	}
	s.unhold(int(h.in), n, h.dep)
}

// intMode is Config.INT.Mode as the pipeline tests it per packet.
type intMode uint8

const (
	intOff intMode = iota
	intMPD
	intHPCC
)

func intModeOf(m string) intMode {
	switch m {
	case INTMPD:
		return intMPD
	case INTHPCC:
		return intHPCC
	}
	return intOff
}

// stampMPD applies the mpd INT mode to a reef packet: its queueing delay here, from
// the times its departure computed, raises the packet's max-per-hop delay. It is
// written when the packet leaves the switch (Poll), not at its departure: nothing
// reads the frame in between, and the bytes are then touched once per hop, as the
// next hop reads them, instead of once more a link delay earlier.
func (s *Switch) stampMPD(h *pkt) {
	v := wire.View{Frame: s.frame(h.buf, h.n), IP: wire.EthLen, Reef: int(h.reef)}
	v.SetFlags(wire.FlagMPDSeen) // an INT hop is on this path, even if its MPD is 0
	// Queueing delay = departure − serialisation − arrival = start − arrival.
	q := h.start - h.t
	u := (q + s.mpdU - 1) / s.mpdU
	own := uint16(min(u, 0xffff))
	if own > v.MPD() {
		v.SetMPD(own)
	}
}

// stampHop applies the hpcc INT mode to a reef packet at its departure: a hop record
// with the departure time, the port's cumulative tx bytes and its rate (QLen follows
// in setQLen).
func (s *Switch) stampHop(e *egress, h *pkt) {
	v := wire.View{Frame: s.frame(h.buf, h.n), IP: wire.EthLen, Reef: int(h.reef)}
	if n := v.NHops(); v.Flags()&wire.FlagINT != 0 && v.PushHop(wire.Hop{
		TS:       int64(h.dep),
		TxBytes:  e.txBytes,
		RateKbps: uint32(min(e.rate/units.Kbps, 0xffffffff)),
	}) {
		h.hop = int16(n + 1)
	}
}

// setQLen writes the QLen of the HPCC hop record that p, just popped from the head of
// e's queue, got at its departure: the backlog when it was dequeued, at the start of its
// serialisation, which is the frames behind it that arrived by then. That is HPCC's
// QLen: the reference switch-node.cc pushes GetNBytesTotal at dequeue, and a real
// switch's INT reads its dequeue queue depth; not what piled up behind the packet by
// the end of its own serialisation (the other flows' arrivals during one packet time, of
// which a flow reads less the larger its own share, so HPCC's flows drift apart).
//
// It is counted at release, not at departure, because a driver may read a frame late
// (see Receive): at the departure on netns some of the frames that arrived before the
// dequeue may not have been read yet, and the queue length would miss them; a link
// delay and a serialisation later they have been (on the sim it makes no difference).
// Frames behind p that have departed too are still on the queue, before e.ndep. The
// scan stops at the first frame that arrived more than maxBehind after p's start: none
// behind it arrived by then (on the sim, where maxBehind is 0, it looks at QLen's frames
// and one more).
func (e *egress) setQLen(f []byte, p *pkt) {
	var b units.Bytes
	for i := range e.q.len() {
		k := e.q.at(i)
		if k.t > p.start+e.maxBehind {
			break
		}
		if k.t <= p.start {
			b += units.Bytes(k.n)
		}
	}
	v := wire.View{Frame: f, IP: wire.EthLen, Reef: int(p.reef)}
	v.SetHopQLen(int(p.hop)-1, uint32(min(b, 0xffffffff)))
}
