package plan

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"strconv"

	"reef/emulator/topo"
	"reef/hostd"
	"reef/switchd"
	"reef/units"
)

// HostIface is every host's one interface.
const HostIface = "eth0"

// DefaultINTHeadroom is the bytes Build adds to the MTU of switch-to-switch ports by
// default, so a switch that pushes telemetry in front of a full-size frame (a future INT
// encapsulation, or kernel traffic tagged by another tool) never exceeds the link's MTU.
// reef's own INT fills hop slots the sender reserved (see package wire), so reef packets
// never grow; hosts keep the topology's MTU, so the headroom is never used by them. It
// is what is left, up to its size, between the link's MTU and the most a switch port
// takes (switchd.MaxMTU, and a full frame within the port's buffer): a 9000-byte jumbo
// link gets 216 bytes of it, a 9216-byte one none (PortMTU).
const DefaultINTHeadroom = 256

// PortMTU is the MTU of a switch-to-switch port on a link of MTU mtu and the given
// buffer: mtu plus as much of headroom as switchd accepts (at most switchd.MaxMTU, and a
// full frame of it within the buffer), never below mtu.
func PortMTU(mtu, headroom int, buffer units.Bytes) int {
	most := switchd.MaxMTU
	if b := buffer - units.Bytes(switchd.MaxFrame(0)); b < units.Bytes(most) {
		most = int(b)
	}
	return max(mtu, min(mtu+headroom, most))
}

// AddrPrefix is the range host addresses come from (RFC 2544's benchmarking range,
// DESIGN principle 7).
var AddrPrefix = netip.MustParsePrefix("198.18.0.0/15")

// MaxHosts is the number of host addresses in AddrPrefix (its first and last address,
// the network and broadcast addresses of the /15, are not used). The loader checks
// topologies against it (topo.MaxHosts), naming the file, line and field.
const MaxHosts = topo.MaxHosts

// Options tune Build.
type Options struct {
	// Seed derives every switch's Seed (switch seeds differ from one another and are
	// stable for a given Seed and switch name).
	Seed uint64
	// INTHeadroom is added to the MTU of switch-to-switch ports. 0 means
	// DefaultINTHeadroom; a negative value means none.
	INTHeadroom int
}

// HostAddr returns the address of the i-th host (1-based, in topology node order):
// 198.18.0.0 + i, so h1 is 198.18.0.1 and host 256 is 198.18.1.0.
func HostAddr(i int) (netip.Addr, error) {
	if i < 1 || i > MaxHosts {
		return netip.Addr{}, fmt.Errorf("plan: host index %d outside [1, %d]", i, MaxHosts)
	}
	b := AddrPrefix.Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) + uint32(i)
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b), nil
}

// MAC returns the MAC of port port (0 for a host's eth0, n for a switch's pn) of the
// node with index node (its position in the topology's Nodes): locally administered,
// unicast, two bytes from a hash of the lab name, then the node index and the port, so
// MACs never collide inside a lab (the loader keeps node indices below topo.MaxNodes and
// ports at most topo.MaxSwitchPorts) and rarely across labs.
func MAC(lab string, node, port int) [6]byte {
	h := fnv.New32a()
	h.Write([]byte(lab))
	s := h.Sum32()
	return [6]byte{
		byte(s>>24)&0xfc | 0x02, // locally administered, unicast
		byte(s >> 16),
		byte(node >> 8), byte(node),
		byte(port >> 8), byte(port),
	}
}

