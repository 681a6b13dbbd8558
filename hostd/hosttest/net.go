// Package hosttest is a small virtual-time network for testing hosts (hostd.Host)
// against the real switch pipeline: hosts hang off one switchd.Switch, run in a
// fabric.Fabric whose ports are external, by links of fixed delay. The switch queues,
// drops at its buffer, ECN-marks and stamps the Poseidon MPD field exactly as in the
// sim; the host links carry test hooks that drop or delay individual frames (loss, and
// reordering as under packet spraying).
//
// It is deterministic: events are ordered by (time, insertion order) and randomness
// comes from the seeded source in Config.
package hosttest

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"

	"reef/fabric"
	"reef/hostd"
	"reef/switchd"
	"reef/units"
	"reef/wire"
)

// Port describes the switch's egress port towards one host.
type Port struct {
	// Rate is the port's rate; Buffer its drop-tail capacity in bytes (0: unlimited);
	// ECNK the backlog above which ECT packets are marked CE (0: never).
	Rate   units.Rate
	Buffer units.Bytes
	ECNK   units.Bytes
}

// Config describes the network.
type Config struct {
	// Delay is the one-way propagation delay of every host link (each direction).
	Delay units.Time
	// MPDUnit is the unit of the MPD field the switch stamps (0: INT off).
	MPDUnit units.Time
	// Drop, when set, is asked about every frame arriving at the switch; true drops it.
	Drop func(now units.Time, v wire.View) bool
	// Jitter, when set, returns extra delay for a frame leaving the switch (reordering).
	Jitter func(now units.Time, v wire.View) units.Time
	// Seed seeds Rand and the switch.
	Seed uint64
}

// unlimited stands for a buffer of "no limit": far more than any test puts in flight.
const unlimited = units.Gigabyte

// Net is the network: hosts, one switch, the host links' events.
type Net struct {
	cfg   Config
	Rand  *rand.Rand
	now   units.Time
	hosts []*hostd.Host
	ports []switchd.PortConfig
	sw    *switchd.Switch
	fab   *fabric.Fabric
	q     events
	seq   uint64
	// Drops counts frames dropped by the Drop hook.
	Drops uint64
	// OnEgress, when set, sees every frame a host puts on the wire (at its Due).
	OnEgress func(host int, out hostd.Out)
}

// gateway is the MAC of every switch port, the hosts' gateway.
var gateway = [6]byte{2, 0, 0, 0, 1, 0}

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
	return &Net{cfg: cfg, Rand: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
}

// Addr is the address of host i.
func Addr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}) }

// AddHost adds a host with the given NIC rate and the switch port towards it, and
// returns its index. The host's address is Addr(index). Hosts are added before the
// first Run, which builds the switch.
func (n *Net) AddHost(rate units.Rate, port Port, opts hostd.Options) (int, *hostd.Host, error) {
	if n.sw != nil {
		return 0, nil, errors.New("hosttest: AddHost after Run: the switch is built")
	}
	i := len(n.hosts)
	if opts.MPDUnit == 0 {
		opts.MPDUnit = n.cfg.MPDUnit
	}
	mac := [6]byte{2, 0, 0, 0, 0, byte(i + 1)}
	h, err := hostd.New(hostd.Config{Name: fmt.Sprintf("h%d", i+1), Addr: Addr(i), Rate: rate, MTU: 1500,
		MAC: mac, GatewayMAC: gateway}, opts)
	if err != nil {
		return 0, nil, err
	}
	pc := switchd.PortConfig{Name: fmt.Sprintf("p%d", i+1), MAC: gateway, PeerMAC: mac, Peer: fmt.Sprintf("h%d:eth0", i+1),
		PeerIsHost: true, Rate: port.Rate, Delay: n.cfg.Delay, Buffer: port.Buffer, MTU: 1500}
	if pc.Buffer == 0 {
		pc.Buffer = unlimited
	}
	if port.ECNK > 0 {
		pc.ECN = &switchd.ECNConfig{Mode: switchd.ECNStep, K: port.ECNK}
	}
	n.hosts = append(n.hosts, h)
	n.ports = append(n.ports, pc)
	return i, h, nil
}

