package daemon

import (
	"math/bits"

	"reef/emulator/results"
	"reef/units"
)

// lateness is a log-linear histogram of release lateness (Poll's now − Due) with 16
// sub-buckets per power of two, so quantiles are within 6.25 % above the true value; it
// allocates nothing after construction. The switch pipeline keeps the same summary per
// port (switchd.Lateness).
type lateness struct {
	b   [64 * 16]uint64
	n   uint64
	max units.Time
}

func lateBucket(v uint64) int {
	if v < 16 {
		return int(v)
	}
	e := bits.Len64(v) - 5
	return (e+1)*16 + int(v>>uint(e)&15)
}

// lateTop is the largest value in bucket i.
func lateTop(i int) uint64 {
	if i < 16 {
		return uint64(i)
	}
	e := uint(i/16 - 1)
	return uint64(16+i%16)<<e + (1 << e) - 1
}

func (h *lateness) add(v units.Time) {
	v = max(v, 0)
	h.b[lateBucket(uint64(v))]++
	h.n++
	h.max = max(h.max, v)
}

func (h *lateness) quantile(q float64) units.Time {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n-1)) + 1
	var seen uint64
	for i, c := range h.b {
		seen += c
		if seen >= rank {
			return min(units.Time(lateTop(i)), h.max)
		}
	}
	return h.max
}

func (h *lateness) summary() results.Lateness {
	return results.Lateness{Count: int64(h.n), P50: h.quantile(0.5), P99: h.quantile(0.99), Max: h.max}
}
