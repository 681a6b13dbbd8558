package fabric

import (
	"fmt"

	"reef/hostd"
	"reef/switchd"
	"reef/units"
)

// Fabric is a set of nodes wired on one Engine; see the package doc.
type Fabric struct {
	eng   Engine
	nodes []*Node
	ext   []peer // external port → the node port it is
	// out is the frame a switch's Poll returned for an external port, waiting for the
	// caller of Poll; ok when there is one.
	out   switchd.Out
	outOK bool
	// wall is the time of the last Poll: the real time the frames it fires are
	// released at, for the switches' lateness (switchd.Switch.SetWall). 0 in the sim.
	wall  units.Time
	hops  uint64 // frames delivered node to node
	spins uint64 // wake-ups that found nothing to do at an unchanged deadline
	// egress, when set, sees every frame a switch sends to another node.
	egress Egress
}

// Egress sees a frame switch node n sends on port to another node of the fabric, before
// the peer gets it (the sim counts the paths flows take with it). reef is the offset of
// its reef header as the switch parsed it (0: not a reef packet; see switchd.Out.Reef).
// frame is valid only during the call.
type Egress func(n *Node, port int, frame []byte, reef int)

// SetEgress makes e see every frame a switch sends to another node (nil: none).
func (f *Fabric) SetEgress(e Egress) { f.egress = e }

// New returns an empty fabric.
func New() *Fabric { return &Fabric{} }

// Engine is the fabric's event engine: a backend schedules its own events on it (the
// sim's sampler and timeline) beside the nodes'.
func (f *Fabric) Engine() *Engine { return &f.eng }

// Node is one switch or host of a fabric.
type Node struct {
	f     *Fabric
	sw    *switchd.Switch
	h     *hostd.Host
	peers []peer
	slot  Slot
	last  units.Time
	spin  int
	taps  []Tap // per port; nil until a tap is set
	idx   int   // position in the fabric's nodes
	tag   int
}

// Index is the node's position among the fabric's nodes, in the order they were added.
func (n *Node) Index() int { return n.idx }

// Tag is a number the backend keeps with the node (the sim: where the node's ports
// start in its table of ports); 0 until SetTag.
func (n *Node) Tag() int { return n.tag }

// SetTag sets Tag.
func (n *Node) SetTag(t int) { n.tag = t }

// Fabric is the fabric the node is in.
func (n *Node) Fabric() *Fabric { return n.f }

// Tap sees every frame that crosses one port of a node: sent on it (out) or delivered
// to it (in), at the frame's Due. frame is valid only during the call.
type Tap func(at units.Time, out bool, frame []byte)

// SetTap makes t see the frames crossing port of n (nil removes it). Captures use it:
// the sim's, and a shard's of its in-memory links.
func (n *Node) SetTap(port int, t Tap) error {
	if port < 0 || port >= len(n.peers) {
		return fmt.Errorf("fabric: %s has no port %d (it has %d)", n.Name(), port, len(n.peers))
	}
	if n.taps == nil {
		n.taps = make([]Tap, len(n.peers))
	}
	n.taps[port] = t
	return nil
}

// NumPorts is the node's number of ports (1 for a host).
func (n *Node) NumPorts() int { return len(n.peers) }

// tap shows a frame crossing port to its tap, if any.
func (n *Node) tap(port int, at units.Time, out bool, frame []byte) {
	if n.taps != nil && n.taps[port] != nil {
		n.taps[port](at, out, frame)
	}
}

// peer is where a port's frames go: another node's port, an external port of the
// fabric (ext ≥ 0), a cut link to another partition of a Group (cut), or nowhere (n
// and cut nil, ext < 0: the frame leaves the lab).
type peer struct {
	n    *Node
	port int
	ext  int
	cut  *cutLink
}

// AddSwitch adds sw, all of its ports unwired. The fabric's switches share one frame
// pool where their buffers' sizes allow (switchd.Switch.SharePool): one goroutine
// drives them all, and the frames they hold at once are fewer than the sum of each
// switch's peak. sw must hold no frame yet.
func (f *Fabric) AddSwitch(sw *switchd.Switch) *Node {
	for _, n := range f.nodes {
		if n.sw != nil && sw.SharePool(n.sw) {
			break
		}
	}
	return f.add(&Node{sw: sw, peers: make([]peer, sw.NumPorts())})
}

// AddHost adds h, its one port unwired.
func (f *Fabric) AddHost(h *hostd.Host) *Node {
	return f.add(&Node{h: h, peers: make([]peer, 1)})
}

