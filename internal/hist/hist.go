// Package hist is a fixed-size log-linear histogram of durations. The switch pipeline
// and the host core keep one per port for release lateness and schedule skew, the host
// daemon one for its NIC's lateness; it is pure (no clock, no I/O) and allocates
// nothing after construction.
package hist

import (
	"math"
	"math/bits"

	"reef/units"
)

// Summary summarises a histogram: quantiles are within 6.25 % above the true value
// (16 sub-buckets per power of two); Max is exact.
type Summary struct {
	Count         uint64
	P50, P99, Max units.Time
}

// Durations is a log-linear histogram of non-negative durations: values below 16 ns
// have their own bucket, larger ones keep their top 5 significant bits. The zero value
// is empty and ready to use. It is 8 KiB: keep it out of line of hot structures.
type Durations struct {
	// n and max come first, on the cache line of the lowest buckets: an Add of a small
	// value (a release on time, the sim's every release) touches one line, not two.
	n   uint64
	max units.Time
	b   [64 * 16]uint64
	sum Summary // as of sum.Count == n: quantiles are computed on demand, once
}

func bucketOf(v uint64) int {
	if v < 16 {
		return int(v)
	}
	e := bits.Len64(v) - 5
	return (e+1)*16 + int(v>>uint(e)&15)
}

// bucketTop is the largest value that falls in bucket i.
func bucketTop(i int) uint64 {
	if i < 16 {
		return uint64(i)
	}
	e := uint(i/16 - 1)
	lo := uint64(16+i%16) << e
	return lo + (1 << e) - 1
}

// Add records v; negative values count as 0.
func (h *Durations) Add(v units.Time) {
	v = max(v, 0)
	h.b[bucketOf(uint64(v))]++
	h.n++
	h.max = max(h.max, v)
}

// AddZeros records n values of 0 (what n calls of Add(0) record). A hot path that
// mostly records 0 (the sim's lateness and skew, where nothing is late) counts them in
// its own hot structure and hands them over before the histogram is read, instead of
// touching the histogram's line for every value.
func (h *Durations) AddZeros(n uint64) {
	h.b[0] += n
	h.n += n
}

// Count is the number of values recorded.
func (h *Durations) Count() uint64 { return h.n }

// Quantile returns the upper edge of the bucket holding the q-quantile (nearest rank),
// capped at the maximum; 0 when empty.
func (h *Durations) Quantile(q float64) units.Time {
	if h.n == 0 {
		return 0
	}
	rank := max(1, uint64(math.Ceil(q*float64(h.n))))
	var seen uint64
	for i := range bucketOf(uint64(h.max)) + 1 { // no value lies above max's bucket
		seen += h.b[i]
		if seen >= rank {
			return min(units.Time(bucketTop(i)), h.max)
		}
	}
	return h.max
}

// Summary returns the summary of the values recorded so far. Its quantiles walk the
// buckets, so it is cached until the next Add: a driver sampling often pays for them
// only when something was recorded in between.
func (h *Durations) Summary() Summary {
	if h.sum.Count != h.n || h.n == 0 {
		h.sum = Summary{Count: h.n, P50: h.Quantile(0.50), P99: h.Quantile(0.99), Max: h.max}
	}
	return h.sum
}
