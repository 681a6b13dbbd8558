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
	// Reef is the offset of the frame's reef header as the pipeline parsed it (0: not
	// a reef packet), so that a backend that looks at the frames it forwards (the
	// sim's path counts) need not parse them again.
	Reef int
}

// port is one port's state: the ingress delay line and PFC accounting on the way in,
// the egress queue on the way out.
type port struct {
	// What nextTimes and advance read on every event comes first, so that a scan of
	// the ports touches few cache lines; the configuration and counters come last.
	in  ring       // ingress delay line (constant delay, so a FIFO)
	pfc pfcIngress // PFC on this port's ingress
	eg  egress

	up       bool
	lastIn   units.Time // time the last frame entered the line (keeps it in order)
	pausesRx uint64     // PFC frames received (pausing this port's egress)
	rxPkts   uint64
	rxBytes  uint64
	drops    [NumDropReasons]uint64
	dropped  uint64 // the sum of drops, which samples read (see drop)

	cfg PortConfig
}

// drop counts a frame dropped on p for reason r.
func (p *port) drop(r DropReason) {
	p.drops[r]++
	p.dropped++
}

// Switch is one switch's forwarding pipeline as a sans-I/O state machine (see the
// package doc). It is not safe for concurrent use: one driver goroutine owns it.
type Switch struct {
	name   string
	ports  []port
	router *router
	lb     balancer
	intMd  intMode
	mpdU   units.Time
	pfc    bool // some port has PFC on
	pool   *pool
	// frameMax is the largest frame the switch accepts. snap says its buffers hold
	// frames truncated after their headers (Config.Snap): a frame's length is then
	// wire.FrameLen's, and its bytes are the first pool.size of them (frame).
	frameMax int
	snap     bool

	now units.Time // every event up to now has been processed
	// wall is when the frames Poll returns are really released (SetWall), if later
	// than now: what their lateness is measured against.
	wall units.Time
	nin  int  // frames in ingress delay lines
	nx   next // cached earliest event times (see next)
	// pn caches each port's share of nx; dirty has bit i set when port i changed since
	// its share was computed (see touch).
	pn    []portNext
	dirty uint64
	// queued has bit i set when port i's queue holds a frame not yet departed, so the
	// egress pass visits only those; switches with more than 64 ports visit every port.
	queued uint64
	// inq has bit i set when port i's ingress line holds a frame (as queued, for
	// switches with at most 64 ports).
	inq   uint64
	lent  int32 // buffer handed out by the last Poll, freed on the next call
	lentN int32 // length of the frame in it (on the wire: see frame)
	// lentIP says the lent frame is IPv4 the pipeline parsed (not a pause frame), with
	// its reef header at lentReef: Forward passes both on, so the next switch skips
	// the parse.
	lentIP   bool
	lentReef int16
	upv      []bool // scratch for router.setUp
	key      wire.FlowKey
	// ties orders frames that reach the pipeline at the same instant on different
	// ports (see pickTied).
	ties *rand.Rand
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
		intMd:  intModeOf(cfg.INT.Mode),
		mpdU:   cfg.INT.MPDUnit,
		lent:   -1,
		upv:    make([]bool, len(cfg.Ports)),
		pn:     make([]portNext, len(cfg.Ports)),
		dirty:  ^uint64(0),
		ties:   rand.New(rand.NewPCG(cfg.Seed, 0x74696573)), // "ties"
	}
	s.lb = newBalancer(cfg.LB, cfg.Seed, lbRng, s)
	size, want := 0, 0
	for i, pc := range cfg.Ports {
		p := &s.ports[i]
		p.cfg, p.up = pc, true
		p.pfc = pfcIngress{cfg: pc.PFC, refreshAt: units.Never}
		ecn := cfg.ECN
		if pc.ECN != nil {
			ecn = *pc.ECN
		}
		p.eg = egress{rate: pc.Rate, delay: pc.Delay, cap: pc.Buffer, mtu: MaxFrame(pc.MTU), mark: newMarker(ecn, ecnRng)}
		s.pfc = s.pfc || pc.PFC.Enabled
		size = max(size, MaxFrame(pc.MTU))
		// Budget: a full queue and both links' flight of full-size frames, plus slack.
		flight := pc.Rate.BytesIn(pc.Delay + pc.IngressDelay)
		want += int((pc.Buffer+flight)/units.Bytes(MaxFrame(pc.MTU))) + 8
	}
	s.frameMax = max(size, wire.PauseLen)
	size = s.frameMax
	if cfg.Snap > 0 {
		size = min(cfg.Snap, size)
		s.snap = true
	}
	// Small frames need more buffers than the budget: the pool grows on demand up to
	// 16× (at least 64 Ki frames), then drops with DropNoBuffer.
	initial := min(want, 1024)
	if cfg.Buffers > 0 {
		initial = cfg.Buffers
	}
	s.pool = newPool(size, initial, max(16*want, 1<<16))
	return s, nil
}

