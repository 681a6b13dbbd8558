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

// AddZeros(n) records what n calls of Add(0) do, whatever was recorded before, and a
// Summary cached before it is recomputed.
func TestAddZerosIsAddOfZero(t *testing.T) {
	tests := []struct {
		name   string
		before []units.Time
		zeros  uint64
	}{
		{"empty", nil, 0},
		{"zeros only", nil, 7},
		{"zeros move the median", []units.Time{100, 200, 300}, 4},
		{"nothing added", []units.Time{5, 50}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a, b Durations
			for _, v := range tc.before {
				a.Add(v)
				b.Add(v)
			}
			a.Summary() // cached before the zeros come
			a.AddZeros(tc.zeros)
			for range tc.zeros {
				b.Add(0)
			}
			if sa, sb := a.Summary(), b.Summary(); sa != sb {
				t.Fatalf("summaries %+v, %+v", sa, sb)
			}
			if a != b { // the buckets too, the summaries now cached alike
				t.Fatalf("AddZeros(%d) and %d × Add(0) record different buckets", tc.zeros, tc.zeros)
			}
		})
	}
}
