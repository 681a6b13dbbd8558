// Package cctest is the shared harness of the cc algorithms' unit tests, in the style of
// x/net/quic's congestion_reno_test.go: a flow starts at a fixed time, every step (sent,
// feedback, advance) is logged, and want checks with a reason sit between the steps.
//
// It holds only what every algorithm's test needs: the clock, snd_nxt, driving the
// cc.Algorithm interface and checking its Window, Rate and packet window. Each package
// keeps its own helpers for the feedback its algorithm reads (RTT, INT hops, MPD, CNPs)
// and for its internal state, wrapping a Flow.
package cctest

import (
	"math"
	"strings"
	"testing"

	"reef/cc"
	"reef/units"
)

// Flow drives one algorithm through the cc.Algorithm interface with an explicit clock.
type Flow struct {
	// T is the test the flow logs to and fails.
	T testing.TB
	// Alg is the algorithm under test.
	Alg cc.Algorithm
	// Now is the flow's clock: every call passes it as now.
	Now units.Time
	// Next is snd_nxt, the packet number Sent gives the next packet.
	Next uint64
}

// New starts a flow of alg at time start.
func New(t testing.TB, alg cc.Algorithm, start units.Time) *Flow {
	return &Flow{T: t, Alg: alg, Now: start}
}

// Advance moves the clock forward by d, firing the algorithm's timer (Deadline,
// OnDeadline) each time it falls due on the way, as the transport would.
func (f *Flow) Advance(d units.Time) {
	f.T.Helper()
	end := f.Now + d
	for f.Alg.Deadline() <= end {
		f.Now = f.Alg.Deadline()
		f.Alg.OnDeadline(f.Now)
		f.T.Logf("%v timer: window %v rate %v", f.Now, f.Alg.Window(), f.Alg.Rate())
	}
	f.Now = end
	f.T.Logf("advance %v -> %v", d, f.Now)
}

// Sent reports n packets of size bytes put on the wire at Now, numbered from Next.
func (f *Flow) Sent(n int, size units.Bytes) {
	f.T.Helper()
	for range n {
		f.Alg.OnSend(f.Now, f.Next, size)
		f.Next++
	}
	f.T.Logf("%v sent %d × %v, snd_nxt %d", f.Now, n, size, f.Next)
}

// Feedback delivers fb at Now and logs it with the window and rate it left.
func (f *Flow) Feedback(fb cc.Feedback) {
	f.T.Helper()
	f.Alg.OnFeedback(f.Now, &fb)
	f.T.Logf("%v feedback kind %d acked %d pkts (seq %d) rtt %v ece %v -> window %v rate %v",
		f.Now, fb.Kind, fb.AckedPackets, fb.AckSeq, fb.RTT, fb.ECE, f.Alg.Window(), f.Alg.Rate())
}

// WantWindow checks that Window is want bytes, within tol bytes.
func (f *Flow) WantWindow(reason string, want, tol float64) {
	f.T.Helper()
	if got := float64(f.Alg.Window()); math.Abs(got-want) > tol {
		f.T.Errorf("%s: window = %.0f B, want %.1f B", reason, got, want)
	}
}

// WantRate checks that Rate is want bit/s, within tol bit/s.
func (f *Flow) WantRate(reason string, want, tol float64) {
	f.T.Helper()
	if got := float64(f.Alg.Rate()); math.Abs(got-want) > tol {
		f.T.Errorf("%s: rate = %.0f bit/s, want %.0f", reason, got, want)
	}
}

// Cwnder is an algorithm that keeps its window in packets (Swift and its variants,
// Poseidon).
type Cwnder interface{ Cwnd() float64 }

// WantCwnd checks the algorithm's packet window: |Cwnd − want| ≤ rel·max(1, want).
// It fails the test if the algorithm has no Cwnd method.
func (f *Flow) WantCwnd(reason string, want, rel float64) {
	f.T.Helper()
	c, ok := f.Alg.(Cwnder)
	if !ok {
		f.T.Fatalf("%s: %T has no packet window (Cwnd)", reason, f.Alg)
		return
	}
	if got := c.Cwnd(); math.Abs(got-want) > rel*math.Max(1, want) {
		f.T.Errorf("%s: cwnd = %.6f packets, want %.6f", reason, got, want)
	}
}

// WantValidate applies edit to a fresh defaults() and checks Params.Validate: no error
// when want is "", otherwise an error whose text contains want (the field's name and
// unit). name labels the case in the failure.
func WantValidate[PP cc.Params](t testing.TB, name string, defaults func() PP, edit func(PP), want string) {
	t.Helper()
	p := defaults()
	edit(p)
	err := p.Validate()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: Validate() = %v, want no error", name, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: Validate() = %v, want an error containing %q", name, err, want)
	}
}
