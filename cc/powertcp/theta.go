package powertcp

import (
	"reef/cc"
	"reef/units"
)

// Theta is one flow's θ-PowerTCP state (Algorithm 2): PowerTCP on RTT alone. Build it
// with NewTheta.
type Theta struct {
	window
	started     bool
	prevRTT     units.Time
	prevAck     units.Time
	lastUpdated uint64
}

// NewTheta builds θ-PowerTCP for one flow.
func NewTheta(env cc.Env, p Params) (*Theta, error) {
	w, err := newWindow(env, p, "theta-powertcp")
	if err != nil {
		return nil, err
	}
	return &Theta{window: w}, nil
}

// OnSend remembers the window packet seq was sent under.
func (c *Theta) OnSend(now units.Time, seq uint64, size units.Bytes) { c.onSend(seq) }

// OnFeedback runs Algorithm 2 on an ACK's RTT sample.
func (c *Theta) OnFeedback(now units.Time, fb *cc.Feedback) {
	if fb.Kind != cc.Ack {
		return
	}
	rtt := fb.RTT
	if fb.Turnaround > 0 && fb.Turnaround < rtt {
		rtt -= fb.Turnaround
	}
	if rtt <= 0 {
		return
	}
	if !c.started {
		c.started = true
		c.prevRTT, c.prevAck = rtt, now
		c.lastUpdated = fb.NextSeq
		return
	}
	dt := float64(now - c.prevAck)
	if dt <= 0 {
		return // two ACKs at one instant: no gradient; keep the older reference
	}
	// Γ_norm = (θ̇ + 1)·RTT/τ, θ̇ = ΔRTT/Δt.
	grad := float64(rtt-c.prevRTT)/dt + 1
	norm := max(grad, 0) * float64(rtt) / c.tau
	c.smoothWith(norm, dt)
	c.prevRTT, c.prevAck = rtt, now
	if fb.AckSeq >= c.lastUpdated {
		old := c.cwndAt(fb.AckSeq)
		c.update(old, old)
		c.lastUpdated = fb.NextSeq
	}
}

// OnTimeout keeps the window and forgets the RTT history, so the next ACK starts afresh.
func (c *Theta) OnTimeout(now units.Time) { c.started = false }
