package plan

import (
	"fmt"
	"net/netip"

	"reef/switchd"
)

// spread follows flow f from its source to its destination through the switches'
// routes and returns the share of its traffic on each directed link it crosses (index
// 2·link + 0 forward, 1 backward), those links in the order the walk first met them,
// and how it placed the flow where a switch had a choice of ports (see Flow).
func (g *graph) spread(f *Flow) (map[int]float64, []int, Placement, error) {
	hs, dst, err := g.ends(f.Src, f.Dst)
	if err != nil {
		return nil, nil, 0, err
	}
	w := map[int]float64{}
	var order []int
	add := func(h LinkHop, x float64) {
		d := 2 * h.Link
		if !h.Forward {
			d++
		}
		if _, seen := w[d]; !seen {
			order = append(order, d)
		}
		w[d] += x
	}
	first := g.hop(hs.Link, f.Src)
	add(first, 1)
	var placed Placement
	reached := false
	onPath := map[int]bool{}
	var walk func(sw int, x float64)
	walk = func(sw int, x float64) {
		if onPath[sw] {
			return // a routing loop (only in a hand-edited plan)
		}
		onPath[sw] = true
		defer delete(onPath, sw)
		ports, fracs, how := g.choose(sw, f, dst)
		placed |= how
		for k, port := range ports {
			if fracs[k] <= 0 || port < 0 || port >= len(g.portLink[sw]) || g.portLink[sw][port] < 0 {
				continue
			}
			h := g.hop(g.portLink[sw][port], g.p.Switches[sw].Config.Name)
			add(h, x*fracs[k])
			if h.To == f.Dst {
				reached = true
			} else if next, ok := g.switches[h.To]; ok {
				walk(next, x*fracs[k])
			}
		}
	}
	if s, ok := g.switches[first.To]; ok {
		walk(s, 1)
	}
	if !reached {
		return nil, nil, 0, fmt.Errorf("plan: no route from %s to %s", f.Src, f.Dst)
	}
	return w, order, placed, nil
}

// choose returns the ports of switch sw that flow f's traffic to dst leaves by, the
// share of it on each, and how the choice was made (0 when there was none): a pin
// matching the flow's 5-tuple, else the route's one port, else by the switch's load
// balancing as Flow documents.
func (g *graph) choose(sw int, f *Flow, dst netip.Addr) ([]int, []float64, Placement) {
	one := []float64{1}
	cfg := &g.p.Switches[sw].Config
	if f.Key != nil {
		for _, pn := range cfg.Pins {
			if pn.Matches(f.Key) {
				return []int{pn.Port}, one, 0
			}
		}
	}
	ports := g.route(sw, dst)
	if len(ports) <= 1 {
		return ports, one, 0
	}
	even := make([]float64, len(ports))
	for k := range even {
		even[k] = 1 / float64(len(ports))
	}
	ecmp := cfg.LB.Mode != switchd.LBSpray && cfg.LB.Mode != switchd.LBAdaptive && cfg.LB.Mode != switchd.LBFlowlet
	switch {
	case f.Spray || cfg.LB.Mode == switchd.LBSpray:
		return ports, even, PlacedEven
	case ecmp && f.Key != nil:
		return []int{switchd.ECMPPort(cfg.Seed, f.Key, ports)}, one, PlacedHash
	}
	if f.Egress != nil {
		fracs := make([]float64, len(ports))
		var total float64
		for k, port := range ports {
			fracs[k] = float64(f.Egress[SwitchPort{cfg.Name, port}])
			total += fracs[k]
		}
		if total > 0 {
			for k := range fracs {
				fracs[k] /= total
			}
			return ports, fracs, PlacedMeasured
		}
	}
	if ecmp {
		return ports[:1], one, PlacedFirst
	}
	return ports, even, PlacedEven
}
