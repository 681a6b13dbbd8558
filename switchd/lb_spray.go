package switchd

import (
	"math/rand/v2"

	"reef/units"
	"reef/wire"
)

// spray picks a port uniformly at random for every packet (random packet spraying,
// mswift.md §4.1).
type spray struct{ rng *rand.Rand }

func (s spray) pick(_ units.Time, _ *wire.FlowKey, cands []int) int {
	return cands[s.rng.IntN(len(cands))]
}
