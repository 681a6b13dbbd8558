package switchd

import (
	"math/rand/v2"

	"reef/units"
	"reef/wire"
)

// flowletSlots is the size of the flowlet table. As in hardware, flows share a slot
// when their hashes collide; a collision only merges two flows' flowlets.
const flowletSlots = 4096

// flowlet keeps a flow on its port while its packets come closer together than gap; a
// packet after an idle gap of at least gap starts a new flowlet on a freshly drawn port
// (uniform over the candidates). The table is fixed-size, so it never allocates.
type flowlet struct {
	gap   units.Time
	seed  uint64
	rng   *rand.Rand
	slots [flowletSlots]struct {
		last units.Time
		port int32
		used bool
	}
}

func newFlowlet(gap units.Time, seed uint64, rng *rand.Rand) *flowlet {
	return &flowlet{gap: gap, seed: seed, rng: rng}
}

func (f *flowlet) pick(now units.Time, key *wire.FlowKey, cands []int) int {
	s := &f.slots[key.Hash(f.seed)%flowletSlots]
	if s.used && now-s.last < f.gap && contains(cands, int(s.port)) {
		s.last = now
		return int(s.port)
	}
	p := cands[f.rng.IntN(len(cands))]
	s.used, s.last, s.port = true, now, int32(p)
	return p
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
