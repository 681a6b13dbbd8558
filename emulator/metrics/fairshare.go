package metrics

import (
	"fmt"

	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/hostd"
	"reef/units"
	"reef/wire"
)

// FlowEnds is a flow's endpoints and whether it is active, for FairShares.
type FlowEnds struct {
	Src, Dst string
	Active   bool
	// Demand caps the flow's rate (a constant-rate flow); 0 means backlogged.
	Demand units.Rate
	// ID is the flow's ID: its frames' 5-tuple (hostd.SrcPort), which ECMP switches
	// hash. Moved says the flow's paths may have changed during the run (it changed its
	// 5-tuple, or a link went down and the switches hashed over fewer ports): the oracle
	// then follows Egress instead of the hash, when the run measured it.
	ID    uint32
	Moved bool
	// Egress is the flow's data frames per switch egress port, when the run measured
	// them (results.Flow.Egress).
	Egress []results.PortFrames
}

// FairShares returns the max-min fair share of every flow over p's topology, counting
// only the active flows (inactive ones get 0), and how the oracle placed them. It wraps
// plan.MaxMinPlaced, the one water-filling oracle: flows are backlogged unless they have
// a Demand, and each follows the paths it took: at an ECMP switch the port the switch's
// hash of its 5-tuple picks (unless its paths moved), at a flowlet or adaptive switch the
// split the run measured, at a spraying switch an even split.
func FairShares(p *plan.Plan, flows []FlowEnds) ([]units.Rate, plan.Placement, error) {
	var in []plan.Flow
	var idx []int
	for i, f := range flows {
		if !f.Active {
			continue
		}
		pf := plan.Flow{Src: f.Src, Dst: f.Dst, Demand: f.Demand}
		if !f.Moved || len(f.Egress) == 0 { // unmeasured: the hash of its first 5-tuple
			src, okSrc := p.HostAddr(f.Src)
			dst, okDst := p.HostAddr(f.Dst)
			if okSrc && okDst {
				key := wire.Addrs{Src: src, Dst: dst, SrcPort: hostd.SrcPort(f.ID)}.Key()
				pf.Key = &key
			}
		}
		if len(f.Egress) > 0 {
			pf.Egress = make(map[plan.SwitchPort]int64, len(f.Egress))
			for _, e := range f.Egress {
				pf.Egress[plan.SwitchPort{Switch: e.Switch, Port: e.Port}] += e.Frames
			}
		}
		in = append(in, pf)
		idx = append(idx, i)
	}
	out := make([]units.Rate, len(flows))
	if len(in) == 0 {
		return out, 0, nil
	}
	rates, placed, err := plan.MaxMinPlaced(p, in)
	if err != nil {
		return nil, 0, fmt.Errorf("metrics: fair shares: %w", err)
	}
	for j, i := range idx {
		out[i] = rates[j]
	}
	return out, placed, nil
}
