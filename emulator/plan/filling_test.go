package plan

import (
	"math"
	"math/rand/v2"
	"testing"

	"reef/units"
)

// naiveMaxMin is the water-filling as MaxMin defines it, round by round: every
// unfrozen flow's rate grows by the least headroom of any link (or demand), and the
// flows on saturated links (or at their demand) freeze. Fill must agree with it.
func naiveMaxMin(p *Plan, flows []*Placed) []float64 {
	// The links the flows use, each once, indexed densely: the filling's rounds scan
	// them, not every link of a large fabric.
	dense := map[int]int{}
	var links []int // dense index → directed link
	uses := make([][]linkUse, len(flows))
	for i, f := range flows {
		uses[i] = make([]linkUse, len(f.uses))
		for k, u := range f.uses {
			j, ok := dense[u.link]
			if !ok {
				j = len(links)
				dense[u.link] = j
				links = append(links, u.link)
			}
			uses[i][k] = linkUse{j, u.w}
		}
	}
	capacity := make([]float64, len(links))
	for j, d := range links {
		capacity[j] = float64(p.Links[d/2].Rate)
	}
	rate := make([]float64, len(flows))
	frozen := make([]bool, len(flows))
	load := make([]float64, len(capacity))   // Σ w·rate over all flows
	weight := make([]float64, len(capacity)) // Σ w over unfrozen flows
	active := 0
	for i, f := range flows {
		if f.demand == 0 && len(uses[i]) == 0 {
			frozen[i] = true // cannot happen for a routed flow; guards the loop
			continue
		}
		active++
		for _, u := range uses[i] {
			weight[u.link] += u.w
		}
	}
	const eps = 1e-9
	for active > 0 {
		delta := math.Inf(1)
		for l, w := range weight {
			if w > eps {
				delta = min(delta, (capacity[l]-load[l])/w)
			}
		}
		for i, f := range flows {
			if !frozen[i] && f.demand > 0 {
				delta = min(delta, float64(f.demand)-rate[i])
			}
		}
		delta = max(delta, 0)
		for i := range flows {
			if frozen[i] {
				continue
			}
			rate[i] += delta
			for _, u := range uses[i] {
				load[u.link] += u.w * delta
			}
		}
		// Freeze flows at their demand or on a saturated link.
		for i, f := range flows {
			if frozen[i] {
				continue
			}
			stop := f.demand > 0 && rate[i] >= float64(f.demand)*(1-eps)
			for _, u := range uses[i] {
				if capacity[u.link]-load[u.link] <= capacity[u.link]*eps {
					stop = true
				}
			}
			if stop {
				frozen[i] = true
				active--
				for _, u := range uses[i] {
					weight[u.link] -= u.w
				}
			}
		}
	}
	return rate
}

// Fill and With agree with the round-by-round filling on random sets of flows over a
// fat tree and a leaf-spine: single-path (hashed) and sprayed flows, some capped by a
// demand, on links of unequal rates; and so does a Filling refilled again and again.
func TestFillMatchesRounds(t *testing.T) {
	plans := []*Plan{
		mustPlan(t, "name: ft\ndefaults: {rate: 100Gbps}\ngenerator: {kind: fat-tree, k: 4}\n"),
		mustPlan(t, "name: ls\ndefaults: {rate: 10Gbps}\ngenerator: {kind: leaf-spine, spines: 3, leaves: 4, hosts_per_leaf: 3}\nclasses:\n  uplink: {rate: 25Gbps}\n"),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	close := func(a units.Rate, b float64) bool { return math.Abs(float64(a)-b) <= 1e-6*b+1 }
	var reused [2]Filling // one per plan, and one for both
	var mixed Filling
	for trial := range 200 {
		p := plans[trial%len(plans)]
		n := 1 + rng.IntN(40)
		var placed []*Placed
		for range n + 1 {
			src := p.Hosts[rng.IntN(len(p.Hosts))].Config.Name
			dst := p.Hosts[rng.IntN(len(p.Hosts))].Config.Name
			for dst == src {
				dst = p.Hosts[rng.IntN(len(p.Hosts))].Config.Name
			}
			f := Flow{Src: src, Dst: dst, Spray: rng.IntN(4) == 0}
			if rng.IntN(5) == 0 {
				f.Demand = units.Rate(1+rng.IntN(20)) * units.Gbps / 4
			}
			pf, err := Place(p, &f)
			if err != nil {
				t.Fatal(err)
			}
			placed = append(placed, pf)
		}
		set, m := placed[:n], placed[n]
		want := naiveMaxMin(p, set)
		joint := naiveMaxMin(p, placed)
		// A fresh filling, one refilled in the storage of every trial before on the
		// same plan, and one over both plans.
		for _, fill := range []*Filling{Fill(p, set), reused[trial%2].Refill(p, set), mixed.Refill(p, set)} {
			for i, r := range fill.Rates() {
				if !close(r, want[i]) {
					t.Fatalf("trial %d: flow %d of %d: Fill %v, rounds %v", trial, i, n, r, units.Rate(want[i]))
				}
			}
			if got := fill.With(m); !close(got, joint[n]) {
				t.Fatalf("trial %d: With the %d-th flow %v, rounds over all %v", trial, n+1, got, units.Rate(joint[n]))
			}
		}
	}
}

// BenchmarkFillWith is the analysis's question for a large run's short messages: the
// share of one more flow among a thousand bulk flows on a k = 8 fat tree, answered by
// filling them all again round by round (as MaxMinOf did before Fill), by Fill, and
// by With.
func BenchmarkFillWith(b *testing.B) {
	p := mustPlan(b, "name: ft8\ngenerator: {kind: fat-tree, k: 8}\n")
	rng := rand.New(rand.NewPCG(3, 4))
	var placed []*Placed
	for range 1001 {
		src, dst := rng.IntN(len(p.Hosts)), rng.IntN(len(p.Hosts)-1)
		if dst >= src {
			dst++
		}
		pf, err := Place(p, &Flow{Src: p.Hosts[src].Config.Name, Dst: p.Hosts[dst].Config.Name})
		if err != nil {
			b.Fatal(err)
		}
		placed = append(placed, pf)
	}
	b.Run("rounds", func(b *testing.B) {
		for b.Loop() {
			naiveMaxMin(p, placed)
		}
	})
	b.Run("fill", func(b *testing.B) {
		for b.Loop() {
			Fill(p, placed)
		}
	})
	fill := Fill(p, placed[:1000])
	b.Run("with", func(b *testing.B) {
		for b.Loop() {
			fill.With(placed[1000])
		}
	})
}