func (f *Fabric) add(n *Node) *Node {
	n.f, n.idx = f, len(f.nodes)
	n.slot.H = n
	for i := range n.peers {
		n.peers[i].ext = -1
	}
	f.nodes = append(f.nodes, n)
	return n
}

// Link wires port ap of a and port bp of b to each other, in memory.
func (f *Fabric) Link(a *Node, ap int, b *Node, bp int) error {
	if err := a.checkPort(ap); err != nil {
		return err
	}
	if err := b.checkPort(bp); err != nil {
		return err
	}
	a.peers[ap] = peer{n: b, port: bp, ext: -1}
	b.peers[bp] = peer{n: a, port: ap, ext: -1}
	return nil
}

// External makes port of switch n an external port of the fabric and returns its
// index: the frames n sends on it come out of Poll with Out.Port set to that index, and
// Receive takes the frames that arrive on it.
func (f *Fabric) External(n *Node, port int) (int, error) {
	if n.sw == nil {
		return 0, fmt.Errorf("fabric: host %s: external host ports are not supported", n.Name())
	}
	if err := n.checkPort(port); err != nil {
		return 0, err
	}
	i := len(f.ext)
	n.peers[port] = peer{ext: i}
	f.ext = append(f.ext, peer{n: n, port: port, ext: i})
	return i, nil
}

func (n *Node) checkPort(p int) error {
	if p < 0 || p >= len(n.peers) {
		return fmt.Errorf("fabric: %s has no port %d (it has %d)", n.Name(), p, len(n.peers))
	}
	if n.peers[p].n != nil || n.peers[p].ext >= 0 || n.peers[p].cut != nil {
		return fmt.Errorf("fabric: %s port %d is wired twice", n.Name(), p)
	}
	return nil
}

// Start arms every node at its first deadline. Call it once, after wiring.
func (f *Fabric) Start() {
	for _, n := range f.nodes {
		n.Rearm()
	}
}

// Run fires every event up to until (virtual time: the sim). A fabric with external
// ports is driven by Poll instead; Run drops what it would have sent on them.
func (f *Fabric) Run(until units.Time) uint64 {
	fired := f.eng.Run(until)
	f.outOK = false
	return fired
}

// Now is the time the engine has reached.
func (f *Fabric) Now() units.Time { return f.eng.Now() }

// Hops is the number of frames delivered from one node to the next so far, in memory
// (packet-hops), and Spins the wake-ups that found nothing to do.
func (f *Fabric) Hops() uint64  { return f.hops }
func (f *Fabric) Spins() uint64 { return f.spins }

// Receive hands the fabric a frame that arrived on external port ext at at (its
// computed arrival: it may be earlier than times already reached). The fabric copies
// it. A frame for a port the fabric does not have is ignored.
func (f *Fabric) Receive(at units.Time, ext int, frame []byte) {
	if ext < 0 || ext >= len(f.ext) {
		return
	}
	p := f.ext[ext]
	p.n.tap(p.port, at, false, frame)
	p.n.sw.Receive(at, p.port, frame)
	p.n.Rearm()
}

// NextDeadline is the earliest time Poll has work (units.Never: idle).
func (f *Fabric) NextDeadline() units.Time {
	if f.outOK {
		return f.eng.Now()
	}
	return f.eng.Next()
}

// Poll fires the fabric's events due at or before now, each at its own time, until a
// frame leaves on an external port, and returns it (Port: the external port; Frame
// valid until the next call on the fabric). It returns false when nothing more is due
// by now.
func (f *Fabric) Poll(now units.Time) (switchd.Out, bool) {
	f.wall = now
	for !f.outOK && f.eng.Step(now) {
	}
	if !f.outOK {
		return switchd.Out{}, false
	}
	f.outOK = false
	return f.out, true
}

// Name is the node's switch or host name.
func (n *Node) Name() string {
	if n.sw != nil {
		return n.sw.Name()
	}
	return n.h.Config().Name
}

// Switch is the node's switch (nil for a host); Host its host (nil for a switch).
func (n *Node) Switch() *switchd.Switch { return n.sw }
func (n *Node) Host() *hostd.Host       { return n.h }

