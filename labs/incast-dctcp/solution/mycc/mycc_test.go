package mycc

import (
	"math"
	"testing"

	"reef/cc"
)

// newFlow is my-dctcp for a flow of 1000-byte packets.
func newFlow(t *testing.T) *MyCC {
	t.Helper()
	a, err := New(cc.Env{MSS: 1000}, DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// window sends n packets and acks them, the marked ones with ECE.
func window(a *MyCC, n int, marked func(i int) bool) {
	start := a.sndNxt
	for i := range n {
		a.OnSend(0, start+uint64(i), 1000)
	}
	for i := range n {
		a.OnFeedback(0, &cc.Feedback{Kind: cc.Ack, AckedBytes: 1000, AckedPackets: 1, AckSeq: start + uint64(i), ECE: marked(i)})
	}
}

// α follows the marked fraction, updated once per window of data, and a mark cuts the
// window by α/2: windows without marks let α decay by (1 − g) each, and the cut after
// them is gentler than a halving.
func TestAlphaAndCut(t *testing.T) {
	for _, unmarked := range []int{0, 1, 4, 20} {
		a := newFlow(t)
		window(a, 1, func(int) bool { return false }) // the first ACK ends the first window
		for range unmarked {
			window(a, 10, func(int) bool { return false })
		}
		if want := math.Pow(15.0/16, float64(1+unmarked)); math.Abs(a.alpha-want) > 1e-12 {
			t.Errorf("%d clean windows: α = %g, want %g", unmarked, a.alpha, want)
		}
		before := float64(a.Window())
		window(a, 1, func(int) bool { return true })
		if want := before * (1 - a.alpha/2); math.Abs(float64(a.Window())-want) > 1 {
			t.Errorf("%d clean windows: window %g → %v after a mark with α %g, want %g", unmarked, before, a.Window(), a.alpha, want)
		}
		if unmarked >= 4 && float64(a.Window()) < 0.6*before {
			t.Errorf("%d clean windows: a mark cut the window from %g to %v, as hard as a halving", unmarked, before, a.Window())
		}
	}
}

// A second mark in the same round trip does not cut again.
func TestOneCutPerRoundTrip(t *testing.T) {
	a := newFlow(t)
	window(a, 10, func(int) bool { return false })
	window(a, 10, func(i int) bool { return i < 2 })
	w := a.Window()
	a.OnFeedback(0, &cc.Feedback{Kind: cc.Ack, AckedBytes: 1000, AckSeq: a.holdTill - 1, ECE: true})
	if a.Window() != w {
		t.Errorf("window %v → %v on a second mark within the round trip", w, a.Window())
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []Params{{G: 0, InitWindow: 10, MinWindow: 2}, {G: 0.1, InitWindow: 0, MinWindow: 2}, {G: 0.1, InitWindow: 10}} {
		if _, err := New(cc.Env{MSS: 1000}, &p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if _, err := New(cc.Env{}, DefaultParams()); err == nil {
		t.Error("MSS 0 accepted")
	}
}
