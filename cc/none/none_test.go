package none

import (
	"testing"

	"reef/cc"
	"reef/units"
)

func TestNoneIgnoresSignals(t *testing.T) {
	for _, tc := range []struct {
		window units.Bytes
		want   units.Bytes
	}{{0, units.MaxBytes}, {64 * units.Kilobyte, 64 * units.Kilobyte}} {
		spec, err := cc.Lookup("none")
		if err != nil {
			t.Fatal(err)
		}
		p := spec.Defaults().(*Params)
		p.MaxWindow = tc.window
		a, err := spec.New(cc.Env{LineRate: units.Gbps}, p)
		if err != nil {
			t.Fatal(err)
		}
		a.OnFeedback(10, &cc.Feedback{ECE: true, RTT: units.Second})
		a.OnLoss(20, 1500)
		a.OnTimeout(30)
		// "no congestion control": a mark, a loss and a timeout change nothing
		if a.Window() != tc.want || a.Rate() != 0 || a.Deadline() != units.Never {
			t.Fatalf("window %v rate %v deadline %v; want %v, 0, never", a.Window(), a.Rate(), a.Deadline(), tc.want)
		}
	}
	if err := (&Params{MaxWindow: -1}).Validate(); err == nil {
		t.Fatal("negative max_window accepted")
	}
	if err := (&Params{Rate: -1}).Validate(); err == nil {
		t.Fatal("negative rate accepted")
	}
	a, _ := cc.Lookup("none")
	alg, _ := a.New(cc.Env{}, &Params{Rate: 500 * units.Mbps})
	alg.OnLoss(1, 1500)
	if alg.Rate() != 500*units.Mbps {
		t.Fatalf("rate %v, want the configured 500Mbps whatever happens", alg.Rate())
	}
}
