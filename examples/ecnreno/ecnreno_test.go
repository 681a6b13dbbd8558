package ecnreno

import (
	"strings"
	"testing"

	"reef/cc"
	"reef/units"
)

const mss = 1000

func newFlow(t *testing.T) *ECNReno {
	t.Helper()
	spec, err := cc.Lookup(Name)
	if err != nil {
		t.Fatal(err) // registered by init
	}
	a, err := spec.New(cc.Env{MSS: mss, PacketSize: mss + 100, LineRate: 10 * units.Gbps, BaseRTT: 10 * units.Microsecond}, spec.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	return a.(*ECNReno)
}

// TestAIMD scripts one flow: a window of clean ACKs adds one packet; the first ECN-echo
// halves the window, a second in the same round trip does not; a loss after the round
// trip halves it again.
func TestAIMD(t *testing.T) {
	a := newFlow(t)
	if a.Window() != 10*mss {
		t.Fatalf("initial window %v, want 10 packets", a.Window())
	}
	for seq := range uint64(10) {
		a.OnSend(0, seq, mss)
	}
	for seq := range uint64(10) {
		a.OnFeedback(0, &cc.Feedback{AckedBytes: mss, AckedPackets: 1, AckSeq: seq})
	}
	if w := a.Window(); w < 10*mss+mss*9/10 || w > 11*mss {
		t.Fatalf("after a window of ACKs: %v, want about 11 packets", w)
	}
	for seq := uint64(10); seq < 21; seq++ {
		a.OnSend(0, seq, mss)
	}
	before := a.Window()
	a.OnFeedback(0, &cc.Feedback{AckedBytes: mss, AckedPackets: 1, AckSeq: 10, ECE: true})
	if got := a.Window(); got != before/2 {
		t.Fatalf("after ECE: %v, want half of %v", got, before)
	}
	a.OnFeedback(0, &cc.Feedback{AckedBytes: mss, AckedPackets: 1, AckSeq: 11, ECE: true})
	if got := a.Window(); got != before/2 {
		t.Fatalf("a second ECE in the same round trip cut again: %v", got)
	}
	a.OnSend(0, 21, mss)
	a.OnFeedback(0, &cc.Feedback{AckedBytes: mss, AckedPackets: 1, AckSeq: 21})
	w := a.Window()
	a.OnLoss(0, mss)
	if got := a.Window(); got != w/2 {
		t.Fatalf("after a loss in the next round trip: %v, want half of %v", got, w)
	}
	a.OnTimeout(0)
	if a.Window() != mss {
		t.Fatalf("after a timeout: %v, want the 1-packet minimum", a.Window())
	}
}

func TestParams(t *testing.T) {
	spec, err := cc.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, p := range spec.Parameters() {
		names = append(names, p.Name+"="+p.Default)
	}
	if got := strings.Join(names, " "); got != "ai=1 beta=0.5 init_window=10 min_window=1" {
		t.Errorf("parameters %s", got)
	}
	for _, bad := range []Params{{AI: 0, Beta: 0.5, MinWindow: 1}, {AI: 1, Beta: 1, MinWindow: 1}, {AI: 1, Beta: 0.5}} {
		if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), Name+": ") {
			t.Errorf("%+v: err = %v, want one naming the algorithm and the field", bad, err)
		}
	}
}
