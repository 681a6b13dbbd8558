package plan

import (
	"fmt"
	"math"

	"reef/units"
)

// Flow is one flow for the max-min oracle.
type Flow struct {
	Src, Dst string
	// Demand caps the flow's rate; 0 means unlimited (a backlogged flow).
	Demand units.Rate
	// Spray splits the flow evenly over all its equal-cost paths (each path carries
	// rate/n, as per-packet spraying does on a symmetric fabric). Without it the flow
	// takes one path, the first of Plan.Paths: the oracle does not guess an ECMP hash,
	// so give sprayed flows Spray or place single-path flows where the first path is
	// the one that matters.
	Spray bool
}

// MaxMin returns the max-min fair rates of flows over plan p (water-filling, also called
// progressive filling): every unfrozen flow's rate grows at the same pace until a
// directed link saturates (its rate in that direction, shared by every flow crossing
// it, weighted by the flow's share of paths through it) or the flow reaches its demand;
// those flows freeze and the rest continue. ACK traffic is not counted. Rates are in
// the plan's units, rounded to the nearest bit/s; the result has one entry per flow.
func MaxMin(p *Plan, flows []Flow) ([]units.Rate, error) {
	g := newGraph(p)
	type use struct {
		link int // directed link: 2*Links index + (0 forward, 1 backward)
		w    float64
	}
	uses := make([][]use, len(flows))
	cache := map[[2]string][][]LinkHop{}
	for i, f := range flows {
		key := [2]string{f.Src, f.Dst}
		paths, ok := cache[key]
		if !ok {
			var err error
			if paths, err = g.paths(f.Src, f.Dst); err != nil {
				return nil, fmt.Errorf("plan: max-min flow %d: %w", i, err)
			}
			cache[key] = paths
		}
		if f.Demand < 0 {
			return nil, fmt.Errorf("plan: max-min flow %d (%s→%s): demand %v < 0", i, f.Src, f.Dst, f.Demand)
		}
		if !f.Spray {
			paths = paths[:1]
		}
		w := map[int]float64{}
		var order []int
		for _, path := range paths {
			for _, h := range path {
				d := 2 * h.Link
				if !h.Forward {
					d++
				}
				if _, seen := w[d]; !seen {
					order = append(order, d)
				}
				w[d] += 1 / float64(len(paths))
			}
		}
		for _, d := range order {
			uses[i] = append(uses[i], use{d, w[d]})
		}
	}
	capacity := make([]float64, 2*len(p.Links))
	for i, l := range p.Links {
		capacity[2*i] = float64(l.Rate)
		capacity[2*i+1] = float64(l.Rate)
	}
	rate := make([]float64, len(flows))
	frozen := make([]bool, len(flows))
	load := make([]float64, len(capacity))   // Σ w·rate over all flows
	weight := make([]float64, len(capacity)) // Σ w over unfrozen flows
	active := 0
	for i, f := range flows {
		if f.Demand == 0 && len(uses[i]) == 0 {
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
			if !frozen[i] && f.Demand > 0 {
				delta = min(delta, float64(f.Demand)-rate[i])
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
			stop := f.Demand > 0 && rate[i] >= float64(f.Demand)*(1-eps)
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
	out := make([]units.Rate, len(flows))
	for i, r := range rate {
		out[i] = units.Rate(math.Round(r))
	}
	return out, nil
}
