package runner

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	_ "reef/cc/poseidon"
	"reef/emulator/analysis"
	"reef/emulator/plan"
	"reef/emulator/results"
)

// permutation is a fat-tree k=4 on the sim, every host sending to the host eight
// further on (so every flow leaves its pod), the switches balancing by ${lb}. Buffers
// are deep enough that no frame is dropped, so a flow's frames on a link over the
// frames it sent is the share of its traffic there.
const permutation = `name: perm
topology:
  name: perm
  defaults: {rate: 10Gbps, delay: 1us, buffer: 64MB, mtu: 1500}
  generator: {kind: fat-tree, k: 4}
duration: 1ms
warmup: 0.2ms
sample_interval: 10us
seed: 3
switches:
  "*": {lb: {mode: "${lb}"}}
defaults: {cc: swift}
flows:
  - {group: out, count: 8, src: "h{i}", dst: "h{i+8}"}
  - {group: back, count: 8, src: "h{i+8}", dst: "h{i}"}
sweep:
  lb: [ecmp, spray, adaptive]
`

// TestFairSharesFollowRealisedPaths checks every flow's reported fair share against
// max-min fair shares computed here, independently of the oracle, from the paths the
// flows took: under ECMP and adaptive routing from the frames the sim counted on each
// switch port (each ECMP flow must have used one port at every switch: the oracle's hash
// must have been the switches'), under spraying from an even split over every shortest
// path. Before the oracle followed the paths, it put every ECMP flow on the first path
// and collisions went unseen.
func TestFairSharesFollowRealisedPaths(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	o, err := Run(context.Background(), write(t, dir, permutation), Options{Backend: "sim", OutDir: out, NoFigures: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range o.Summaries {
		lb := s.Vars["lb"]
		t.Run(lb, func(t *testing.T) {
			in, err := analysis.LoadRun(filepath.Join(out, "lb="+lb))
			if err != nil {
				t.Fatal(err)
			}
			p, run := in.Plan, in.Run
			for _, pt := range run.Ports {
				if pt.Drops != 0 {
					t.Fatalf("%s:%s dropped %d frames; the test wants none", pt.Switch, pt.Name, pt.Drops)
				}
			}
			ends := linkEnds(p)
			var use []map[dirLink]float64
			for _, f := range run.Flows {
				var u map[dirLink]float64
				if lb == "spray" {
					u = evenOverPaths(t, p, f.Src, f.Dst)
				} else {
					u = measured(t, p, ends, &f, lb == "ecmp")
				}
				use = append(use, u)
			}
			want := waterFill(p, use)
			collided := false
			for i, f := range s.Flows {
				if math.Abs(f.FairShareWireBps-want[i]) > 1+1e-9*want[i] {
					t.Errorf("%s (%s→%s): fair share %.0f bit/s, want %.0f from its paths", f.Name, f.Src, f.Dst, f.FairShareWireBps, want[i])
				}
				collided = collided || want[i] < 0.99e10
			}
			if lb == "ecmp" && !collided {
				t.Error("no two ECMP flows share a link: the test shows nothing; change the seed")
			}
			if s.FairShareMethod == "" {
				t.Error("the summary does not say how the oracle placed the flows")
			}
			t.Logf("%s: %s", lb, s.FairShareMethod)
		})
	}
}

// dirLink is a link in one direction.
type dirLink struct {
	link    int
	forward bool
}

// linkEnds maps every switch port to the link it sends on.
func linkEnds(p *plan.Plan) map[plan.SwitchPort]dirLink {
	m := map[plan.SwitchPort]dirLink{}
	for i, l := range p.Links {
		if !l.A.IsHost {
			m[plan.SwitchPort{Switch: l.A.Node, Port: l.A.Port}] = dirLink{i, true}
		}
		if !l.B.IsHost {
			m[plan.SwitchPort{Switch: l.B.Node, Port: l.B.Port}] = dirLink{i, false}
		}
	}
	return m
}

// measured is the share of flow f's traffic on each link from the frames the run
// counted: the host's own link carries all of it, and each switch passes on what it
// receives in the proportions it sent the flow's frames out of its ports (frames still
// queued at the end of the run make raw counts fall along the path). With single, every
// switch must have sent the flow out of one port only.
func measured(t *testing.T, p *plan.Plan, ends map[plan.SwitchPort]dirLink, f *results.Flow, single bool) map[dirLink]float64 {
	t.Helper()
	h, _ := p.HostByName(f.Src)
	l := p.Links[h.Link]
	first := l.B.Node
	if l.B.Node == f.Src {
		first = l.A.Node
	}
	out := map[string]float64{} // frames each switch sent
	ports := map[string]int{}
	for _, e := range f.Egress {
		out[e.Switch] += float64(e.Frames)
		ports[e.Switch]++
	}
	if single {
		for sw, n := range ports {
			if n != 1 {
				t.Errorf("flow %s left %s by %d ports; ECMP keeps a flow on one", f.Name, sw, n)
			}
		}
	}
	// in[s] is the share of the flow reaching switch s; paths have at most as many
	// hops as there are switches, so that many rounds settle it.
	var u map[dirLink]float64
	in := map[string]float64{first: 1}
	for range p.Switches {
		u = map[dirLink]float64{{h.Link, l.A.Node == f.Src}: 1}
		next := map[string]float64{first: 1}
		for _, e := range f.Egress {
			d := ends[plan.SwitchPort{Switch: e.Switch, Port: e.Port}]
			share := in[e.Switch] * float64(e.Frames) / out[e.Switch]
			u[d] += share
			to := p.Links[d.link].B.Node
			if !d.forward {
				to = p.Links[d.link].A.Node
			}
			next[to] += share
		}
		in = next
	}
	return u
}

// evenOverPaths spreads a flow evenly over every shortest path from src to dst.
func evenOverPaths(t *testing.T, p *plan.Plan, src, dst string) map[dirLink]float64 {
	t.Helper()
	paths, err := p.Paths(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	u := map[dirLink]float64{}
	for _, path := range paths {
		for _, hop := range path {
			u[dirLink{hop.Link, hop.Forward}] += 1 / float64(len(paths))
		}
	}
	return u
}

// waterFill is max-min fairness by its definition: raise every unfrozen flow's rate
// together until a link is full, freeze the flows crossing it, repeat.
func waterFill(p *plan.Plan, use []map[dirLink]float64) []float64 {
	rate := make([]float64, len(use))
	frozen := make([]bool, len(use))
	for {
		left := map[dirLink]float64{}
		weight := map[dirLink]float64{}
		for i, u := range use {
			for d, w := range u {
				left[d] = float64(p.Links[d.link].Rate)
				if !frozen[i] {
					weight[d] += w
				}
			}
		}
		for i, u := range use {
			for d, w := range u {
				left[d] -= w * rate[i]
			}
		}
		step := math.Inf(1)
		for d, w := range weight {
			if w > 0 {
				step = min(step, left[d]/w)
			}
		}
		if math.IsInf(step, 1) {
			return rate
		}
		for i := range use {
			if !frozen[i] {
				rate[i] += step
			}
		}
		for i, u := range use {
			for d, w := range u {
				if w > 0 && left[d]-step*weight[d] <= 1e-6*float64(p.Links[d.link].Rate) {
					frozen[i] = true
				}
			}
		}
	}
}

// TestPoseidonPermutationReachesFairShares runs a permutation of Poseidon flows over a
// leaf-spine with ECMP on the sim: every flow reaches at least 0.85 of the fair share of
// the path its hash put it on, and none passes 1.1 of it (before, shares assumed every
// flow on the first path, and flows "reached" twice theirs).
func TestPoseidonPermutationReachesFairShares(t *testing.T) {
	const doc = `name: pperm
topology:
  name: pperm
  defaults: {rate: 10Gbps, delay: 1us, buffer: 4MB, mtu: 1500}
  generator: {kind: leaf-spine, leaves: 2, spines: 4, hosts_per_leaf: 8}
duration: 3ms
warmup: 1ms
sample_interval: 10us
seed: 1
switches:
  "*": {lb: {mode: ecmp}, int: {mode: mpd, mpd_unit: 32ns}}
defaults: {cc: poseidon}
flows:
  - {group: out, count: 8, src: "h{i}", dst: "h{i+8}"}
  - {group: back, count: 8, src: "h{i+8}", dst: "h{i}"}
`
	dir := t.TempDir()
	o, err := Run(context.Background(), write(t, dir, doc), Options{Backend: "sim", OutDir: filepath.Join(dir, "out"), NoFigures: true})
	if err != nil {
		t.Fatal(err)
	}
	s := o.Summaries[0]
	var worst []string
	for _, f := range s.Flows {
		if f.ShareRatio < 0.85 || f.ShareRatio > 1.1 {
			worst = append(worst, fmt.Sprintf("%s %.3f", f.Name, f.ShareRatio))
		}
	}
	if len(worst) > 0 {
		t.Errorf("flows below 0.85 of their fair share or above 1.1 of it (a share the flow's path does not give): %s", strings.Join(worst, ", "))
	}
	var lo, hi = math.Inf(1), 0.0
	for _, f := range s.Flows {
		lo, hi = min(lo, f.ShareRatio), max(hi, f.ShareRatio)
	}
	t.Logf("share ratios in [%.3f, %.3f]; %s", lo, hi, s.FairShareMethod)
}
