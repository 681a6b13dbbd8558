package cctest

import (
	"fmt"
	"testing"

	"reef/cc"
	"reef/units"
)

// timerAlg is a fake with a periodic timer, a packet window and a record of calls.
type timerAlg struct {
	next, period units.Time
	fired        []units.Time
	sent         []uint64
	fb           []cc.Feedback
	cwnd         float64
}

func (a *timerAlg) OnSend(_ units.Time, seq uint64, _ units.Bytes) { a.sent = append(a.sent, seq) }
func (a *timerAlg) OnFeedback(_ units.Time, fb *cc.Feedback)       { a.fb = append(a.fb, *fb) }
func (a *timerAlg) OnLoss(units.Time, units.Bytes)                 {}
func (a *timerAlg) OnTimeout(units.Time)                           {}
func (a *timerAlg) Deadline() units.Time                           { return a.next }
func (a *timerAlg) OnDeadline(now units.Time) {
	a.fired = append(a.fired, now)
	a.next = now + a.period
}
func (a *timerAlg) Window() units.Bytes { return units.Bytes(a.cwnd * 1000) }
func (a *timerAlg) Rate() units.Rate    { return units.Gbps }
func (a *timerAlg) Cwnd() float64       { return a.cwnd }

// noCwnd is an algorithm without a packet window.
type noCwnd struct{ cc.Algorithm }

// recorder is a testing.TB that keeps failures instead of failing the real test.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper()                   {}
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Errorf(f string, a ...any) { r.errors = append(r.errors, fmt.Sprintf(f, a...)) }
func (r *recorder) Fatalf(f string, a ...any) {
	r.errors, r.fatal = append(r.errors, fmt.Sprintf(f, a...)), true
}

func TestAdvanceFiresTimersOnTheWay(t *testing.T) {
	a := &timerAlg{next: 15, period: 10, cwnd: 1}
	f := New(t, a, 0)
	f.Advance(40) // timer due at 15, 25, 35; 45 is past the end
	if want := []units.Time{15, 25, 35}; fmt.Sprint(a.fired) != fmt.Sprint(want) {
		t.Errorf("timer fired at %v, want %v (each deadline reached, none past the end)", a.fired, want)
	}
	if f.Now != 40 {
		t.Errorf("Now = %v after Advance(40) from 0, want 40", f.Now)
	}
	a.next = units.Never
	f.Advance(1000)
	if len(a.fired) != 3 || f.Now != 1040 {
		t.Errorf("no timer wanted: fired %v, Now %v; want 3 firings and Now 1040", a.fired, f.Now)
	}
}

func TestSentNumbersPacketsAndFeedbackDelivers(t *testing.T) {
	a := &timerAlg{next: units.Never, cwnd: 1}
	f := New(t, a, units.Second)
	f.Sent(3, 1000)
	f.Sent(1, 1000)
	if fmt.Sprint(a.sent) != "[0 1 2 3]" || f.Next != 4 {
		t.Errorf("sent %v, snd_nxt %d; want packets 0..3 and snd_nxt 4", a.sent, f.Next)
	}
	f.Feedback(cc.Feedback{Kind: cc.Ack, AckSeq: 2, AckedPackets: 1})
	if len(a.fb) != 1 || a.fb[0].AckSeq != 2 {
		t.Errorf("feedback seen %+v, want one ACK of packet 2", a.fb)
	}
}

func TestWantChecks(t *testing.T) {
	a := &timerAlg{next: units.Never, cwnd: 10}
	for _, tc := range []struct {
		name      string
		check     func(*Flow)
		wantFails bool
	}{
		{"window within tolerance", func(f *Flow) { f.WantWindow("w", 10000.5, 1) }, false},
		{"window off by more than tolerance", func(f *Flow) { f.WantWindow("w", 10002, 1) }, true},
		{"rate exact", func(f *Flow) { f.WantRate("r", 1e9, 1) }, false},
		{"rate off", func(f *Flow) { f.WantRate("r", 0.9e9, 1) }, true},
		{"cwnd within relative tolerance", func(f *Flow) { f.WantCwnd("c", 10*(1+1e-10), 1e-9) }, false},
		{"cwnd outside relative tolerance", func(f *Flow) { f.WantCwnd("c", 10*(1+1e-8), 1e-9) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			tc.check(New(r, a, 0))
			if got := len(r.errors) > 0; got != tc.wantFails {
				t.Errorf("failed = %v (%q), want %v", got, r.errors, tc.wantFails)
			}
		})
	}
	r := &recorder{TB: t}
	New(r, noCwnd{a}, 0).WantCwnd("no packet window", 1, 1e-9)
	if !r.fatal {
		t.Error("WantCwnd on an algorithm without Cwnd did not fail the test")
	}
}

type params struct{ Window units.Bytes }

func (p *params) Validate() error {
	if p.Window <= 0 {
		return fmt.Errorf("fake: window must be > 0 bytes, got %v", p.Window)
	}
	return nil
}

func TestWantValidate(t *testing.T) {
	defaults := func() *params { return &params{Window: 1000} }
	for _, tc := range []struct {
		name      string
		edit      func(*params)
		want      string
		wantFails bool
	}{
		{"valid defaults, no error wanted", func(*params) {}, "", false},
		{"bad field named with its unit", func(p *params) { p.Window = 0 }, "window must be > 0 bytes", false},
		{"an error was wanted but Validate passed", func(*params) {}, "window", true},
		{"no error wanted but Validate failed", func(p *params) { p.Window = -1 }, "", true},
		{"the error names another field", func(p *params) { p.Window = 0 }, "rate", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			WantValidate(r, tc.name, defaults, tc.edit, tc.want)
			if got := len(r.errors) > 0; got != tc.wantFails {
				t.Errorf("failed = %v (%q), want %v", got, r.errors, tc.wantFails)
			}
		})
	}
}
