package plan

import (
	"fmt"
	"sort"
	"strings"
)

// Partition is an assignment of a plan's switches to shards: the switches of one shard
// run in one daemon, and the links between them are carried in memory.
type Partition struct {
	// Shards lists each shard's switches (indices into Plan.Switches), in plan order.
	Shards [][]int `json:"shards"`
	// Of is the shard of each switch.
	Of []int `json:"of"`
	// Cut is the number of switch-to-switch links between two shards (they stay veths).
	Cut int `json:"cut"`
}

// ShardName is the name of shard i of a lab: "shard1", "shard2", …
func ShardName(i int) string { return fmt.Sprintf("shard%d", i+1) }

// Partition splits the plan's switches into at most n shards of balanced load (a
// switch weighs one per port: its frames to forward), keeping linked switches together
// so that few links are cut. Switches are first grouped into units: the connected
// groups left when the top tier (the switches farthest from any host) is set aside;
// on a fat-tree a unit is a pod's edge and aggregation switches, on a leaf-spine a
// leaf, and where every switch has hosts (a chain) each switch. The units, in
// breadth-first order, are cut into n runs of about equal weight; then each top-tier
// switch joins the shard it has the most links into among those with room. It is
// deterministic. n ≤ 1 (or a lab of one switch) gives one shard of every switch; n at
// least the number of switches, one shard per switch.
func (p *Plan) Partition(n int) Partition {
	ns := len(p.Switches)
	part := Partition{Of: make([]int, ns)}
	if ns == 0 {
		return part
	}
	n = max(1, min(n, ns))
	if n == ns {
		for i := range ns {
			part.Of[i] = i
			part.Shards = append(part.Shards, []int{i})
		}
	}
	idx := map[string]int{}
	for i, s := range p.Switches {
		idx[s.Config.Name] = i
	}
	adj := make([][]int, ns) // switch neighbours, one entry per link
	level := make([]int, ns) // hops to the nearest host (0: unknown yet)
	var queue []int
	for _, l := range p.Links {
		switch {
		case l.A.IsHost && !l.B.IsHost:
			queue = append(queue, idx[l.B.Node])
		case l.B.IsHost && !l.A.IsHost:
			queue = append(queue, idx[l.A.Node])
		case !l.A.IsHost && !l.B.IsHost:
			a, b := idx[l.A.Node], idx[l.B.Node]
			adj[a] = append(adj[a], b)
			adj[b] = append(adj[b], a)
		}
	}
	for _, i := range queue {
		level[i] = 1
	}
	for len(queue) > 0 { // breadth first from the edge
		i := queue[0]
		queue = queue[1:]
		for _, j := range adj[i] {
			if level[j] == 0 {
				level[j] = level[i] + 1
				queue = append(queue, j)
			}
		}
	}
	if n == ns {
		part.Cut = cutLinks(adj, part.Of)
		return part
	}
	top := maxOf(level)
	weight := make([]int, ns)
	total := 0
	for i, s := range p.Switches {
		weight[i] = len(s.Config.Ports)
		total += weight[i]
	}
	// Units: connected components below the top tier (each top switch its own when
	// every switch is in the top tier, as on a dumbbell).
	unit := make([]int, ns)
	for i := range unit {
		unit[i] = -1
	}
	var units [][]int
	for i := range ns {
		if unit[i] >= 0 || (level[i] == top && top > 1) {
			continue
		}
		u := len(units)
		units = append(units, nil)
		stack := []int{i}
		unit[i] = u
		for len(stack) > 0 {
			j := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			units[u] = append(units[u], j)
			if top == 1 {
				continue // every switch is at the edge: one unit each
			}
			for _, k := range adj[j] {
				if unit[k] < 0 && level[k] < top {
					unit[k] = u
					stack = append(stack, k)
				}
			}
		}
	}
	uw := make([]int, len(units))
	for u, m := range units {
		for _, i := range m {
			uw[u] += weight[i]
		}
	}
	// Units in breadth-first order over the links between them (through the top tier
	// too), cut into n runs of about equal weight: neighbouring units share a shard.
	uadj := make([]map[int]bool, len(units))
	for i := range ns {
		if unit[i] < 0 {
			continue
		}
		for _, j := range adj[i] {
			for _, k := range append([]int{j}, adj[j]...) { // a neighbour, or one hop past the top tier
				if unit[k] >= 0 && unit[k] != unit[i] && (k == j || unit[j] < 0) {
					if uadj[unit[i]] == nil {
						uadj[unit[i]] = map[int]bool{}
					}
					uadj[unit[i]][unit[k]] = true
				}
			}
		}
	}
	var order []int
	seen := make([]bool, len(units))
	for u0 := range units {
		if seen[u0] {
			continue
		}
		seen[u0] = true
		queue := []int{u0}
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			order = append(order, u)
			next := make([]int, 0, len(uadj[u]))
			for v := range uadj[u] {
				if !seen[v] {
					next = append(next, v)
				}
			}
			sort.Ints(next)
			for _, v := range next {
				seen[v] = true
				queue = append(queue, v)
			}
		}
	}
	unitTotal := 0
	for _, w := range uw {
		unitTotal += w
	}
	load := make([]int, n)
	for i := range part.Of {
		part.Of[i] = -1
	}
	acc := 0
	for _, u := range order {
		// The shard whose share of the run this unit's middle falls in.
		k := min(n-1, (2*acc+uw[u])*n/(2*max(unitTotal, 1)))
		for _, i := range units[u] {
			part.Of[i] = k
		}
		load[k] += uw[u]
		acc += uw[u]
	}
	// The top tier: each switch to the shard it has the most links into, among the
	// shards that stay within an even share (plus one switch); the lightest otherwise.
	even := (total+n-1)/n + maxOf(weight)
	for i := range ns {
		if part.Of[i] >= 0 {
			continue
		}
		best := argmin(load)
		for k := range n {
			if load[k]+weight[i] <= even && count(adj[i], part.Of, k) > count(adj[i], part.Of, best) {
				best = k
			}
		}
		part.Of[i] = best
		load[best] += weight[i]
	}
	// Renumber shards by their first switch, drop empty ones.
	renum := map[int]int{}
	for i := range ns {
		if _, ok := renum[part.Of[i]]; !ok {
			renum[part.Of[i]] = len(renum)
			part.Shards = append(part.Shards, nil)
		}
		k := renum[part.Of[i]]
		part.Of[i] = k
		part.Shards[k] = append(part.Shards[k], i)
	}
	part.Cut = cutLinks(adj, part.Of)
	return part
}

// cutLinks counts the links between switches of different shards.
func cutLinks(adj [][]int, of []int) int {
	n := 0
	for i := range adj {
		for _, j := range adj[i] {
			if j > i && of[i] != of[j] {
				n++
			}
		}
	}
	return n
}

// String shows each shard's switches and the cut: "shard1: tor1 agg1 … | shard2: … (4 links cut)".
func (part Partition) String(p *Plan) string {
	var b strings.Builder
	for k, sh := range part.Shards {
		if k > 0 {
			b.WriteString(" | ")
		}
		names := make([]string, len(sh))
		for j, i := range sh {
			names[j] = p.Switches[i].Config.Name
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "%s: %s", ShardName(k), strings.Join(names, " "))
	}
	fmt.Fprintf(&b, " (%d links cut)", part.Cut)
	return b.String()
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func argmin(xs []int) int {
	k := 0
	for i, x := range xs {
		if x < xs[k] {
			k = i
		}
	}
	return k
}

// count is how many of nbrs are in shard k.
func count(nbrs, of []int, k int) int {
	c := 0
	for _, j := range nbrs {
		if of[j] == k {
			c++
		}
	}
	return c
}
