package dashboard

import (
	"sort"

	"reef/emulator/plan"
)

// Node is one node of the drawn graph.
type Node struct {
	Name string `json:"name"`
	Host bool   `json:"host"`
	// Layer is the node's tier: 0 for hosts, then the distance from the nearest host
	// (ToRs/leaves 1, aggregation/spines 2, cores 3 in a Clos fabric).
	Layer int `json:"layer"`
	// X and Y place the node in the unit square, Y = 0 at the top (the highest tier).
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Layout places p's nodes in layers: hosts at the bottom, every switch at its hop
// distance from the nearest host above them (the role of a switch in a Clos fabric:
// ToR or leaf, aggregation or spine, core), switches no host reaches on top. Within a
// layer, ToRs keep the plan's order, hosts sit under their switch and higher tiers are
// ordered by the mean position of the nodes below them they connect to (ties: plan
// order). The result is deterministic: hosts first, then switches, in plan order.
func Layout(p *plan.Plan) []Node {
	nodes := make([]Node, 0, len(p.Hosts)+len(p.Switches))
	idx := make(map[string]int, cap(nodes))
	for _, h := range p.Hosts {
		idx[h.Config.Name] = len(nodes)
		nodes = append(nodes, Node{Name: h.Config.Name, Host: true})
	}
	for _, s := range p.Switches {
		idx[s.Config.Name] = len(nodes)
		nodes = append(nodes, Node{Name: s.Config.Name, Layer: -1})
	}
	adj := make([][]int, len(nodes))
	for _, l := range p.Links {
		a, okA := idx[l.A.Node]
		b, okB := idx[l.B.Node]
		if okA && okB && a != b {
			adj[a] = append(adj[a], b)
			adj[b] = append(adj[b], a)
		}
	}
	// multi-source BFS from every host over switches
	var queue []int
	for i := range p.Hosts {
		queue = append(queue, i)
	}
	maxLayer := 0
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, v := range adj[u] {
			if nodes[v].Layer < 0 {
				nodes[v].Layer = nodes[u].Layer + 1
				maxLayer = max(maxLayer, nodes[v].Layer)
				queue = append(queue, v)
			}
		}
	}
	for i := range nodes {
		if nodes[i].Layer < 0 {
			nodes[i].Layer = maxLayer + 1
		}
	}
	maxLayer = 0
	for _, n := range nodes {
		maxLayer = max(maxLayer, n.Layer)
	}
	layers := make([][]int, maxLayer+1)
	for i, n := range nodes {
		layers[n.Layer] = append(layers[n.Layer], i) // plan order within a layer
	}
	pos := make([]float64, len(nodes)) // rank within its layer, normalised to (0,1)
	place := func(l int) {
		for r, i := range layers[l] {
			pos[i] = (float64(r) + 0.5) / float64(len(layers[l]))
		}
	}
	// mean position of i's neighbours in layer l; ok false without any
	bary := func(i, l int) (float64, bool) {
		sum, n := 0.0, 0
		for _, v := range adj[i] {
			if nodes[v].Layer == l {
				sum += pos[v]
				n++
			}
		}
		if n == 0 {
			return 0, false
		}
		return sum / float64(n), true
	}
	sortBy := func(l, ref int) {
		keys := make(map[int]float64, len(layers[l]))
		for _, i := range layers[l] {
			if b, ok := bary(i, ref); ok {
				keys[i] = b
			} else {
				keys[i] = pos[i]
			}
		}
		sort.SliceStable(layers[l], func(a, b int) bool { return keys[layers[l][a]] < keys[layers[l][b]] })
		place(l)
	}
	for l := range layers {
		place(l)
	}
	if maxLayer >= 1 {
		sortBy(0, 1) // hosts under their switch
		for l := 2; l <= maxLayer; l++ {
			sortBy(l, l-1)
		}
	}
	for i := range nodes {
		nodes[i].X = pos[i]
		if maxLayer > 0 {
			nodes[i].Y = 0.08 + 0.84*float64(maxLayer-nodes[i].Layer)/float64(maxLayer)
		} else {
			nodes[i].Y = 0.5
		}
	}
	return nodes
}