// SwitchSeed derives a switch's seed from the plan seed and the switch's name.
func SwitchSeed(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return splitmix64(seed ^ h.Sum64())
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Build plans topology t: it validates t, then assigns host addresses and MACs, numbers
// switch ports p1…pN in link order, fills every port's link parameters (a host-facing
// port gets IngressDelay = the link's delay, since the host shapes only its rate;
// switch-to-switch ports get MTU + INTHeadroom), installs a /32 route per host on every
// switch whose port set is every next hop on a shortest path (hop count: an ECMP group),
// and copies each switch's features and a derived seed.
func Build(t *topo.Topology, opts Options) (*Plan, error) {
	if t == nil {
		return nil, fmt.Errorf("plan: nil topology")
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	headroom := opts.INTHeadroom
	switch {
	case headroom == 0:
		headroom = DefaultINTHeadroom
	case headroom < 0:
		headroom = 0
	}
	p := &Plan{Lab: t.Name, Seed: opts.Seed}

	// Index nodes.
	type ref struct {
		host bool
		idx  int // into p.Hosts or p.Switches
		node int // into t.Nodes
	}
	refs := make(map[string]ref, len(t.Nodes))
	for i, n := range t.Nodes {
		if n.Kind == topo.Host {
			addr, err := HostAddr(len(p.Hosts) + 1)
			if err != nil {
				return nil, err
			}
			refs[n.Name] = ref{host: true, idx: len(p.Hosts), node: i}
			p.Hosts = append(p.Hosts, Host{Link: -1, Config: hostd.Config{
				Name: n.Name, Iface: HostIface, MAC: MAC(t.Name, i, 0), Addr: addr}})
		} else {
			refs[n.Name] = ref{idx: len(p.Switches), node: i}
			p.Switches = append(p.Switches, Switch{Config: switchd.Config{
				Name: n.Name,
				LB:   n.Features.LB, ECN: n.Features.ECN, INT: n.Features.INT,
				Seed: SwitchSeed(opts.Seed, n.Name),
			}})
		}
	}

	// Ports and links. nbr[s] lists, per port of switch s, the switch at the far end
	// (-1 for a host).
	nbr := make([][]int, len(p.Switches))
	attach := make([]struct{ sw, port int }, len(p.Hosts))
	endpoint := func(name string) Endpoint {
		r := refs[name]
		if r.host {
			return Endpoint{Node: name, Iface: HostIface, MAC: p.Hosts[r.idx].Config.MAC, IsHost: true, Port: -1}
		}
		c := &p.Switches[r.idx].Config
		port := len(c.Ports)
		c.Ports = append(c.Ports, switchd.PortConfig{Name: "p" + strconv.Itoa(port+1), MAC: MAC(t.Name, r.node, port+1)})
		nbr[r.idx] = append(nbr[r.idx], -1)
		return Endpoint{Node: name, Iface: c.Ports[port].Name, MAC: c.Ports[port].MAC, Port: port}
	}
	for li, l := range t.Links {
		a, b := endpoint(l.A), endpoint(l.B)
		p.Links = append(p.Links, Link{A: a, B: b, Rate: l.Rate, Delay: l.Delay, Buffer: l.Buffer, MTU: l.MTU})
		for _, e := range [][2]Endpoint{{a, b}, {b, a}} {
			me, peer := e[0], e[1]
			r := refs[me.Node]
			if me.IsHost {
				h := &p.Hosts[r.idx]
				h.Link = li
				h.Config.GatewayMAC = peer.MAC
				h.Config.Rate = l.Rate
				h.Config.MTU = l.MTU
				attach[r.idx].sw, attach[r.idx].port = refs[peer.Node].idx, peer.Port
				continue
			}
			pc := &p.Switches[r.idx].Config.Ports[me.Port]
			pc.PeerMAC = peer.MAC
			pc.Peer = peer.Node + ":" + peer.Iface
			pc.PeerIsHost = peer.IsHost
			pc.Rate, pc.Delay, pc.Buffer, pc.MTU = l.Rate, l.Delay, l.Buffer, l.MTU
			pc.PFC = l.PFC
			if peer.IsHost {
				pc.IngressDelay = l.Delay
			} else {
				pc.MTU = PortMTU(l.MTU, headroom, l.Buffer)
				nbr[r.idx][me.Port] = refs[peer.Node].idx
			}
		}
	}

	// Routes: one BFS over switches per switch that has hosts.
	dist := make([][]int, len(p.Switches))
	for hi := range p.Hosts {
		t := attach[hi].sw
		if dist[t] == nil {
			dist[t] = bfs(nbr, t)
		}
	}
	// A switch's routes to the hosts behind one remote switch share their ports, so
	// each switch keeps one copy of each distinct port list (on a fat tree k = 16 its
	// 1,024 routes have a few dozen; the copies took 64 MB).
	var ports []int
	var key []byte
	for s := range p.Switches {
		c := &p.Switches[s].Config
		c.Routes = make([]switchd.Route, 0, len(p.Hosts))
		lists := map[string][]int{}
		for hi, h := range p.Hosts {
			at := attach[hi]
			ports = ports[:0]
			if at.sw == s {
				ports = append(ports, at.port)
			} else {
				d := dist[at.sw]
				if d[s] < 0 {
					return nil, fmt.Errorf("plan: switch %s cannot reach host %s", c.Name, h.Config.Name)
				}
				for port, n := range nbr[s] {
					if n >= 0 && d[n] == d[s]-1 {
						ports = append(ports, port)
					}
				}
			}
			key = key[:0]
			for _, port := range ports {
				key = binary.AppendUvarint(key, uint64(port))
			}
			list, ok := lists[string(key)] // no allocation for the lookup
			if !ok {
				list = slices.Clip(slices.Clone(ports)) // routes share it: an append must copy
				lists[string(key)] = list
			}
			c.Routes = append(c.Routes, switchd.Route{Prefix: netip.PrefixFrom(h.Config.Addr, 32), Ports: list})
		}
	}
	return p, nil
}

// bfs returns every switch's hop distance from switch src over switch-to-switch links
// (-1 when unreachable).
func bfs(nbr [][]int, src int) []int {
	d := make([]int, len(nbr))
	for i := range d {
		d[i] = -1
	}
	d[src] = 0
	queue := []int{src}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, n := range nbr[s] {
			if n >= 0 && d[n] < 0 {
				d[n] = d[s] + 1
				queue = append(queue, n)
			}
		}
	}
	return d
}