// SharePool makes s take its frame buffers from with's pool from now on: that pool
// gets s's buffers and s's limit on top of its own, and a frame Forward hands between
// the two stays in its buffer. Switches one goroutine drives and wires back to back (a
// fabric: a sim partition, a shard) share one pool, so the buffers they hold follow the
// frames they hold at once, not the sum of each switch's busiest moment. It reports
// false and changes nothing when the pools' buffers differ in size or either holds a
// frame; call it before the first.
func (s *Switch) SharePool(with *Switch) bool {
	if s.pool == with.pool {
		return true
	}
	if s.pool.size != with.pool.size || s.snap != with.snap || !s.pool.idle() || !with.pool.idle() || s.lent >= 0 || with.lent >= 0 {
		return false
	}
	with.pool.absorb(s.pool)
	s.pool = with.pool
	return true
}

// Prefault writes every page of the switch's frame buffers and allocates its ports'
// lateness histograms. Fresh memory is backed only when first written, so a switch
// daemon whose queues first fill during a run takes a page fault per 4 KB on its
// real-time thread, and a first late frame would allocate; it calls Prefault before
// the run instead (a shared pool's buffers are written once). (The sim need not: its
// time is virtual, and nothing in it is late.)
func (s *Switch) Prefault() {
	s.pool.touch()
	for i := range s.ports {
		e := &s.ports[i].eg
		histOf(&e.late)
		histOf(&e.skew)
	}
}

// Name is the switch's node name.
func (s *Switch) Name() string { return s.name }

// PortDelay is port's propagation delay: a frame arrives at the far end that long after
// it leaves (0 for a port the switch does not have).
func (s *Switch) PortDelay(port int) units.Time {
	if port < 0 || port >= len(s.ports) {
		return 0
	}
	return s.ports[port].eg.delay
}

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
// port's IngressDelay. A now earlier than a time the switch has already reached (a
// driver that read the frame late) still counts as the frame's arrival for the
// schedule: its queueing delay, departure, Due and INT are computed from it, while the
// pipeline processes it at the time reached; arrivals on one port are kept in order.
// Any bytes are accepted: what cannot be forwarded is dropped and
// counted on the port. A frame for a port the switch does not have is ignored.
func (s *Switch) Receive(now units.Time, port int, frame []byte) {
	n := s.frameLen(frame)
	b, ok := s.admit(port, n)
	if !ok {
		return
	}
	copy(s.pool.buf(b), frame) // what the buffer holds: all of it, or (snap) its headers
	s.enter(now, port, b, n, false, 0)
}

// frameLen is the length of the frame that frame holds: len(frame), or wire.FrameLen
// when the switch stores frames truncated (Config.Snap).
func (s *Switch) frameLen(frame []byte) int {
	if s.snap {
		return wire.FrameLen(frame)
	}
	return len(frame)
}

// frame is the stored bytes of the n-byte frame in buffer b: all of them, or the
// first Config.Snap.
func (s *Switch) frame(b int32, n int32) []byte {
	f := s.pool.buf(b)
	return f[:min(int(n), len(f))]
}

// Forward hands s, on port at now, the frame that from's last Poll returned, exactly as
// Receive(now, port, out.Frame) would, but without copying it when the two switches'
// buffers have the same size: s takes the buffer and from gets one of s's free ones in
// exchange. Backends that wire switches back to back in one process (the sim) use it;
// out.Frame then belongs to s. Forward does nothing if from lent no frame.
func (s *Switch) Forward(now units.Time, port int, from *Switch) {
	if from.lent < 0 {
		return
	}
	if from == s || from.pool.size != s.pool.size || from.snap != s.snap {
		s.Receive(now, port, from.frame(from.lent, from.lentN))
		return
	}
	n := int(from.lentN)
	if from.pool == s.pool {
		// One pool: the frame stays in its buffer, which passes from from to s.
		s.release()
		if !s.accept(port, n) {
			return
		}
		b := from.lent
		from.lent = -1
		s.enter(now, port, b, n, from.lentIP, from.lentReef)
		return
	}
	b, ok := s.admit(port, n)
	if !ok {
		return
	}
	s.pool.bufs[b], from.pool.bufs[from.lent] = from.pool.bufs[from.lent], s.pool.bufs[b]
	// The frame is what from's pipeline parsed and forwarded: its checksum stayed valid
	// (TTL and ECN are updated incrementally) and its headers' layout is unchanged.
	s.enter(now, port, b, n, from.lentIP, from.lentReef)
}

