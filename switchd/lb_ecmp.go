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
	return cands[key.Hash(e.seed)%uint64(len(cands))]
}