// Fire polls the node and hands every frame due to its peer at its Due. A frame for an
// external port stops it: the node fires again at now once Poll's caller has taken it.
//
// A switch-to-switch frame is handed over at its Due, so a switch fires twice per frame:
// when the frame reaches its pipeline and when it is due at the next switch. Handing it
// over as soon as it is queued instead (its Due is then known where the schedule alone
// decides it: no PFC, no HPCC INT, no rate or port change), the next switch holding it
// until its Due and the departure processed lazily, was measured (2026-11-29): events
// per packet-hop 1.905 → 1.239, instructions 11% fewer on the k = 4 permutation, CPU
// time 2-10% less. Not kept: frames then reach a switch before the events of their
// instant rather than among them, which reorders ties between nodes at one instant and
// moved 7 of the 46 sim summaries (oscar-convergence's goodputs by 0.5%), for a gain
// far short of the several-fold one the sim's speed goal asks.
func (n *Node) Fire(now units.Time) {
	sent := false
	if n.sw != nil {
		n.sw.SetWall(n.f.wall)
		for {
			out, ok := n.sw.Poll(now)
			if !ok {
				break
			}
			sent = true
			if n.deliver(out.Port, out.Due, out.Frame, out.Reef) {
				n.f.eng.Set(&n.slot, now)
				n.last, n.spin = now, 0
				return
			}
			// A switch's deadline is exact and no later than its next frame's Due, so
			// past now the next Poll would find nothing: skip it. (What it would have
			// done, scheduling a queue's head, the next call does in time order.)
			if n.sw.NextDeadline() > now {
				break
			}
		}
	} else {
		for {
			out, ok := n.h.Poll(now)
			if !ok {
				break
			}
			sent = true
			n.deliver(0, out.Due, out.Frame, 0)
		}
	}
	// A node whose deadline stays at now without producing anything would spin; the
	// cores promise progress, so count it and move on by a nanosecond.
	if !sent && n.last == now {
		n.spin++
	} else {
		n.spin = 0
	}
	n.last = now
	n.Rearm()
	if n.spin > 16 && n.slot.Pending() && n.slot.At() <= now {
		n.f.spins++
		n.f.eng.Set(&n.slot, now+1)
	}
}

// deliver hands a frame n sent on port to the peer at due (reef: see Egress); it
// reports whether the frame went to an external port (and waits in f.out for Poll's
// caller).
func (n *Node) deliver(port int, due units.Time, frame []byte, reef int) bool {
	p := n.peers[port]
	n.tap(port, due, true, frame)
	if p.n == nil {
		if p.cut != nil {
			// The group's exchange takes a cut port's frames a window before they are
			// due; a frame due here has broken that invariant.
			panic(fmt.Sprintf("fabric: %s port %d: a frame due at %v was not taken by the group's exchange", n.Name(), port, due))
		}
		if p.ext >= 0 {
			n.f.out, n.f.outOK = switchd.Out{Port: p.ext, Frame: frame, Due: due, Reef: reef}, true
			return true
		}
		return false // an unwired port: the frame leaves the lab
	}
	p.n.f.arrive(n, port, frame, reef)
	p.n.tap(p.port, due, false, frame)
	switch {
	case p.n.sw != nil && n.sw != nil:
		p.n.sw.Forward(due, p.port, n.sw) // frame is n.sw's last Poll: handed over, not copied
	case p.n.sw != nil:
		// A host's frame: the switch takes its storage and the host gets a buffer back.
		if spare := p.n.sw.ReceiveBuffer(due, p.port, frame, 0); spare != nil {
			n.h.SwapFrame(spare)
		}
	default:
		p.n.h.Receive(due, p.port, frame)
	}
	if !p.n.armedBy(due) {
		p.n.Rearm()
	}
	return false
}

// arrive counts a frame that port of from hands to another node of f, and shows it to
// f's Egress if from is a switch.
func (f *Fabric) arrive(from *Node, port int, frame []byte, reef int) {
	f.hops++
	if from.sw != nil && f.egress != nil {
		f.egress(from, port, frame, reef)
	}
}

// armedBy reports whether n has a wake-up pending at or before t. Frames received at t
// cannot make its deadline earlier than t, so such a wake-up stands (it re-arms when it
// fires) and only a node without one needs Rearm.
func (n *Node) armedBy(t units.Time) bool { return n.slot.Pending() && n.slot.At() <= t }

// Rearm keeps the node's one pending event at its NextDeadline; call it after changing
// the node from outside the fabric (a rate change, a sample that read its queues). A
// deadline that moved later leaves the earlier event in place: an early Poll is
// harmless.
func (n *Node) Rearm() {
	var d units.Time
	if n.sw != nil {
		d = n.sw.NextDeadline()
	} else {
		d = n.h.NextDeadline()
	}
	if d == units.Never {
		return
	}
	if d < n.f.eng.now {
		d = n.f.eng.now
	}
	if !n.slot.Pending() || d < n.slot.At() {
		n.f.eng.Set(&n.slot, d)
	}
}
