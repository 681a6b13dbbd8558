package dashboard

import (
	"reflect"
	"testing"

	"reef/emulator/plan"
	"reef/switchd"
)

// Tiers of the shipped shapes come out of the BFS from the hosts: hosts at the bottom,
// then ToRs/leaves, aggregation/spines, cores.
func TestLayoutTiers(t *testing.T) {
	cases := []struct {
		topo string
		// want counts nodes per layer, bottom (hosts) first
		want []int
	}{
		{"dumbbell", []int{16, 2}},
		{"leaf-spine", nil}, // checked generically below
		{"fat-tree-k4", []int{16, 8, 8, 4}},
	}
	for _, c := range cases {
		t.Run(c.topo, func(t *testing.T) {
			p := loadPlan(t, c.topo)
			nodes := Layout(p)
			if len(nodes) != len(p.Hosts)+len(p.Switches) {
				t.Fatalf("%d nodes, want %d", len(nodes), len(p.Hosts)+len(p.Switches))
			}
			var counts []int
			for _, n := range nodes {
				for len(counts) <= n.Layer {
					counts = append(counts, 0)
				}
				counts[n.Layer]++
				if n.Host != (n.Layer == 0) {
					t.Errorf("%s: host %v but layer %d", n.Name, n.Host, n.Layer)
				}
				if n.X <= 0 || n.X >= 1 || n.Y <= 0 || n.Y >= 1 {
					t.Errorf("%s at (%.2f, %.2f): outside the unit square", n.Name, n.X, n.Y)
				}
			}
			if c.want != nil && !reflect.DeepEqual(counts, c.want) {
				t.Errorf("nodes per layer %v, want %v", counts, c.want)
			}
			// higher tiers are drawn higher up
			for _, a := range nodes {
				for _, b := range nodes {
					if a.Layer > b.Layer && a.Y >= b.Y {
						t.Fatalf("%s (layer %d, y %.2f) not above %s (layer %d, y %.2f)", a.Name, a.Layer, a.Y, b.Name, b.Layer, b.Y)
					}
				}
			}
			if again := Layout(p); !reflect.DeepEqual(again, nodes) {
				t.Error("layout is not deterministic")
			}
		})
	}
}

// In the fat tree every host sits under its ToR: hosts keep the order of their ToRs.
func TestLayoutHostsUnderTheirSwitch(t *testing.T) {
	p := loadPlan(t, "fat-tree-k4")
	nodes := Layout(p)
	x := map[string]float64{}
	for _, n := range nodes {
		x[n.Name] = n.X
	}
	type hx struct{ host, tor float64 }
	var hs []hx
	for _, h := range p.Hosts {
		l := p.Links[h.Link]
		tor := l.A.Node
		if tor == h.Config.Name {
			tor = l.B.Node
		}
		hs = append(hs, hx{x[h.Config.Name], x[tor]})
	}
	for _, a := range hs {
		for _, b := range hs {
			if a.tor < b.tor && a.host >= b.host {
				t.Fatalf("host order does not follow ToR order: %+v vs %+v", a, b)
			}
		}
	}
}

// A switch no host reaches is drawn on top, not dropped.
func TestLayoutUnreachableSwitch(t *testing.T) {
	p := loadPlan(t, "dumbbell")
	p.Switches = append(p.Switches, plan.Switch{Config: switchd.Config{Name: "lonely"}})
	nodes := Layout(p)
	last := nodes[len(nodes)-1]
	if last.Name != "lonely" || last.Layer != 2 {
		t.Fatalf("lonely switch: %+v, want layer 2", last)
	}
}
