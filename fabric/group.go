package fabric

import (
	"fmt"

	"reef/units"
)

// Group runs several fabrics, the partitions of one lab, in lockstep windows of virtual
// time, each window's share of every partition run by an executor that may use several
// goroutines (Each). It is the sim's way onto several cores for one large run. A group
// of one fabric runs it as Fabric.Run would, with the global events of its Control
// engine (the sim runs every lab so, split or not).
//
// Partitions meet only at cut links: switch-to-switch links whose ends are in two
// partitions. A frame leaves its switch (its serialisation ends) a link delay before
// it arrives, so a partition can run up to that delay ahead of the others (the
// lookahead of conservative parallel simulation). Every window, each partition fires
// its events up to the window's end; then each takes from its switches the frames that
// left on cut links (switchd.Switch.PollPort) and queues them on the link; the far
// partition delivers them at their Due in a later window. A window is one nanosecond
// shorter than the shortest cut link's delay, so every frame taken arrives after the
// window it left in.
//
// Global events (the sim's samples, snapshots and timeline) go on the Control engine.
// They fire between windows, on the goroutine that called Run, so they may read and
// change any node (and Rearm it): one at time t before every partition event at t, a
// Late one after them all, as they would if every node were on the control engine and
// armed after them.
//
// The group starts no goroutines: it hands each phase to an executor (Each), which may
// run the partitions' shares at once. What a run computes never depends on the
// executor or on how its goroutines interleave: each partition fires its own events in
// its engine's order, and the frames a link carries reach the far end in the order
// they left, at their Due. A Group is not safe for concurrent use; Run is its one
// entry point.
type Group struct {
	parts  []*Fabric
	out    [][]*cutLink // per partition: the cut links its switches send on
	in     [][]*cutLink // per partition: the cut links it receives from
	ctl    Engine
	window units.Time // the shortest delay of a cut link
	done   units.Time // every event at or before done has fired (-1: none yet)
	each   Each
	fired  []uint64 // per partition, by the last phase
}

// Each is an executor: it calls fn(i) for every i in [0, n) and returns when every call
// has returned. It may make the calls at once, from several goroutines
// (internal/parallel.Each does).
type Each func(n int, fn func(i int))

// NewGroup returns a group of the given partitions whose phases each runs (nil: one
// partition after another).
func NewGroup(parts []*Fabric, each Each) *Group {
	if each == nil {
		each = func(n int, fn func(int)) {
			for i := range n {
				fn(i)
			}
		}
	}
	return &Group{parts: parts, out: make([][]*cutLink, len(parts)), in: make([][]*cutLink, len(parts)),
		window: units.Never, done: -1, each: each, fired: make([]uint64, len(parts))}
}

// Control is the engine of the group's global events; see the type's doc.
func (g *Group) Control() *Engine { return &g.ctl }

// Cut wires port ap of switch node a and port bp of switch node b, nodes of two
// different partitions of g, to each other. The shortest delay of a cut port
// (switchd.Switch.PortDelay) bounds the windows: it must be at least 2 ns.
func (g *Group) Cut(a *Node, ap int, b *Node, bp int) error {
	pa, pb := g.partOf(a.f), g.partOf(b.f)
	switch {
	case pa < 0 || pb < 0:
		return fmt.Errorf("fabric: cut link %s–%s: a node is in no partition of the group", a.Name(), b.Name())
	case pa == pb:
		return fmt.Errorf("fabric: cut link %s–%s: both ends are in partition %d; use Link", a.Name(), b.Name(), pa)
	case a.sw == nil || b.sw == nil:
		return fmt.Errorf("fabric: cut link %s–%s: only switch-to-switch links can be cut", a.Name(), b.Name())
	}
	if err := a.checkPort(ap); err != nil {
		return err
	}
	if err := b.checkPort(bp); err != nil {
		return err
	}
	delay := min(a.sw.PortDelay(ap), b.sw.PortDelay(bp))
	if delay < 2 {
		return fmt.Errorf("fabric: cut link %s:%d–%s:%d: delay %v; a cut link needs at least 2ns", a.Name(), ap, b.Name(), bp, delay)
	}
	ab := &cutLink{from: a, port: ap, to: b, toPort: bp}
	ba := &cutLink{from: b, port: bp, to: a, toPort: ap}
	for _, l := range []*cutLink{ab, ba} {
		l.slot.H = l
		l.from.peers[l.port] = peer{ext: -1, cut: l}
	}
	g.out[pa], g.in[pb] = append(g.out[pa], ab), append(g.in[pb], ab)
	g.out[pb], g.in[pa] = append(g.out[pb], ba), append(g.in[pa], ba)
	g.window = min(g.window, delay)
	return nil
}

