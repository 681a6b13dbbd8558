// Package hosttest is a tiny virtual-time network for testing hosts (hostd.Host) before
// the sim backend exists: hosts hang off one output-queued switch by links of fixed
// delay; each switch egress port serialises at its rate into a drop-tail buffer, may
// ECN-mark above a threshold and stamps the Poseidon MPD field. Hooks drop or delay
// individual frames (loss, reordering as under packet spraying).
//
// It is deterministic: events are ordered by (time, insertion order) and randomness
// comes from the seeded source in Config.
package hosttest

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"net/netip"

	"reef/hostd"
	"reef/units"
	"reef/wire"
)

// Port describes the switch's egress port towards one host.
type Port struct {
	// Rate is the port's rate; Buffer its drop-tail capacity in bytes (0: unlimited);
	// ECNK the backlog above which ECT packets are marked CE (0: never). NoMPD makes
	// the port a non-INT one even when Config.MPDUnit is set (a brownfield path).
	Rate   units.Rate
	Buffer units.Bytes
	ECNK   units.Bytes
	NoMPD  bool
}

// Config describes the network.
type Config struct {
	// Delay is the one-way propagation delay of every host link (each direction).
	Delay units.Time
	// MPDUnit is the unit of the MPD field switches stamp (0: no MPD stamping).
	MPDUnit units.Time
	// Drop, when set, is asked about every frame arriving at the switch; true drops it.
	Drop func(now units.Time, v wire.View) bool
	// Jitter, when set, returns extra delay for a frame leaving the switch (reordering).
	Jitter func(now units.Time, v wire.View) units.Time
	// Seed seeds Rand.
	Seed uint64
}

// Net is the network: hosts, one switch, an event queue.
type Net struct {
	cfg   Config
	Rand  *rand.Rand
	now   units.Time
	hosts []*hostd.Host
	ports []*egress
	byIP  map[netip.Addr]int
	q     events
	seq   uint64
	// Drops counts frames dropped by the Drop hook, Overflow those dropped by a full
	// buffer, Marked those marked CE.
	Drops, Overflow, Marked uint64
	// OnEgress, when set, sees every frame a host puts on the wire (at its Due).
	OnEgress func(host int, out hostd.Out)
}

type egress struct {
	port       Port
	lastDepart units.Time
	maxBacklog units.Bytes
}

type event struct {
	at    units.Time
	seq   uint64
	host  int // destination host (toHost) or source host (toSwitch)
	toSw  bool
	frame []byte
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if e[i].at != e[j].at {
		return e[i].at < e[j].at
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// New builds an empty network.
func New(cfg Config) *Net {
	return &Net{cfg: cfg, Rand: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), byIP: map[netip.Addr]int{}}
}

// Addr is the address of host i.
func Addr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}) }

// AddHost adds a host with the given NIC rate and egress port towards it, and returns
// its index. The host's address is Addr(index).
func (n *Net) AddHost(rate units.Rate, port Port, opts hostd.Options) (int, *hostd.Host, error) {
	i := len(n.hosts)
	if opts.MPDUnit == 0 {
		opts.MPDUnit = n.cfg.MPDUnit
	}
	h, err := hostd.New(hostd.Config{Name: fmt.Sprintf("h%d", i+1), Addr: Addr(i), Rate: rate, MTU: 1500,
		MAC: [6]byte{2, 0, 0, 0, 0, byte(i + 1)}, GatewayMAC: [6]byte{2, 0, 0, 0, 1, 0}}, opts)
	if err != nil {
		return 0, nil, err
	}
	n.hosts = append(n.hosts, h)
	n.ports = append(n.ports, &egress{port: port})
	n.byIP[Addr(i)] = i
	return i, h, nil
}

// Host returns host i.
func (n *Net) Host(i int) *hostd.Host { return n.hosts[i] }

// Now is the virtual time.
func (n *Net) Now() units.Time { return n.now }

// MaxBacklog is the largest backlog port i held.
func (n *Net) MaxBacklog(i int) units.Bytes { return n.ports[i].maxBacklog }

func (n *Net) push(at units.Time, host int, toSw bool, frame []byte) {
	n.seq++
	heap.Push(&n.q, event{at: at, seq: n.seq, host: host, toSw: toSw, frame: frame})
}

// Run advances virtual time until until (inclusive) or until nothing is left to do. It
// returns an error if a host's NextDeadline stops making progress.
func (n *Net) Run(until units.Time) error {
	for {
		t := units.Never
		if len(n.q) > 0 {
			t = n.q[0].at
		}
		for _, h := range n.hosts {
			t = min(t, h.NextDeadline())
		}
		if t == units.Never || t > until {
			n.now = until
			return nil
		}
		if t < n.now {
			return fmt.Errorf("hosttest: deadline %v is in the past (now %v)", t, n.now)
		}
		n.now = t
		for len(n.q) > 0 && n.q[0].at <= t {
			ev := heap.Pop(&n.q).(event)
			if ev.toSw {
				n.atSwitch(ev.frame)
			} else {
				n.hosts[ev.host].Receive(t, 0, ev.frame)
			}
		}
		for i, h := range n.hosts {
			spins := 0
			for h.NextDeadline() <= t {
				out, ok := h.Poll(t)
				if !ok {
					if spins++; spins > 3 {
						return fmt.Errorf("hosttest: host %d: NextDeadline %v ≤ now %v but Poll returns nothing", i, h.NextDeadline(), t)
					}
					continue
				}
				spins = 0
				if n.OnEgress != nil {
					n.OnEgress(i, out)
				}
				n.push(out.Due+n.cfg.Delay, i, true, append([]byte(nil), out.Frame...))
			}
		}
	}
}

// atSwitch forwards a frame that arrived at the switch at n.now.
func (n *Net) atSwitch(frame []byte) {
	v, ok := wire.Classify(frame)
	if !ok {
		return
	}
	dst, ok := n.byIP[v.Dst()]
	if !ok {
		return
	}
	if n.cfg.Drop != nil && n.cfg.Drop(n.now, v) {
		n.Drops++
		return
	}
	p := n.ports[dst]
	var backlog units.Bytes
	if p.lastDepart > n.now {
		backlog = p.port.Rate.BytesIn(p.lastDepart - n.now)
	}
	if p.port.Buffer > 0 && backlog+units.Bytes(len(frame)) > p.port.Buffer {
		n.Overflow++
		return
	}
	if p.port.ECNK > 0 && backlog > p.port.ECNK && v.SetCE() {
		n.Marked++
	}
	start := max(n.now, p.lastDepart)
	depart := start + p.port.Rate.TxTime(units.Bytes(len(frame)))
	p.lastDepart = depart
	p.maxBacklog = max(p.maxBacklog, backlog+units.Bytes(len(frame)))
	v.DecTTL()
	if v.IsReef() && n.cfg.MPDUnit > 0 && !p.port.NoMPD {
		v.SetFlags(wire.FlagMPDSeen) // as switchd's mpd mode does
		q := uint16(min((start-n.now)/n.cfg.MPDUnit, 0xffff))
		if q > v.MPD() {
			v.SetMPD(q)
		}
	}
	at := depart + n.cfg.Delay
	if n.cfg.Jitter != nil {
		at += n.cfg.Jitter(n.now, v)
	}
	n.push(at, dst, false, frame)
}
