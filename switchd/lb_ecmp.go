package switchd

import (
	"reef/units"
	"reef/wire"
)

// ecmp hashes the 5-tuple with the switch's seed, so every packet of a flow takes the
// same port (while the group's set of up ports does not change) and different switches
// hash differently.
type ecmp struct{ seed uint64 }

func (e ecmp) pick(_ units.Time, key *wire.FlowKey, cands []int) int {
	return ECMPPort(e.seed, key, cands)
}

// ECMPPort is the port an ECMP switch with seed picks for key among cands (a route's
// up ports, in the route's order): the pipeline's own choice, exported so that an
// analysis (the max-min oracle) can follow a flow's path without a switch.
func ECMPPort(seed uint64, key *wire.FlowKey, cands []int) int {
	return cands[key.Hash(seed)%uint64(len(cands))]
}
