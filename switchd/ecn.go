package switchd

import (
	"math/rand/v2"

	"reef/units"
)

// A marker decides at enqueue whether an ECT packet is marked CE, from the backlog the
// packet finds on arrival (qlen, its own bytes excluded) and the queue's capacity. The
// policy is chosen when the switch is built (ECNConfig, per-port override), not copied
// into each queue.
type marker interface {
	mark(qlen, qcap units.Bytes) bool
}

// stepK marks every packet that finds more than K bytes queued (DCTCP).
type stepK struct{ k units.Bytes }

func (m stepK) mark(qlen, _ units.Bytes) bool { return qlen > m.k }

// red marks with a probability rising linearly from 0 at min to pmax at max, and always
// above max (RED in marking mode, on the instantaneous queue as DCQCN configures it).
type red struct {
	min, max units.Bytes
	pmax     float64
	rng      *rand.Rand
}

func (m *red) mark(qlen, _ units.Bytes) bool {
	switch {
	case qlen <= m.min:
		return false
	case qlen >= m.max:
		return true
	}
	p := m.pmax * float64(qlen-m.min) / float64(m.max-m.min)
	return m.rng.Float64() < p
}

// newMarker builds the policy of c; nil when marking is off.
func newMarker(c ECNConfig, rng *rand.Rand) marker {
	switch c.Mode {
	case ECNStep:
		return stepK{c.K}
	case ECNRED:
		return &red{min: c.Min, max: c.Max, pmax: c.PMax, rng: rng}
	}
	return nil
}
