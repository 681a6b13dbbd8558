// Package dumbbell runs congestion-control algorithms on a small virtual-time dumbbell
// for their behaviour tests: N senders with fast NICs share one slower switch port
// toward a receiver (hostd/hosttest's network of one real switchd.Switch, which queues,
// drops and stamps the Poseidon MPD field from its computed departure schedule). It
// measures what the behaviour tests assert: per-flow goodput over an interval, Jain's
// index, and the bottleneck queue seen by the flows.
package dumbbell

import (
	"fmt"

	"reef/cc"
	"reef/hostd"
	"reef/hostd/hosttest"
	"reef/units"
	"reef/wire"
)

// Config describes the dumbbell.
type Config struct {
	// Starts holds one start time per flow.
	Starts []units.Time
	// NIC is every host's NIC rate; Bottleneck the switch port toward the receiver.
	NIC, Bottleneck units.Rate
	// Delay is each link's one-way propagation delay.
	Delay units.Time
	// Buffer is the bottleneck's drop-tail buffer (0: unlimited).
	Buffer units.Bytes
	// MPDUnit is the unit of the MPD field the switch stamps (0: no INT).
	MPDUnit units.Time
	// Jitter, when > 0, delays each frame leaving the switch by a uniform random
	// [0, Jitter) (seeded), which breaks the phase locking of paced flows that a
	// noise-free simulation otherwise shows.
	Jitter units.Time
	// Seed seeds the jitter and the switch (0: 1).
	Seed uint64
}

// Net is a running dumbbell.
type Net struct {
	*hosttest.Net
	cfg  Config
	env  cc.Env
	algs []cc.Algorithm
	rx   int
}

// ackBytes approximates an ACK frame's size for the base RTT.
const ackBytes = 100

// New builds the dumbbell; mk builds flow i's algorithm from its environment (MSS,
// frame size, NIC rate, base RTT and path hops filled in).
func New(cfg Config, mk func(i int, env cc.Env) (cc.Algorithm, error)) (*Net, error) {
	hc := hosttest.Config{Delay: cfg.Delay, MPDUnit: cfg.MPDUnit, Seed: max(cfg.Seed, 1)}
	n := &Net{cfg: cfg}
	if cfg.Jitter > 0 {
		hc.Jitter = func(units.Time, wire.View) units.Time { return units.Time(n.Rand.Int64N(int64(cfg.Jitter))) }
	}
	n.Net = hosttest.New(hc)
	var senders []*hostd.Host
	for range cfg.Starts {
		_, h, err := n.AddHost(cfg.NIC, hosttest.Port{Rate: cfg.NIC}, hostd.Options{})
		if err != nil {
			return nil, err
		}
		senders = append(senders, h)
	}
	rx, _, err := n.AddHost(cfg.NIC, hosttest.Port{Rate: cfg.Bottleneck, Buffer: cfg.Buffer}, hostd.Options{})
	if err != nil {
		return nil, err
	}
	n.rx = rx
	for i, h := range senders {
		env := h.FlowEnv(0)
		env.BaseRTT = 4*cfg.Delay + cfg.NIC.TxTime(env.PacketSize) + cfg.Bottleneck.TxTime(env.PacketSize) +
			2*cfg.NIC.TxTime(ackBytes)
		env.PathHops = 1
		n.env = env
		alg, err := mk(i, env)
		if err != nil {
			return nil, fmt.Errorf("flow %d: %w", i+1, err)
		}
		n.algs = append(n.algs, alg)
		if err := h.AddFlow(hostd.FlowSpec{ID: uint32(i + 1), Dst: hosttest.Addr(rx), Alg: alg,
			Start: cfg.Starts[i], BaseRTT: env.BaseRTT}); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// Env is the environment the flows were built with.
func (n *Net) Env() cc.Env { return n.env }

// Alg is flow i's algorithm.
func (n *Net) Alg(i int) cc.Algorithm { return n.algs[i] }

// Capacity is the bottleneck's payload rate with full frames (bit/s).
func (n *Net) Capacity() float64 {
	return float64(n.cfg.Bottleneck) * float64(n.env.MSS) / float64(n.env.PacketSize)
}

// Acked is each flow's acknowledged payload so far.
func (n *Net) Acked() []units.Bytes {
	out := make([]units.Bytes, len(n.algs))
	for i := range out {
		out[i] = n.Host(i).FlowStats()[0].BytesAcked
	}
	return out
}

// Goodput runs the network to from, then to to, and returns each flow's payload rate
// over [from, to] in bit/s.
func (n *Net) Goodput(from, to units.Time) ([]float64, error) {
	if err := n.Run(from); err != nil {
		return nil, err
	}
	a := n.Acked()
	if err := n.Run(to); err != nil {
		return nil, err
	}
	b := n.Acked()
	out := make([]float64, len(a))
	for i := range a {
		out[i] = float64(b[i]-a[i]) * 8e9 / float64(to-from)
	}
	return out, nil
}

// Queue runs the network from its current time to to and returns the mean and the
// largest fabric delay above the base RTT that flow i's ACKs reported, sampled every
// step: an estimate of the bottleneck's standing queue as the flow sees it.
func (n *Net) Queue(i int, to, step units.Time) (mean, peak units.Time, err error) {
	var sum units.Time
	var k int
	base := n.env.BaseRTT - 2*n.cfg.NIC.TxTime(ackBytes) - n.cfg.NIC.TxTime(n.env.PacketSize)
	for at := n.Now() + step; at <= to; at += step {
		if err := n.Run(at); err != nil {
			return 0, 0, err
		}
		q := max(n.Host(i).FlowStats()[0].FabricDelay-base, 0)
		sum += q
		peak = max(peak, q)
		k++
	}
	if k == 0 {
		return 0, 0, nil
	}
	return sum / units.Time(k), peak, nil
}

// Jain is Jain's fairness index of x: (Σx)²/(n·Σx²).
func Jain(x []float64) float64 {
	var s, sq float64
	for _, v := range x {
		s += v
		sq += v * v
	}
	if sq == 0 {
		return 0
	}
	return s * s / (float64(len(x)) * sq)
}

// Sum is Σx.
func Sum(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s
}

// Converged runs the network from its current time to to and returns how long after
// the current time every flow's goodput, averaged over a sliding window of avg sampled
// every step, enters and then stays within ±tol of an equal share of the bottleneck
// (units.Never if it never settles).
func (n *Net) Converged(to, step, avg units.Time, tol float64) (units.Time, error) {
	start := n.Now()
	var trace [][]units.Bytes
	for at := start; at <= to; at += step {
		if err := n.Run(at); err != nil {
			return 0, err
		}
		trace = append(trace, n.Acked())
	}
	fair := n.Capacity() / float64(len(n.algs))
	w := int(avg / step)
	settled := units.Never
	for i := w; i < len(trace); i++ {
		ok := true
		for f := range n.algs {
			g := float64(trace[i][f]-trace[i-w][f]) * 8e9 / float64(avg)
			ok = ok && g >= (1-tol)*fair && g <= (1+tol)*fair
		}
		switch {
		case ok && settled == units.Never:
			settled = units.Time(i) * step
		case !ok:
			settled = units.Never
		}
	}
	return settled, nil
}
