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
	var idx []int
	for i, f := range flows {
		if f.Active {
			idx = append(idx, i)
		}
	}
	out := make([]units.Rate, len(flows))
	if len(idx) == 0 {
		return out, 0, nil
	}
	rates, placed, err := NewOracle(p, flows).Shares(idx)
	if err != nil {
		return nil, 0, err
	}
	for j, i := range idx {
		out[i] = rates[j]
	}
	return out, placed, nil
}

// Oracle answers FairShares for many subsets of one list of flows, as a run's analysis
// asks it (one subset per interval of constant activity, and one per short message):
// each flow is placed on the topology once, the first time a subset holds it, and
// every subset is only filled (plan.Filling.Refill, in storage the oracle keeps), or,
// for a subset that is a filled one and one flow more, answered from that filling
// (ShareWith). Not safe for concurrent use.
type Oracle struct {
	p      *plan.Plan
	flows  []FlowEnds
	placed []*plan.Placed // per flow; nil until a subset holds it
	fill   plan.Filling   // the last Fill
}

// NewOracle returns an oracle over flows (their Active field is ignored: Shares says
// which are active).
func NewOracle(p *plan.Plan, flows []FlowEnds) *Oracle {
	return &Oracle{p: p, flows: flows, placed: make([]*plan.Placed, len(flows))}
}

// Shares returns the max-min fair shares of the flows idx (indices into the oracle's
// flows), as FairShares would with exactly those flows active, in idx's order, and how
// they were placed.
func (o *Oracle) Shares(idx []int) ([]units.Rate, plan.Placement, error) {
	f, how, err := o.Fill(idx)
	if err != nil {
		return nil, 0, err
	}
	return f.Rates(), how, nil
}

// Fill water-fills the flows idx (indices into the oracle's flows) and says how they
// were placed: Filling.Rates are their Shares, in idx's order. The filling is the
// oracle's, valid until its next Fill (or Shares).
func (o *Oracle) Fill(idx []int) (*plan.Filling, plan.Placement, error) {
	set := make([]*plan.Placed, len(idx))
	var how plan.Placement
	for k, i := range idx {
		pf, err := o.placedFlow(i)
		if err != nil {
			return nil, 0, err
		}
		set[k] = pf
		how |= pf.How
	}
	return o.fill.Refill(o.p, set), how, nil
}

// ShareWith is the share flow i (an index into the oracle's flows) gets among the
// flows of f, a filling Fill returned that does not hold i, and how i was placed: its
// Shares with f's flows and itself.
func (o *Oracle) ShareWith(f *plan.Filling, i int) (units.Rate, plan.Placement, error) {
	pf, err := o.placedFlow(i)
	if err != nil {
		return 0, 0, err
	}
	return f.With(pf), pf.How, nil
}

// placedFlow is flow i placed, the first time it is asked for.
func (o *Oracle) placedFlow(i int) (*plan.Placed, error) {
	if o.placed[i] == nil {
		pf, err := o.place(&o.flows[i])
		if err != nil {
			return nil, fmt.Errorf("metrics: fair shares: flow %d: %w", i, err)
		}
		o.placed[i] = pf
	}
	return o.placed[i], nil
}

// place places one flow the way FairShares describes.
func (o *Oracle) place(f *FlowEnds) (*plan.Placed, error) {
	pf := plan.Flow{Src: f.Src, Dst: f.Dst, Demand: f.Demand}
	if !f.Moved || len(f.Egress) == 0 { // unmeasured: the hash of its first 5-tuple
		src, okSrc := o.p.HostAddr(f.Src)
		dst, okDst := o.p.HostAddr(f.Dst)
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
	return plan.Place(o.p, &pf)
}
