package switchd

import (
	"testing"

	"reef/units"
	"reef/wire"
)

// A burst of six 1500 B frames at t=0: frame i finds i frames queued (the first is still
// being serialised). Step marking marks iff the backlog found is > K.
func TestECNStep(t *testing.T) {
	const pkt = 1500
	tests := []struct {
		name     string
		k        units.Bytes
		ecn      uint8
		plain    bool
		perPort  bool
		wantMark []bool
	}{
		{"K = 3 pkts", 3 * pkt, wire.ECT0, false, false, []bool{false, false, false, false, true, true}},
		{"K = 3 pkts - 1 B", 3*pkt - 1, wire.ECT0, false, false, []bool{false, false, false, true, true, true}},
		{"K = 3 pkts + 1 B", 3*pkt + 1, wire.ECT0, false, false, []bool{false, false, false, false, true, true}},
		{"K = 4 pkts", 4 * pkt, wire.ECT1, false, false, []bool{false, false, false, false, false, true}},
		{"Not-ECT never", 0, wire.NotECT, false, false, []bool{false, false, false, false, false, false}},
		{"plain UDP is marked too", 3 * pkt, wire.ECT0, true, false, []bool{false, false, false, false, true, true}},
		{"per-port override", 3 * pkt, wire.ECT0, false, true, []bool{false, false, false, false, true, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(2)
			step := ECNConfig{Mode: ECNStep, K: tc.k}
			if tc.perPort {
				cfg.ECN = ECNConfig{Mode: ECNOff}
				cfg.Ports[1].ECN = &step
			} else {
				cfg.ECN = step
			}
			s := mustNew(t, cfg)
			var in []arrival
			for range tc.wantMark {
				in = append(in, arrival{0, 0, pk{ecn: tc.ecn, plain: tc.plain}.build(t)})
			}
			out := run(s, in, units.Second)
			if len(out) != len(tc.wantMark) {
				t.Fatalf("%d frames out, want %d", len(out), len(tc.wantMark))
			}
			var marks uint64
			for i, o := range out {
				v, _ := wire.Classify(o.frame)
				got := v.ECN() == wire.CE
				if got != tc.wantMark[i] {
					t.Errorf("frame %d: CE %v, want %v", i, got, tc.wantMark[i])
				}
				if !got && v.ECN() != tc.ecn {
					t.Errorf("frame %d: ECN %d changed from %d", i, v.ECN(), tc.ecn)
				}
				if got {
					marks++
				}
				if !ipChecksumOK(o.frame) {
					t.Errorf("frame %d: bad IPv4 checksum after marking", i)
				}
			}
			if st := s.Stats()[1]; st.ECNMarks != marks {
				t.Errorf("ECNMarks %d, frames marked %d", st.ECNMarks, marks)
			}
		})
	}
}

func TestRED(t *testing.T) {
	m := newMarker(ECNConfig{Mode: ECNRED, Min: 1000, Max: 3000, PMax: 0.5}, newTestRand(7))
	tests := []struct {
		qlen     units.Bytes
		min, max float64 // bounds on the marked fraction
	}{
		{0, 0, 0},
		{1000, 0, 0},     // at min: never
		{2000, 0.2, 0.3}, // halfway: pmax/2 = 0.25
		{2999, 0.45, 0.55},
		{3000, 1, 1}, // at and above max: always
		{10000, 1, 1},
	}
	for _, tc := range tests {
		n := 0
		for i := 0; i < 4000; i++ {
			if m.mark(tc.qlen, 100000) {
				n++
			}
		}
		if f := float64(n) / 4000; f < tc.min || f > tc.max {
			t.Errorf("qlen %v: marked %.3f, want in [%.2f, %.2f]", tc.qlen, f, tc.min, tc.max)
		}
	}
}
