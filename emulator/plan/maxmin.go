package plan

import (
	"fmt"
	"strings"

	"reef/units"
	"reef/wire"
)

// Flow is one flow for the max-min oracle.
type Flow struct {
	Src, Dst string
	// Demand caps the flow's rate; 0 means unlimited (a backlogged flow).
	Demand units.Rate
	// Spray splits the flow evenly over the candidate ports at every switch where it has
	// a choice (as per-packet spraying does), whatever Key and Egress say.
	Spray bool
	// Key, when set, is the flow's 5-tuple (wire.Addrs.Key of its frames): at a switch
	// balancing by ECMP (the default) the flow takes the port the switch's own hash
	// picks (switchd.ECMPPort with the switch's seed), and a pin matching it wins, as in
	// the pipeline. Leave it nil when the 5-tuple changed during the run (a repath).
	Key *wire.FlowKey
	// Egress, when set, is the flow's data frames per switch egress port as the run
	// measured them: at a switch whose choice depends on time (flowlet, adaptive), or
	// balancing by ECMP when Key is nil, the flow splits over the candidates in these
	// proportions.
	Egress map[SwitchPort]int64
}

// SwitchPort names one switch port.
type SwitchPort struct {
	Switch string
	Port   int
}

// Placement says how the oracle placed flows at switches where they had a choice of
// ports; it is a set (bits ORed over every such switch and flow).
type Placement uint8

// Placements.
const (
	// PlacedHash: the port the switch's ECMP hash of the flow's 5-tuple picks (or a pin).
	PlacedHash Placement = 1 << iota
	// PlacedMeasured: the split over the ports the run measured.
	PlacedMeasured
	// PlacedEven: an even split over the candidates (spray; flowlet or adaptive
	// without measurements).
	PlacedEven
	// PlacedFirst: the first candidate (ECMP with neither the 5-tuple nor
	// measurements).
	PlacedFirst
)

// String says in words how flows were placed, as the summary reports it.
func (m Placement) String() string {
	if m == 0 {
		return "every flow has a single path"
	}
	var parts []string
	for _, d := range []struct {
		bit  Placement
		text string
	}{
		{PlacedHash, "ECMP: the port the switch's hash of the flow's 5-tuple picks"},
		{PlacedMeasured, "the split over ports the run measured (flowlet, adaptive, or a flow that changed its 5-tuple)"},
		{PlacedEven, "an even split over the equal-cost ports (spray, or flowlet and adaptive where the run measured no paths)"},
		{PlacedFirst, "the first equal-cost port (ECMP, the flow's 5-tuple and paths unknown)"},
	} {
		if m&d.bit != 0 {
			parts = append(parts, d.text)
		}
	}
	return strings.Join(parts, "; ")
}

// MaxMin returns the max-min fair rates of flows over plan p (water-filling, also called
// progressive filling): every unfrozen flow's rate grows at the same pace until a
// directed link saturates (its rate in that direction, shared by every flow crossing
// it, weighted by the share of the flow's traffic that crosses it) or the flow reaches
// its demand; those flows freeze and the rest continue. ACK traffic is not counted.
// Rates are in the plan's units, rounded to the nearest bit/s; the result has one
// entry per flow. Each flow's traffic follows the switches' routes; where a switch has
// a choice of ports, see Flow for how the oracle follows it.
func MaxMin(p *Plan, flows []Flow) ([]units.Rate, error) {
	r, _, err := MaxMinPlaced(p, flows)
	return r, err
}

// MaxMinPlaced is MaxMin, also saying how it placed the flows.
func MaxMinPlaced(p *Plan, flows []Flow) ([]units.Rate, Placement, error) {
	placed := make([]*Placed, len(flows))
	var how Placement
	for i := range flows {
		pf, err := Place(p, &flows[i])
		if err != nil {
			return nil, 0, fmt.Errorf("plan: max-min flow %d: %w", i, err)
		}
		placed[i] = pf
		how |= pf.How
	}
	return MaxMinOf(p, placed), how, nil
}

// Placed is one flow placed on the plan's directed links for the max-min oracle: the
// links its traffic crosses, with the share of it on each. Where a flow goes depends on
// the flow alone, not on the others, so a caller that runs the oracle over many sets of
// the same flows places each once (Place) and fills each set (MaxMinOf).
type Placed struct {
	uses   []linkUse
	demand units.Rate
	// How says how the flow was placed where it had a choice of ports.
	How Placement
}

// linkUse is a directed link (2*Links index + 0 forward, 1 backward) and the share of a
// flow's traffic on it.
type linkUse struct {
	link int
	w    float64
}

// Place places flow f on p's links (see Flow for how it follows the switches' choices).
func Place(p *Plan, f *Flow) (*Placed, error) {
	if f.Demand < 0 {
		return nil, fmt.Errorf("plan: flow %s→%s: demand %v < 0", f.Src, f.Dst, f.Demand)
	}
	w, order, how, err := graphOf(p).spread(f)
	if err != nil {
		return nil, err
	}
	pf := &Placed{uses: make([]linkUse, len(order)), demand: f.Demand, How: how}
	for k, d := range order {
		pf.uses[k] = linkUse{d, w[d]}
	}
	return pf, nil
}

// MaxMinOf is the water-filling of MaxMin over flows placed on p (Place): their
// max-min fair rates, one per flow, in the plan's units rounded to the nearest bit/s.
func MaxMinOf(p *Plan, flows []*Placed) []units.Rate {
	return Fill(p, flows).Rates()
}
