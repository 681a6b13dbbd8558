package hist

import (
	"testing"

	"reef/units"
)

func TestDurations(t *testing.T) {
	tests := []struct {
		name          string
		values        func(add func(units.Time))
		p50, p99, max units.Time
	}{
		{"empty", func(func(units.Time)) {}, 0, 0, 0},
		{"small values are exact", func(add func(units.Time)) {
			for v := units.Time(0); v < 10; v++ {
				add(v)
			}
		}, 4, 9, 9}, // nearest rank: the 5th and 10th of 0..9
		{"1..1000 ns", func(add func(units.Time)) {
			for v := units.Time(1); v <= 1000; v++ {
				add(v)
			}
		}, 511, 991, 1000}, // bucket tops within 6.25 % of 500 and 990
		{"negative counts as 0", func(add func(units.Time)) { add(-5) }, 0, 0, 0},
		{"one huge value", func(add func(units.Time)) { add(units.Second) }, units.Second, units.Second, units.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h Durations
			tc.values(h.Add)
			s := h.Summary()
			if s.P50 != tc.p50 || s.P99 != tc.p99 || s.Max != tc.max {
				t.Errorf("%+v; want p50 %v p99 %v max %v", s, tc.p50, tc.p99, tc.max)
			}
		})
	}
	for v := uint64(0); v < 1<<20; v = v*9/8 + 1 {
		i := bucketOf(v)
		if bucketTop(i) < v || (i > 0 && bucketTop(i-1) >= v) {
			t.Fatalf("value %d in bucket %d [%d, %d]", v, i, bucketTop(i-1)+1, bucketTop(i))
		}
	}
}

func TestQuantileWithinBucketError(t *testing.T) {
	var h Durations
	for v := units.Time(1); v <= 10000; v++ {
		h.Add(v * 37)
	}
	for _, q := range []float64{0.5, 0.99} {
		want := float64(units.Time(q*10000)) * 37 // nearest rank
		got := float64(h.Quantile(q))
		if got < want || got > want*1.0625 {
			t.Errorf("q%.2f = %v, want within 6.25%% above %v", q, got, want)
		}
	}
	if h.Count() != 10000 {
		t.Errorf("count %d, want 10000", h.Count())
	}
}
