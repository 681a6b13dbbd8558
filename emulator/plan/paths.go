package plan

import (
	"fmt"
	"net/netip"
	"sync"

	"reef/units"
	"reef/wire"
)

// LinkHop is one link of a path, in the direction of travel.
type LinkHop struct {
	// Link indexes Plan.Links.
	Link int `json:"link"`
	// From and To name the nodes at the start and the end of the hop.
	From string `json:"from"`
	To   string `json:"to"`
	// Forward is true when the hop goes from the link's A end to its B end.
	Forward bool `json:"forward"`
}

// AckBytes is the size of a reef ACK without SACK blocks or INT slots (Ethernet header
// included): what BaseRTT serialises on the way back.
const AckBytes = units.Bytes(wire.Overhead)

// graph indexes a plan for path walks; built per call, so a Plan stays a plain value.
type graph struct {
	p *Plan
	// size is the plan's node and link counts when the graph was built (graphOf).
	size     [3]int
	switches map[string]int
	// portLink[s][port] is the link behind port of switch s.
	portLink [][]int
	// host32[s][addr32[a]] is the ports of switch s's /32 route to address a (nil:
	// none); other routes are looked up by longest prefix. (One index of the addresses
	// for every switch: a map per switch took 33 MB on a fat tree k = 16.)
	host32 [][][]int
	addr32 map[netip.Addr]int
	hosts  map[string]int
}

// graphMu guards every Plan's cached graph (Plan.g).
var graphMu sync.Mutex

// graphOf returns p's graph, built on the first query and kept in p: a fat-tree k=16
// spent 73% of its sim run's CPU building it again for every flow's path and RTT. A copy
// of a Plan, or one whose nodes or links were added to, gets a graph of its own. The
// graph reads rates and delays from the plan at query time, so rescaling them needs
// no rebuild.
func graphOf(p *Plan) *graph {
	size := [3]int{len(p.Hosts), len(p.Switches), len(p.Links)}
	graphMu.Lock()
	defer graphMu.Unlock()
	if g := p.g; g != nil && g.p == p && g.size == size {
		return g
	}
	p.g = newGraph(p)
	p.g.size = size
	return p.g
}

func newGraph(p *Plan) *graph {
	g := &graph{p: p, switches: make(map[string]int, len(p.Switches)), portLink: make([][]int, len(p.Switches)),
		host32: make([][][]int, len(p.Switches)), addr32: make(map[netip.Addr]int, len(p.Hosts)), hosts: make(map[string]int, len(p.Hosts))}
	for i, h := range p.Hosts {
		g.hosts[h.Config.Name] = i
	}
	for _, s := range p.Switches {
		for _, r := range s.Config.Routes {
			if _, ok := g.addr32[r.Prefix.Addr()]; !ok && r.Prefix.Bits() == 32 {
				g.addr32[r.Prefix.Addr()] = len(g.addr32)
			}
		}
	}
	for i, s := range p.Switches {
		g.switches[s.Config.Name] = i
		g.host32[i] = make([][]int, len(g.addr32))
		for _, r := range s.Config.Routes {
			if r.Prefix.Bits() == 32 {
				g.host32[i][g.addr32[r.Prefix.Addr()]] = r.Ports
			}
		}
		g.portLink[i] = make([]int, len(s.Config.Ports))
		for j := range g.portLink[i] {
			g.portLink[i][j] = -1
		}
	}
	for li, l := range p.Links {
		for _, e := range []Endpoint{l.A, l.B} {
			if s, ok := g.switches[e.Node]; ok && !e.IsHost && e.Port >= 0 && e.Port < len(g.portLink[s]) {
				g.portLink[s][e.Port] = li
			}
		}
	}
	return g
}

// hop returns the hop over link li leaving node from.
func (g *graph) hop(li int, from string) LinkHop {
	l := g.p.Links[li]
	if l.A.Node == from {
		return LinkHop{Link: li, From: from, To: l.B.Node, Forward: true}
	}
	return LinkHop{Link: li, From: from, To: l.A.Node, Forward: false}
}

// route returns the ports of switch s's longest-prefix route to dst.
func (g *graph) route(s int, dst netip.Addr) []int {
	if k, ok := g.addr32[dst]; ok && g.host32[s][k] != nil {
		return g.host32[s][k]
	}
	best, bits := []int(nil), -1
	for _, r := range g.p.Switches[s].Config.Routes {
		if r.Prefix.Contains(dst) && r.Prefix.Bits() > bits {
			best, bits = r.Ports, r.Prefix.Bits()
		}
	}
	return best
}

// ends resolves a path's endpoints: host src (wired to a link) and host dst's address.
func (g *graph) ends(src, dst string) (*Host, netip.Addr, error) {
	si, ok := g.hosts[src]
	if !ok {
		return nil, netip.Addr{}, fmt.Errorf("plan: no host %q", src)
	}
	di, ok := g.hosts[dst]
	if !ok {
		return nil, netip.Addr{}, fmt.Errorf("plan: no host %q", dst)
	}
	if src == dst {
		return nil, netip.Addr{}, fmt.Errorf("plan: path from %s to itself", src)
	}
	hs := &g.p.Hosts[si]
	if hs.Link < 0 || hs.Link >= len(g.p.Links) {
		return nil, netip.Addr{}, fmt.Errorf("plan: host %s has no link", src)
	}
	return hs, g.p.Hosts[di].Config.Addr, nil
}

