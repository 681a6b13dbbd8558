package plan

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"reef/emulator/topo"
	"reef/units"
)

// TestFastestOneWayMatchesPaths: the switch-by-switch least one-way time BaseRTT uses
// must equal the least OneWay over every path Paths enumerates, for every host pair of
// every shipped topology (links of unequal delays and rates included), and a route that
// loops must fall back to the paths' answer.
func TestFastestOneWayMatchesPaths(t *testing.T) {
	files, err := filepath.Glob("../../topologies/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("topologies: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			doc, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			tp, err := topo.Parse(f, doc)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Build(tp, Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			// Unequal links, so that the least path is not every path.
			for i := range p.Links {
				p.Links[i].Delay += units.Time(i%7) * units.Microsecond
				p.Links[i].Rate += units.Rate(i%5) * units.Mbps
			}
			checkFastest(t, p)
		})
	}
	t.Run("loop", func(t *testing.T) {
		p, err := Build(mustTopo(t, lineTopo), Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		// s2 also sends h2's traffic back to s1, which sends it on to s2 again: a loop
		// next to the real route.
		s2, _ := p.SwitchByName("s2")
		h2, _ := p.HostByName("h2")
		back := portToward(t, p, "s2", "s1")
		for i, r := range s2.Config.Routes {
			if r.Prefix == netip.PrefixFrom(h2.Config.Addr, 32) {
				s2.Config.Routes[i].Ports = append(r.Ports, back)
			}
		}
		p.g = nil // the routes changed
		checkFastest(t, p)
	})
}

// lineTopo is h1 – s1 – s2 – h2.
const lineTopo = `name: line
defaults: {rate: 1Gbps, delay: 10us, buffer: 100KB, mtu: 1500}
nodes:
  - {name: h1, kind: host}
  - {name: h2, kind: host}
  - {name: s1, kind: switch}
  - {name: s2, kind: switch}
links:
  - [h1, s1]
  - [s1, s2]
  - [s2, h2]
`

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
			paths, perr := g.paths(a.Config.Name, b.Config.Name)
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
