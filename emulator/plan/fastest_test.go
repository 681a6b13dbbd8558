package plan

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"reef/emulator/topo"
	"reef/units"
)

// TestFastestOneWayMatchesPaths: the switch-by-switch least one-way time BaseRTT uses
// must equal the least OneWay over every path Paths enumerates, for every host pair of
// every shipped topology (links of unequal delays and rates included), and a route that
// loops must fall back to the paths' answer. FirstPath must be the first of the paths.
func TestFastestOneWayMatchesPaths(t *testing.T) {
	files, err := filepath.Glob("../../topologies/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("topologies: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p := loadPlan(t, filepath.Base(f))
			// Unequal links, so that the least path is not every path.
			for i := range p.Links {
				p.Links[i].Delay += units.Time(i%7) * units.Microsecond
				p.Links[i].Rate += units.Rate(i%5) * units.Mbps
			}
			checkFastest(t, p)
		})
	}
	t.Run("loop", func(t *testing.T) {
		p := loadPlan(t, "dumbbell.yaml")
		// s2 also sends its own hosts' traffic back to s1, which sends it on to s2
		// again: a loop beside the real route.
		s2, _ := p.SwitchByName("s2")
		back := portToward(t, p, "s2", "s1")
		for i, r := range s2.Config.Routes {
			if len(r.Ports) == 1 && r.Ports[0] != back {
				s2.Config.Routes[i].Ports = append(r.Ports, back)
			}
		}
		p.g = nil // the routes changed
		checkFastest(t, p)
	})
}

func portToward(t *testing.T, p *Plan, from, to string) int {
	t.Helper()
	for _, l := range p.Links {
		switch {
		case l.A.Node == from && l.B.Node == to:
			return l.A.Port
		case l.B.Node == from && l.A.Node == to:
			return l.B.Port
		}
	}
	t.Fatalf("no link %s–%s", from, to)
	return -1
}

func checkFastest(t *testing.T, p *Plan) {
	t.Helper()
	g := graphOf(p)
	pairs := 0
	for _, a := range p.Hosts {
		for _, b := range p.Hosts {
			if a.Config.Name == b.Config.Name {
				continue
			}
			paths, perr := g.paths(a.Config.Name, b.Config.Name, true)
			first, ferr := p.FirstPath(a.Config.Name, b.Config.Name)
			if (ferr != nil) != (perr != nil) || perr == nil && !reflect.DeepEqual(first, paths[0]) {
				t.Fatalf("%s→%s: first path %v (err %v), want the first of the paths %v (err %v)",
					a.Config.Name, b.Config.Name, first, ferr, paths, perr)
			}
			for _, size := range []units.Bytes{64, 1500} {
				got, err := g.fastestOneWay(a.Config.Name, b.Config.Name, size)
				if (err != nil) != (perr != nil) {
					t.Fatalf("%s→%s: fastest err %v, paths err %v", a.Config.Name, b.Config.Name, err, perr)
				}
				if perr != nil {
					continue
				}
				if want := p.fastest(paths, size); got != want {
					t.Errorf("%s→%s (%v): fastest %v, least over %d paths %v", a.Config.Name, b.Config.Name, size, got, len(paths), want)
				}
				pairs++
			}
		}
	}
	if pairs == 0 {
		t.Fatal("no host pair compared")
	}
}

// BenchmarkFirstPath compares, on the k = 16 fat tree, walking every path between two
// hosts in different pods (Paths: 64 of them) with stopping at the first (FirstPath),
// which is all the sim's and the analysis's per-flow path lengths and bottlenecks read.
func BenchmarkFirstPath(b *testing.B) {
	doc, err := os.ReadFile("../../topologies/fat-tree-k4.yaml")
	if err != nil {
		b.Fatal(err)
	}
	k16 := strings.Replace(string(doc), "\n  k: 4\n", "\n  k: 16\n", 1)
	tp, err := topo.Parse("fat-tree-k16.yaml", []byte(k16))
	if err != nil {
		b.Fatal(err)
	}
	p, err := Build(tp, Options{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	n := len(p.Hosts)
	for _, c := range []struct {
		name string
		walk func(src, dst string) error
	}{
		{"Paths", func(src, dst string) error { _, err := p.Paths(src, dst); return err }},
		{"FirstPath", func(src, dst string) error { _, err := p.FirstPath(src, dst); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if err := c.walk(p.Hosts[i%n].Config.Name, p.Hosts[(i+n/2)%n].Config.Name); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
