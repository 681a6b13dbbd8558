package metrics

import (
	"fmt"

	"reef/emulator/plan"
	"reef/switchd"
	"reef/units"
)

// FlowEnds is a flow's endpoints and whether it is active, for FairShares.
type FlowEnds struct {
	Src, Dst string
	Active   bool
	// Demand caps the flow's rate (a constant-rate flow); 0 means backlogged.
	Demand units.Rate
}

// FairShares returns the max-min fair share of every flow over p's topology, counting
// only the active flows (inactive ones get 0). It wraps plan.MaxMin, the one water-filling
// oracle: flows are backlogged unless they have a Demand, and a flow is spread evenly over its
// equal-cost paths when any switch sprays packets (spray or adaptive load balancing),
// otherwise it takes the first path.
func FairShares(p *plan.Plan, flows []FlowEnds) ([]units.Rate, error) {
	spray := false
	for _, s := range p.Switches {
		if m := s.Config.LB.Mode; m == switchd.LBSpray || m == switchd.LBAdaptive {
			spray = true
		}
	}
	var in []plan.Flow
	var idx []int
	for i, f := range flows {
		if f.Active {
			in = append(in, plan.Flow{Src: f.Src, Dst: f.Dst, Spray: spray, Demand: f.Demand})
			idx = append(idx, i)
		}
	}
	out := make([]units.Rate, len(flows))
	if len(in) == 0 {
		return out, nil
	}
	rates, err := plan.MaxMin(p, in)
	if err != nil {
		return nil, fmt.Errorf("metrics: fair shares: %w", err)
	}
	for j, i := range idx {
		out[i] = rates[j]
	}
	return out, nil
}
