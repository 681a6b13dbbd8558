package dcqcn

import (
	"math/rand/v2"
	"testing"

	"reef/cc"
	"reef/units"
)

// loop closes DCQCN's control loop without a transport: n reaction points send 1000-byte
// packets at their rates into one FIFO served at c, which marks them with the paper's RED
// profile (spec baselines.md §3.3: Kmin 5 KB, Kmax 200 KB, Pmax 1%); a NotificationPoint
// per flow turns marks into CNPs that reach the sender after delay. Time advances in steps
// of 100 ns. It stands in for a sim dumbbell until the host transport's receiver sends
// CNPs.
type loop struct {
	rps    []*DCQCN
	nps    []NotificationPoint
	credit []float64 // bytes each flow may still send
	rng    *rand.Rand
	c      float64 // bottleneck, bit/s
	q      float64 // queue, bytes
	delay  units.Time
	cnps   []pendingCNP
	sent   []float64 // bytes per flow in the measurement window
	qSum   float64
	steps  int
	srv    float64 // bytes served in the measurement window
}

type pendingCNP struct {
	at   units.Time
	flow int
}

const (
	kmin = 5e3
	kmax = 200e3
	pmax = 0.01
	pkt  = 1000.0
)

func newLoop(t *testing.T, n int, c units.Rate) *loop {
	t.Helper()
	l := &loop{rng: rand.New(rand.NewPCG(1, 2)), c: float64(c), delay: 5 * us,
		nps: make([]NotificationPoint, n), credit: make([]float64, n), sent: make([]float64, n)}
	for i := range n {
		d, err := New(cc.Env{LineRate: c}, *DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		l.rps = append(l.rps, d)
		l.nps[i].Interval = DefaultParams().CNPInterval
	}
	return l
}

func (l *loop) mark() bool {
	switch {
	case l.q <= kmin:
		return false
	case l.q >= kmax:
		return true
	default:
		return l.rng.Float64() < pmax*(l.q-kmin)/(kmax-kmin)
	}
}

// run advances from `from` to `to`; measure says whether to count into the window.
func (l *loop) run(from, to units.Time, measure bool) {
	const step = 100 * units.Nanosecond
	for now := from; now < to; now += step {
		for i, d := range l.rps {
			if d.Deadline() <= now {
				d.OnDeadline(now)
			}
			l.credit[i] += float64(d.Rate()) * float64(step) / 8e9
			for l.credit[i] >= pkt {
				l.credit[i] -= pkt
				d.OnSend(now, 0, pkt)
				if l.mark() && l.nps[i].OnData(now, true) {
					l.cnps = append(l.cnps, pendingCNP{now + l.delay, i})
				}
				l.q += pkt
				if measure {
					l.sent[i] += pkt
				}
			}
		}
		served := min(l.q, l.c*float64(step)/8e9)
		l.q -= served
		for len(l.cnps) > 0 && l.cnps[0].at <= now {
			l.rps[l.cnps[0].flow].OnFeedback(now, &cc.Feedback{Kind: cc.CNP})
			l.cnps = l.cnps[1:]
		}
		if measure {
			l.srv += served
			l.qSum += l.q
			l.steps++
		}
	}
}

func TestLoopTwoFlowsShare(t *testing.T) {
	// Two flows start at line rate into a 40 Gb/s bottleneck: CNPs cut them, the timer
	// and byte counter bring them back, and α settles so that they share the link.
	const c = 40 * units.Gbps
	l := newLoop(t, 2, c)
	l.run(0, 60*units.Millisecond, false)
	l.run(60*units.Millisecond, 100*units.Millisecond, true)
	secs := 0.04
	r0, r1 := l.sent[0]*8/secs, l.sent[1]*8/secs
	util := l.srv * 8 / secs / float64(c)
	meanQ := l.qSum / float64(l.steps)
	t.Logf("rates %.3g %.3g bit/s, utilisation %.3f, mean queue %.0f B, CNPs %d %d",
		r0, r1, util, meanQ, l.rps[0].CNPs(), l.rps[1].CNPs())
	if util < 0.9 {
		t.Errorf("utilisation %.3f, want ≥ 0.9", util)
	}
	if share := (r0 + r1) / 2; r0 < 0.8*share || r1 < 0.8*share {
		t.Errorf("rates %.3g and %.3g: want each within 20%% of %.3g", r0, r1, share)
	}
	if meanQ > kmax {
		t.Errorf("mean queue %.0f B above Kmax", meanQ)
	}
	if l.rps[0].CNPs() == 0 || l.rps[1].CNPs() == 0 {
		t.Error("a flow never received a CNP: the loop did not close")
	}
}
