package daemon

import (
	"testing"

	"reef/units"
)

func TestLatenessQuantiles(t *testing.T) {
	tests := []struct {
		name          string
		values        []units.Time
		p50, p99, max units.Time
	}{
		{"empty", nil, 0, 0, 0},
		{"small exact (rank floor(q(n-1))+1)", []units.Time{1, 2, 3, 4, 5}, 3, 4, 5},
		{"negative counts as zero", []units.Time{-5, -5, -5}, 0, 0, 0},
		{"one outlier", append(make([]units.Time, 99), 100*units.Microsecond), 0, 0, 100 * units.Microsecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h lateness
			for _, v := range tc.values {
				h.add(v)
			}
			s := h.summary()
			if s.P50 != tc.p50 || s.P99 != tc.p99 || s.Max != tc.max || s.Count != int64(len(tc.values)) {
				t.Fatalf("summary = %+v, want p50 %v p99 %v max %v count %d", s, tc.p50, tc.p99, tc.max, len(tc.values))
			}
		})
	}
}

func TestLatenessWithinBucketError(t *testing.T) {
	var h lateness
	for v := units.Time(1); v <= 10000; v++ {
		h.add(v * 37)
	}
	for _, q := range []float64{0.5, 0.99} {
		want := float64(units.Time(q*9999)+1) * 37
		got := float64(h.quantile(q))
		if got < want || got > want*1.0625 {
			t.Errorf("q%.2f = %v, want within 6.25%% above %v", q, got, want)
		}
	}
}