// TakeLent hands the caller the storage of the frame the last Poll or PollPort returned,
// in exchange for spare: the frame is the caller's from then on, without a copy. spare
// must hold the largest frame the switch accepts (nil or smaller: the switch allocates
// its replacement). It returns nil when no frame is lent.
func (s *Switch) TakeLent(spare []byte) []byte {
	if s.lent < 0 {
		return nil
	}
	if cap(spare) < s.pool.size {
		spare = make([]byte, s.pool.size)
	}
	frame := s.frame(s.lent, s.lentN)
	s.pool.bufs[s.lent] = spare[:s.pool.size:s.pool.size]
	s.release()
	return frame
}

// ReceiveBuffer is Receive for a frame whose storage the caller gives up, as the sim
// does with the frame a host's Poll returned: when frame's capacity holds the largest
// frame the switch accepts, the switch keeps the storage instead of copying the bytes.
// Either way it returns storage of that capacity for the caller to use in frame's place
// (one of its free buffers, or a new one the first time), or nil when it dropped the
// frame and frame stays the caller's. reef is the Out.Reef another switch's Poll gave
// the frame (0: none, or not from a switch): a frame with one is IPv4 that switch's
// pipeline parsed and checksummed, as Forward hands over, and is not parsed again (the
// sim's cut links between partitions carry it).
func (s *Switch) ReceiveBuffer(now units.Time, port int, frame []byte, reef int) []byte {
	n := s.frameLen(frame)
	b, ok := s.admit(port, n)
	if !ok {
		return nil
	}
	spare := s.pool.bufs[b]
	if cap(frame) < s.pool.size {
		copy(spare, frame)
		spare = make([]byte, s.pool.size) // the caller's storage from now on
	} else {
		s.pool.bufs[b] = frame[:s.pool.size:s.pool.size]
	}
	s.enter(now, port, b, n, reef != 0, int16(reef))
	return spare
}

// admit counts a frame of n bytes arriving on port and takes a buffer for it; false
// when the frame is dropped (or the port does not exist).
func (s *Switch) admit(port, n int) (int32, bool) {
	s.release()
	if !s.accept(port, n) {
		return -1, false
	}
	b, ok := s.pool.get()
	if !ok {
		s.ports[port].drop(DropNoBuffer)
		return -1, false
	}
	return b, true
}

// accept counts a frame of n bytes arriving on port; false when it is dropped there
// (or the port does not exist).
func (s *Switch) accept(port, n int) bool {
	if port < 0 || port >= len(s.ports) {
		return false
	}
	p := &s.ports[port]
	p.rxPkts++
	p.rxBytes += uint64(n)
	switch {
	case !p.up:
		p.drop(DropPortDown)
		return false
	case n > s.frameMax:
		p.drop(DropOversize)
		return false
	}
	return true
}

// enter puts buffer b, holding an n-byte frame that arrived on port at now, on the
// port's ingress delay line; valid says it is IPv4 another switch parsed, with its reef
// header at reef (see pkt.valid).
func (s *Switch) enter(now units.Time, port int, b int32, n int, valid bool, reef int16) {
	p := &s.ports[port]
	t := max(now+p.cfg.IngressDelay, p.lastIn)
	p.lastIn = t
	p.in.push(pkt{buf: b, n: int32(n), in: int16(port), t: t, valid: valid, reef: reef})
	s.nin++
	s.touch(port)
	s.inq |= 1 << (uint(port) & 63)
	// A frame behind others on its line is no earlier than the line's head, so the
	// cached minima only ever move down to t.
	s.nx.work = min(s.nx.work, t)
	s.nx.deadline = min(s.nx.deadline, t)
}

// NextDeadline is the earliest time at which Poll may return a frame or the switch's
// state changes; units.Never when idle.
func (s *Switch) NextDeadline() units.Time {
	return max(s.nextTimes().deadline, s.now)
}

// Poll returns the next frame due at or before now, in order of Due across ports (a
// port's pause frames before its data at equal times). Drivers call it until it
// returns false. A late Poll returns the same frames with the same Due times as an
// on-time one: every time is computed from the schedule, never from now.
func (s *Switch) Poll(now units.Time) (Out, bool) {
	s.release()
	s.advance(now)
	x := s.nextTimes()
	if x.out < 0 || x.due > s.now {
		return Out{}, false
	}
	return s.take(x.out, x.ctl), true
}