// build makes the switch, one port per host (port i faces host i), and its fabric.
func (n *Net) build() error {
	cfg := switchd.Config{Name: "s1", Ports: n.ports, Seed: n.cfg.Seed, ECN: switchd.ECNConfig{Mode: switchd.ECNOff},
		INT: switchd.INTConfig{Mode: switchd.INTOff}, LB: switchd.LBConfig{Mode: switchd.LBECMP}, Buffers: 64}
	if n.cfg.MPDUnit > 0 {
		cfg.INT = switchd.INTConfig{Mode: switchd.INTMPD, MPDUnit: n.cfg.MPDUnit}
	}
	for i := range n.hosts {
		cfg.Routes = append(cfg.Routes, switchd.Route{Prefix: netip.PrefixFrom(Addr(i), 32), Ports: []int{i}})
	}
	sw, err := switchd.New(cfg)
	if err != nil {
		return fmt.Errorf("hosttest: %w", err)
	}
	f := fabric.New()
	node := f.AddSwitch(sw)
	for i := range n.hosts {
		if _, err := f.External(node, i); err != nil { // external port i is switch port i
			return fmt.Errorf("hosttest: %w", err)
		}
	}
	f.Start()
	n.sw, n.fab = sw, f
	return nil
}

// Host returns host i.
func (n *Net) Host(i int) *hostd.Host { return n.hosts[i] }

// Now is the virtual time.
func (n *Net) Now() units.Time { return n.now }

// Switch is the switch (nil before the first Run).
func (n *Net) Switch() *switchd.Switch { return n.sw }

// port is the switch's counters of the port towards host i (zero before the first Run).
func (n *Net) port(i int) switchd.PortStats {
	if n.sw == nil {
		return switchd.PortStats{}
	}
	return n.sw.Stats()[i]
}

// MaxBacklog is the largest backlog the switch port towards host i held.
func (n *Net) MaxBacklog(i int) units.Bytes { return n.port(i).MaxQueueBytes }

// Overflow is the number of frames the switch dropped for a full egress buffer.
func (n *Net) Overflow() uint64 {
	var d uint64
	for i := range n.hosts {
		d += n.port(i).Drops[switchd.DropTail]
	}
	return d
}

// Marked is the number of frames the switch marked CE.
func (n *Net) Marked() uint64 {
	var m uint64
	for i := range n.hosts {
		m += n.port(i).ECNMarks
	}
	return m
}

func (n *Net) push(at units.Time, host int, toSw bool, frame []byte) {
	n.seq++
	heap.Push(&n.q, event{at: at, seq: n.seq, host: host, toSw: toSw, frame: frame})
}

// Run advances virtual time until until (inclusive) or until nothing is left to do. It
// returns an error if a host's NextDeadline stops making progress.
func (n *Net) Run(until units.Time) error {
	if n.sw == nil {
		if err := n.build(); err != nil {
			return err
		}
	}
	for {
		t := n.fab.NextDeadline()
		if len(n.q) > 0 {
			t = min(t, n.q[0].at)
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
		n.pollSwitch(t) // the switch's own events at t first: departures free its queue
		for len(n.q) > 0 && n.q[0].at <= t {
			ev := heap.Pop(&n.q).(event)
			if ev.toSw {
				n.atSwitch(ev.host, ev.frame)
			} else {
				n.hosts[ev.host].Receive(t, 0, ev.frame)
			}
		}
		n.pollSwitch(t)
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

// pollSwitch takes every frame the switch sends by t and puts it on its host link.
func (n *Net) pollSwitch(t units.Time) {
	for {
		out, ok := n.fab.Poll(t)
		if !ok {
			return
		}
		at := out.Due
		if n.cfg.Jitter != nil {
			if v, ok := wire.Classify(out.Frame); ok {
				at += n.cfg.Jitter(t, v)
			}
		}
		n.push(at, out.Port, false, append([]byte(nil), out.Frame...))
	}
}

// atSwitch hands the switch a frame from host i that reaches it now, unless the Drop
// hook takes it.
func (n *Net) atSwitch(i int, frame []byte) {
	if n.cfg.Drop != nil {
		if v, ok := wire.Classify(frame); ok && n.cfg.Drop(n.now, v) {
			n.Drops++
			return
		}
	}
	n.fab.Receive(n.now, i, frame)
}
