package switchd

import (
	"encoding/binary"
	"sort"

	"reef/wire"
)

// router resolves a destination to a route's group of ports: pins first, then the
// longest matching prefix. Lookup is a memo probe, then one map probe per distinct
// prefix length, longest first; nothing allocates.
//
// Routes with the same ports share one group: a fabric's routes are per host (a k = 16
// fat tree gives each switch 1,024), but their port sets are few (a ToR's: one per
// host port, and the uplinks), so the groups stay in cache however many hosts there are.
type router struct {
	lens   []int            // distinct prefix lengths, longest first
	tables []map[uint32]int // per entry of lens: masked address → group index
	groups []group          // one per distinct port list, in order of first use
	pins   []pin            // in configuration order; the first match wins
	// memo remembers recent lookups, direct-mapped by the address's low bits: a switch
	// sees few destinations at a time, and routes never change (only their up ports).
	memo [64]struct {
		addr  uint32
		route int32 // group index + 1; 0: empty
	}
}

// group is one route's ECMP group: all its ports, and those currently up.
type group struct {
	ports []int
	up    []int
}

type pin struct {
	src, dst [4]byte
	srcPort  uint16
	port     int
}

func newPin(p Pin) pin {
	return pin{src: p.Src.As4(), dst: p.Dst.As4(), srcPort: p.SrcPort, port: p.Port}
}

// matches reports whether the pin applies to key (its port's state aside).
func (p *pin) matches(key *wire.FlowKey) bool {
	return p.dst == key.Dst && p.src == key.Src && (p.srcPort == 0 || p.srcPort == key.SrcPort)
}

// Matches reports whether the pin applies to a packet with 5-tuple key, as the
// pipeline decides it (the pinned port must also be up).
func (p Pin) Matches(key *wire.FlowKey) bool {
	q := newPin(p)
	return q.matches(key)
}

func newRouter(cfg *Config) *router {
	r := &router{}
	byLen := map[int]map[uint32]int{}
	byPorts := map[string]int{} // port list → group index
	var key []byte
	for _, rt := range cfg.Routes {
		l := rt.Prefix.Bits()
		if byLen[l] == nil {
			byLen[l] = map[uint32]int{}
			r.lens = append(r.lens, l)
		}
		key = key[:0]
		for _, p := range rt.Ports {
			key = binary.AppendUvarint(key, uint64(p))
		}
		gi, ok := byPorts[string(key)] // no allocation for the lookup
		if !ok {
			gi = len(r.groups)
			byPorts[string(key)] = gi
			g := group{ports: append([]int(nil), rt.Ports...)}
			g.up = append(make([]int, 0, len(g.ports)), g.ports...)
			r.groups = append(r.groups, g)
		}
		a := rt.Prefix.Masked().Addr().As4()
		byLen[l][binary.BigEndian.Uint32(a[:])] = gi
	}
	sort.Sort(sort.Reverse(sort.IntSlice(r.lens)))
	for _, l := range r.lens {
		r.tables = append(r.tables, byLen[l])
	}
	for _, p := range cfg.Pins {
		r.pins = append(r.pins, newPin(p))
	}
	return r
}

func mask(l int) uint32 {
	if l == 0 {
		return 0
	}
	return ^uint32(0) << (32 - l)
}

// lookup returns the group of the longest-prefix route covering dst, or -1.
func (r *router) lookup(dst [4]byte) int {
	a := binary.BigEndian.Uint32(dst[:])
	m := &r.memo[a%uint32(len(r.memo))]
	if m.route != 0 && m.addr == a {
		return int(m.route) - 1
	}
	g := r.match(a)
	m.addr, m.route = a, int32(g+1)
	return g
}

// match is the longest-prefix lookup itself.
func (r *router) match(a uint32) int {
	for i, l := range r.lens {
		if g, ok := r.tables[i][a&mask(l)]; ok {
			return g
		}
	}
	return -1
}

// setUp recomputes every group's up ports from up (indexed by port).
func (r *router) setUp(up []bool) {
	for i := range r.groups {
		g := &r.groups[i]
		g.up = g.up[:0]
		for _, p := range g.ports {
			if up[p] {
				g.up = append(g.up, p)
			}
		}
	}
}
