package switchd

import (
	"math/rand/v2"

	"reef/units"
	"reef/wire"
)

// A balancer picks an egress port among the up ports of a route's group for one packet
// (uet-htsim's Pick). Each strategy lives in its own file: lb_ecmp.go, lb_spray.go,
// lb_adaptive.go, lb_flowlet.go. cands has at least two ports; the result must be one of
// them. Randomness comes from the switch's seeded source.
type balancer interface {
	pick(now units.Time, key *wire.FlowKey, cands []int) int
}

// queueView is what adaptive routing reads of the egress queues: the backlog now and
// the capacity.
type queueView interface {
	backlog(port int) units.Bytes
	capacity(port int) units.Bytes
}

// newBalancer builds the strategy of c.
func newBalancer(c LBConfig, seed uint64, rng *rand.Rand, q queueView) balancer {
	switch c.Mode {
	case LBSpray:
		return spray{rng}
	case LBAdaptive:
		return &adaptive{quantum: c.Quantum, rng: rng, q: q}
	case LBFlowlet:
		return newFlowlet(c.FlowletGap, seed, rng)
	}
	return ecmp{seed}
}
