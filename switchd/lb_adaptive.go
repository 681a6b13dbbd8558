package switchd

import (
	"math/rand/v2"

	"reef/units"
	"reef/wire"
)

// adaptive is htsim's default adaptive routing (mswift.md §4.2): per packet, local, on
// the quantised occupancy of each candidate's egress queue at forwarding time; the
// lowest level wins and ties break uniformly at random.
//
// With quantum > 0 the level is backlog / quantum. With quantum 0 it is htsim's four
// levels by fraction of the port's buffer: 0 below 5 %, 1 below 10 %, 2 below 20 %,
// 3 from 20 %.
type adaptive struct {
	quantum units.Bytes
	rng     *rand.Rand
	q       queueView
}

func (a *adaptive) level(port int) int64 {
	b := a.q.backlog(port)
	if a.quantum > 0 {
		return int64(b / a.quantum)
	}
	c := a.q.capacity(port)
	switch {
	case b*20 < c:
		return 0
	case b*10 < c:
		return 1
	case b*5 < c:
		return 2
	}
	return 3
}

func (a *adaptive) pick(_ units.Time, _ *wire.FlowKey, cands []int) int {
	best, ties := int64(-1), 0
	choice := cands[0]
	for _, p := range cands {
		l := a.level(p)
		switch {
		case best < 0 || l < best:
			best, ties, choice = l, 1, p
		case l == best:
			// Reservoir sampling: the k-th tie replaces the choice with probability 1/k,
			// so every tied port is equally likely.
			ties++
			if a.rng.IntN(ties) == 0 {
				choice = p
			}
		}
	}
	return choice
}