// PollPort returns port's next frame that has left the switch by now (departed: its
// serialisation ended, or a pause frame was sent), however far its Due lies ahead:
// the frames a link will deliver, as soon as the link has them. A backend that hands
// a port's frames to another event loop uses it to look ahead by the link's delay
// (the sim's partitions exchange their cut links' frames so); Poll no longer returns
// the frames it took. Times are those Poll would give.
func (s *Switch) PollPort(now units.Time, port int) (Out, bool) {
	s.release()
	s.advance(now)
	if port < 0 || port >= len(s.ports) {
		return Out{}, false
	}
	due, ctl := s.ports[port].eg.nextOut()
	if due == units.Never {
		return Out{}, false
	}
	return s.take(port, ctl), true
}

// take removes the head of port's delay line (or its pause frames', when ctl) and
// lends it to the caller until the next call.
func (s *Switch) take(port int, ctl bool) Out {
	e := &s.ports[port].eg
	var p pkt
	if ctl {
		p = e.ctl.pop()
	} else {
		p = e.q.pop()
		e.ndep--
		if l := max(s.now, s.wall) - p.due; l > 0 {
			histOf(&e.late).Add(l)
		} else {
			e.late0++ // on time (Add counts a negative as 0)
		}
		switch {
		case p.hop != 0:
			e.setQLen(s.frame(p.buf, p.n), &p)
		case p.reef != 0 && s.intMd == intMPD:
			s.stampMPD(&p)
		}
	}
	s.nx.ok = false
	s.touch(port)
	s.lent, s.lentN = p.buf, p.n
	s.lentIP, s.lentReef = !ctl, p.reef
	return Out{Port: port, Frame: s.frame(p.buf, p.n), Due: p.due, Reef: int(p.reef)}
}

// SetWall tells the switch that the frames its next Polls return are released to the
// wire at wall, which may be later than the now they are polled at: a driver that runs
// the switch in event time behind the real clock (a shard's fabric) sets it, so that a
// port's lateness is wall − Due, as when the switch is polled at the real time itself.
// Nothing else depends on it.
func (s *Switch) SetWall(wall units.Time) { s.wall = wall }

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
	s.nx.ok = false
	s.touch(port)
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
	s.nx.ok = false
	s.dirty = ^uint64(0) // frames dropped here release PFC holds on other ports
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
			p.drop(DropPortDown)
			s.unhold(int(d.in), units.Bytes(d.n), s.now)
			s.pool.put(d.buf)
		}
		if e.ndep == e.q.len() {
			s.queued &^= 1 << (uint(port) & 63)
		}
		for p.in.len() > 0 {
			d := p.in.pop()
			s.nin--
			p.drop(DropPortDown)
			s.pool.put(d.buf)
		}
		s.inq &^= 1 << (uint(port) & 63)
		p.pfc.reset()
	}
	for i := range s.ports {
		s.upv[i] = s.ports[i].up
	}
	s.router.setUp(s.upv)
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
			TxPackets: e.txPackets, TxBytes: e.txBytes, Waited: e.waited,
			Drops:     p.drops,
			ECNMarks:  e.marks,
			PauseTime: e.pauseTime(s.now), PausesRx: p.pausesRx, PausesTx: p.pfc.sent,
			Idle:       e.idleTime(s.now),
			QueueBytes: e.qbytes, MaxQueueBytes: e.maxQ,
			HeldBytes: p.pfc.held,
		})
		st := &dst[len(dst)-1]
		st.Lateness, st.Skew = e.lateness()
	}
	return dst
}

// Sample is what a time-series sample reads of one egress port: its queue now and
// the cumulative counters of PortStats it follows.
type Sample struct {
	Depth
	TxBytes, TxPackets uint64
	// Drops is PortStats.Dropped(), Marks PortStats.ECNMarks.
	Drops, Marks uint64
	Waited       units.Time
}

// AppendSamples advances the switch to now and appends every port's Sample to dst
// (indexed by port): Depths and the counters of AppendStats in one pass, without the
// rest of PortStats, for a driver that samples often.
func (s *Switch) AppendSamples(now units.Time, dst []Sample) []Sample {
	s.release()
	s.advance(now)
	for i := range s.ports {
		p := &s.ports[i]
		e := &p.eg
		dst = append(dst, Sample{Depth: Depth{Backlog: e.qbytes, Delay: e.queueDelay(s.now)},
			TxBytes: e.txBytes, TxPackets: e.txPackets, Drops: p.dropped, Marks: e.marks, Waited: e.waited})
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
