package powertcp

import (
	"math"

	"reef/cc"
	"reef/units"
	"reef/wire"
)

// PowerTCP is one flow's INT PowerTCP state (Algorithm 1). Build it with New.
type PowerTCP struct {
	window
	started bool
	nprev   int
	prev    [wire.MaxHops]wire.Hop
}

// New builds INT PowerTCP for one flow.
func New(env cc.Env, p Params) (*PowerTCP, error) {
	w, err := newWindow(env, p, "powertcp")
	if err != nil {
		return nil, err
	}
	return &PowerTCP{window: w}, nil
}

// OnSend remembers the window packet seq was sent under.
func (c *PowerTCP) OnSend(now units.Time, seq uint64, size units.Bytes) { c.onSend(seq) }

// OnFeedback runs Algorithm 1 on an ACK carrying INT records.
func (c *PowerTCP) OnFeedback(now units.Time, fb *cc.Feedback) {
	if fb.Kind != cc.Ack || len(fb.Hops) == 0 {
		return
	}
	hops := fb.Hops
	if len(hops) > len(c.prev) {
		hops = hops[:len(c.prev)]
	}
	if !c.started || len(hops) != c.nprev {
		c.started = true
		c.nprev = copy(c.prev[:], hops)
		return
	}
	norm, dt := c.normPower(hops)
	c.nprev = copy(c.prev[:], hops)
	if dt <= 0 {
		return // no hop gave a sample
	}
	c.smoothWith(norm, dt)
	c.update(c.cwndAt(fb.AckSeq), c.cwnd)
}

// normPower is Algorithm 1's NORM_POWER: the largest normalised power over the hops and
// the Δt of that hop (ns); dt is 0 when no hop's clock advanced. A hop whose queue
// drained faster than it transmitted has λ < 0 and counts as power 0: the sample still
// enters the EWMA (skipping it would bias Γ_smooth upwards when the queue alternates).
func (c *PowerTCP) normPower(hops []wire.Hop) (norm, dt float64) {
	norm = math.Inf(-1)
	for i := range hops {
		cur, old := &hops[i], &c.prev[i]
		d := float64(cur.TS - old.TS)
		b := float64(cur.RateKbps) * 1e3 / 8e9 // bytes/ns
		if d <= 0 || b <= 0 || cur.TxBytes < old.TxBytes {
			continue // no time passed, or the port's counter restarted
		}
		qdot := (float64(cur.QLen) - float64(old.QLen)) / d // bytes/ns
		mu := float64(cur.TxBytes-old.TxBytes) / d          // bytes/ns
		lambda := qdot + mu                                 // arrival rate ("current")
		power := lambda * (float64(cur.QLen) + b*c.tau)     // current × voltage
		e := b * b * c.tau
		if n := power / e; n > norm {
			norm, dt = n, d
		}
	}
	return max(norm, 0), dt
}

// OnTimeout keeps the window and forgets the INT records, so the next ACK starts afresh.
func (c *PowerTCP) OnTimeout(now units.Time) {
	c.started = false
	c.nprev = 0
}