func (g *Group) partOf(f *Fabric) int {
	for i, p := range g.parts {
		if p == f {
			return i
		}
	}
	return -1
}

// Start arms every node of every partition; call it once, after wiring.
func (g *Group) Start() {
	for _, f := range g.parts {
		f.Start()
	}
}

// Now is the time every partition has reached.
func (g *Group) Now() units.Time { return max(g.done, 0) }

// Hops is the number of frames delivered node to node in all partitions (cut links
// included).
func (g *Group) Hops() uint64 {
	var n uint64
	for _, f := range g.parts {
		n += f.hops
	}
	return n
}

// Run fires every event at or before until, in windows, and returns how many it fired.
func (g *Group) Run(until units.Time) uint64 {
	if until <= g.done {
		return 0
	}
	step := g.window - 1 // see the type's doc
	if g.window == units.Never {
		step = until - g.done // nothing is cut: one window
	}
	var fired uint64
	for g.done < until {
		// Control events that are not Late fire before every partition event at their
		// time, as in one engine, where they are scheduled before the nodes are armed.
		for t, late := g.ctl.NextLate(); t == g.done+1 && !late; t, late = g.ctl.NextLate() {
			g.ctl.Step(t)
			fired++
		}
		end := min(g.done+step, until)
		if t, late := g.ctl.NextLate(); t <= end {
			end = t // a Late event fires after the window that ends at its time
			if !late {
				end = t - 1 // the others before the window that starts there
			}
		}
		g.each(len(g.parts), func(i int) { g.fired[i] = g.parts[i].runWindow(g.in[i], end) })
		g.each(len(g.parts), func(i int) { g.parts[i].exchange(g.out[i], end) })
		for _, n := range g.fired {
			fired += n
		}
		g.done = end
		fired += g.ctl.Run(end)
	}
	return fired
}

// runWindow arms the links that bring f frames and fires f's events up to end.
func (f *Fabric) runWindow(in []*cutLink, end units.Time) uint64 {
	for _, l := range in {
		if l.head < len(l.q) && !l.slot.Pending() {
			f.eng.Set(&l.slot, l.q[l.head].due)
		}
	}
	return f.Run(end)
}

// exchange takes the frames f's switches sent on cut links by end and queues them on
// the links.
func (f *Fabric) exchange(out []*cutLink, end units.Time) {
	for _, l := range out {
		sw := l.from.sw
		for {
			o, ok := sw.PollPort(end, l.port)
			if !ok {
				break
			}
			var spare []byte
			if k := len(l.free); k > 0 {
				spare, l.free = l.free[k-1], l.free[:k-1]
			}
			// The link takes the frame's storage and the switch gets a free buffer
			// back: a frame crosses a cut link without a copy.
			l.q = append(l.q, cutFrame{due: o.Due, frame: sw.TakeLent(spare), reef: o.Reef})
		}
	}
}

// cutLink is one direction of a cut link. The sending partition appends to q (in its
// exchange phase); the receiving one delivers from q[head:] and returns buffers to
// free (in its run phase). The phases never overlap, so neither needs a lock. The
// sending node's tap is called in the receiving partition: taps on nodes of
// different partitions must not share state.
type cutLink struct {
	from   *Node
	port   int
	to     *Node
	toPort int
	q      []cutFrame
	head   int
	free   [][]byte
	slot   Slot // in the receiving partition's engine, at q[head].due
}

type cutFrame struct {
	due   units.Time
	frame []byte
	reef  int
}

// Fire delivers the frames due by now to the receiving switch, in the order they left.
func (l *cutLink) Fire(now units.Time) {
	to := l.to
	for l.head < len(l.q) && l.q[l.head].due <= now {
		c := l.q[l.head]
		l.q[l.head] = cutFrame{}
		l.head++
		// The frame is seen at its Due, as on a link in one fabric: by the sending
		// node's tap, the receiving partition's Egress and the receiving node's tap.
		l.from.tap(l.port, c.due, true, c.frame)
		to.f.arrive(l.from, l.port, c.frame, c.reef)
		to.tap(l.toPort, c.due, false, c.frame)
		// The switch keeps c.frame's storage when it can and gives one of its own back;
		// the sending switch's parse comes with the frame, as over a link in one fabric.
		if spare := to.sw.ReceiveBuffer(c.due, l.toPort, c.frame, c.reef); spare != nil {
			l.free = append(l.free, spare)
		} else {
			l.free = append(l.free, c.frame)
		}
	}
	if l.head == len(l.q) {
		l.q, l.head = l.q[:0], 0
	} else {
		to.f.eng.Set(&l.slot, l.q[l.head].due)
	}
	if !to.armedBy(now) {
		to.Rearm()
	}
}