// paths returns every path from host src to host dst the switches' routes allow, or
// only the first of them (all false).
func (g *graph) paths(src, dst string, all bool) ([][]LinkHop, error) {
	hs, addr, err := g.ends(src, dst)
	if err != nil {
		return nil, err
	}
	first := g.hop(hs.Link, src)
	var out [][]LinkHop
	onPath := map[int]bool{}
	var walk func(sw int, prefix []LinkHop)
	walk = func(sw int, prefix []LinkHop) {
		if onPath[sw] || len(prefix) > len(g.p.Switches)+1 {
			return // a routing loop (only in a hand-edited plan)
		}
		onPath[sw] = true
		defer delete(onPath, sw)
		for _, port := range g.route(sw, addr) {
			if !all && len(out) > 0 {
				return
			}
			if port < 0 || port >= len(g.portLink[sw]) || g.portLink[sw][port] < 0 {
				continue
			}
			h := g.hop(g.portLink[sw][port], g.p.Switches[sw].Config.Name)
			path := append(prefix[:len(prefix):len(prefix)], h)
			if h.To == dst {
				out = append(out, path)
			} else if next, ok := g.switches[h.To]; ok {
				walk(next, path)
			}
		}
	}
	if s, ok := g.switches[first.To]; ok {
		walk(s, []LinkHop{first})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("plan: no route from %s to %s", src, dst)
	}
	return out, nil
}

// Paths returns every equal-cost path from host src to host dst that the switches'
// routes allow, as sequences of directed links, in a stable order (lowest ports first).
// MaxMin follows each flow through the same routes, taking at every switch the port or
// ports the flow used there (see Flow).
func (p *Plan) Paths(src, dst string) ([][]LinkHop, error) {
	return graphOf(p).paths(src, dst, true)
}

// FirstPath is the first of the paths Paths returns, found without walking the others
// (a k = 16 fat tree has 64 between pods): for what every path shares, such as its
// length in a fat tree.
func (p *Plan) FirstPath(src, dst string) ([]LinkHop, error) {
	paths, err := graphOf(p).paths(src, dst, false)
	if err != nil {
		return nil, err
	}
	return paths[0], nil
}

// BaseRTT is the round-trip time from src to dst and back on an idle network: along the
// fastest path each way, every link adds its propagation delay and the serialisation of
// the packet at the link's rate (store and forward at every hop): a packetBytes data
// packet forward and an AckBytes ACK back. Receiver turnaround is not included.
func (p *Plan) BaseRTT(src, dst string, packetBytes units.Bytes) (units.Time, error) {
	return p.BaseRTTAck(src, dst, packetBytes, AckBytes)
}

// BaseRTTAck is BaseRTT with an explicit ACK size.
func (p *Plan) BaseRTTAck(src, dst string, packetBytes, ackBytes units.Bytes) (units.Time, error) {
	g := graphOf(p)
	fwd, err := g.fastestOneWay(src, dst, packetBytes)
	if err != nil {
		return 0, err
	}
	rev, err := g.fastestOneWay(dst, src, ackBytes)
	if err != nil {
		return 0, err
	}
	return fwd + rev, nil
}

// fastestOneWay is the least time a b-byte packet takes from host src to host dst on an
// idle network, over every path Paths returns (the least OneWay). It is computed switch
// by switch, each switch's least time to dst once, instead of path by path: a k = 16 fat
// tree has 64 paths between pods, and a run's analysis asks for thousands of pairs. A
// route that loops (only in a hand-edited plan) falls back to the paths.
func (g *graph) fastestOneWay(src, dst string, b units.Bytes) (units.Time, error) {
	hs, addr, err := g.ends(src, dst)
	if err != nil {
		return 0, err
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := make([]uint8, len(g.p.Switches))
	best := make([]units.Time, len(g.p.Switches)) // switch → its least time to dst (Never: none)
	loop := false
	var from func(sw int) units.Time
	from = func(sw int) units.Time {
		switch state[sw] {
		case visiting:
			loop = true
			return units.Never
		case done:
			return best[sw]
		}
		state[sw] = visiting
		t := units.Never
		for _, port := range g.route(sw, addr) {
			if port < 0 || port >= len(g.portLink[sw]) || g.portLink[sw][port] < 0 {
				continue
			}
			li := g.portLink[sw][port]
			h := g.hop(li, g.p.Switches[sw].Config.Name)
			l := &g.p.Links[li]
			hop := l.Delay + l.Rate.TxTime(b)
			if h.To == dst {
				t = min(t, hop)
			} else if next, ok := g.switches[h.To]; ok {
				if rest := from(next); rest != units.Never {
					t = min(t, hop+rest)
				}
			}
		}
		state[sw], best[sw] = done, t
		return t
	}
	first := g.hop(hs.Link, src)
	t := units.Never
	if s, ok := g.switches[first.To]; ok {
		if rest := from(s); rest != units.Never {
			l := &g.p.Links[hs.Link]
			t = l.Delay + l.Rate.TxTime(b) + rest
		}
	}
	if loop {
		paths, err := g.paths(src, dst, true)
		if err != nil {
			return 0, err
		}
		return g.p.fastest(paths, b), nil
	}
	if t == units.Never {
		return 0, fmt.Errorf("plan: no route from %s to %s", src, dst)
	}
	return t, nil
}

// OneWay is the time a b-byte packet takes along path on an idle network.
func (p *Plan) OneWay(path []LinkHop, b units.Bytes) units.Time {
	var t units.Time
	for _, h := range path {
		l := p.Links[h.Link]
		t += l.Delay + l.Rate.TxTime(b)
	}
	return t
}

func (p *Plan) fastest(paths [][]LinkHop, b units.Bytes) units.Time {
	best := units.Never
	for _, path := range paths {
		best = min(best, p.OneWay(path, b))
	}
	return best
}
