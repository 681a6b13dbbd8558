// Package metrics holds the analysis functions reef computes over a run's raw results
// (emulator/results): goodput over a window, Jain's index, max-min fair shares,
// convergence time, throughput variation, percentiles and FCT slowdown. They are pure
// functions over numbers and samples; emulator/analysis and emulator/expect call them so
// every backend's run is analysed the same way.
package metrics

import (
	"math"
	"slices"

	"reef/emulator/results"
	"reef/units"
)

// Percentile returns the p-th percentile (0 ≤ p ≤ 100) of xs by the nearest-rank
// definition: the smallest sample x such that at least p% of the samples are ≤ x, that
// is sorted[ceil(p/100·n)−1] (p = 0 gives the minimum, p = 100 the maximum). It always
// returns one of the samples, never an interpolation. xs is not modified; NaN when xs is
// empty.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return percentileSorted(s, p)
}

// Median returns the middle of xs: the middle sample for an odd count, the mean of the
// two middle samples for an even one (so +Inf stays +Inf: a median of convergence times
// where most never converged is never finite). xs is not modified; NaN when xs is empty.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func percentileSorted(s []float64, p float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	// (p·n/100 with a tolerance, so 99.9% of 1000 is rank 999 despite float rounding)
	rank := int(math.Ceil(p*float64(len(s))/100 - 1e-9))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

// Summary is the usual set of percentiles of one distribution.
type Summary struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	Min   float64 `json:"min"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// Summarize computes Summary over xs (all NaN but Count when xs is empty).
func Summarize(xs []float64) Summary {
	s := slices.Clone(xs)
	slices.Sort(s)
	return Summary{
		Count: len(s), Mean: Mean(s), Min: percentileSorted(s, 0),
		P50: percentileSorted(s, 50), P90: percentileSorted(s, 90), P99: percentileSorted(s, 99),
		P999: percentileSorted(s, 99.9), Max: percentileSorted(s, 100),
	}
}

// Mean is the arithmetic mean of xs (NaN when empty).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// StdDev is the population standard deviation of xs (NaN when empty).
func StdDev(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	m := Mean(xs)
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(xs)))
}

// Jain is Jain's fairness index (Σx)² / (n·Σx²): 1 when all xs are equal, 1/n when one
// takes everything. NaN when xs is empty or all zero.
func Jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if len(xs) == 0 || s2 == 0 {
		return math.NaN()
	}
	return s * s / (float64(len(xs)) * s2)
}

// AckedAt is a flow's cumulative acknowledged bytes at t, interpolated linearly between
// its samples. The curve starts at 0 bytes at the flow's start and stays at the last
// sample's value after it (the flow stopped or the run ended).
func AckedAt(start units.Time, samples []results.FlowSample, t units.Time) float64 {
	prevT, prevA := start, 0.0
	for _, s := range samples {
		if s.T < prevT {
			continue
		}
		if t <= s.T {
			if t <= prevT || s.T == prevT {
				if t < prevT {
					return 0
				}
				return prevA
			}
			f := float64(t-prevT) / float64(s.T-prevT)
			return prevA + f*(float64(s.Acked)-prevA)
		}
		prevT, prevA = s.T, float64(s.Acked)
	}
	if t < start {
		return 0
	}
	return prevA
}

// Goodput is the flow's goodput over [from, to): the acknowledged payload bytes in the
// window (from the cumulative Acked samples, see AckedAt) times 8 over the window's
// length. 0 when to <= from.
func Goodput(start units.Time, samples []results.FlowSample, from, to units.Time) units.Rate {
	if to <= from {
		return 0
	}
	b := AckedAt(start, samples, to) - AckedAt(start, samples, from)
	return units.Rate(math.Round(b * 8e9 / float64(to-from)))
}

// AckedExact is flow f's acknowledged bytes at t from an exact counter: 0 up to its
// start, a snapshot the backend took at t (results.Flow.Edges: the window's edges, the
// flow's stop), or, once it finished by t, its size. ok is false when the run has no
// exact counter at t.
func AckedExact(f *results.Flow, t units.Time) (acked float64, ok bool) {
	switch {
	case t <= f.Start:
		return 0, true
	case f.Finish > 0 && t >= f.Finish && f.Size > 0:
		return float64(f.Size), true
	}
	for _, e := range f.Edges {
		if e.T == t {
			return float64(e.Acked), true
		}
	}
	return 0, false
}

// WindowGoodput is f's goodput over [from, to): from exact counters at both ends
// (AckedExact), so it does not depend on the sample interval, or, where the run has
// none at an end, interpolated between samples there (AckedAt); exact says which. 0
// when to <= from.
func WindowGoodput(f *results.Flow, from, to units.Time) (r units.Rate, exact bool) {
	if to <= from {
		return 0, true
	}
	exact = true
	at := func(t units.Time) float64 {
		if v, ok := AckedExact(f, t); ok {
			return v
		}
		exact = false
		return AckedAt(f.Start, f.Samples, t)
	}
	b := at(to) - at(from)
	return units.Rate(math.Round(b * 8e9 / float64(to-from))), exact
}

// PortCounterAt is a cumulative counter of port p (read by get) at t: exact from a
// snapshot the backend took at t (results.Port.Edges), else interpolated between the
// port's samples (ok false).
func PortCounterAt(p *results.Port, t units.Time, get func(*results.PortSample) int64) (v float64, ok bool) {
	for i := range p.Edges {
		if p.Edges[i].T == t {
			return float64(get(&p.Edges[i])), true
		}
	}
	ss := p.Samples
	prevT, prev := units.Time(0), 0.0
	for i := range ss {
		smp := &ss[i]
		if t <= smp.T {
			if smp.T == prevT {
				return float64(get(smp)), false
			}
			return prev + float64(t-prevT)/float64(smp.T-prevT)*(float64(get(smp))-prev), false
		}
		prevT, prev = smp.T, float64(get(smp))
	}
	return prev, false
}

// Point is one sample of a flow's rate (bit/s) and, where known, its fair share then.
type Point struct {
	T     units.Time
	Rate  float64
	Share float64
}

// RateSeries turns cumulative Acked samples into a rate series: at each sample time T the
// goodput over (T−window, T] (clamped at the flow's start), a moving average that smooths
// the per-packet granularity of short sample intervals. window ≤ 0 uses the distance to
// the previous sample.
func RateSeries(start units.Time, samples []results.FlowSample, window units.Time) []Point {
	out := make([]Point, 0, len(samples))
	prev := start
	for _, s := range samples {
		from := s.T - window
		if window <= 0 {
			from = prev
		}
		if from < start {
			from = start
		}
		prev = s.T
		if s.T <= from {
			continue
		}
		out = append(out, Point{T: s.T, Rate: float64(Goodput(start, samples, from, s.T))})
	}
	return out
}

// ConvergenceTime is the time from `from` until every flow's rate is within tol (0.1 for
// 10%) of its fair share and stays there up to `to`: for each flow it finds the last
// sample in (from, to] outside the band and takes the next sample; the answer is the
// latest of these minus from. Points whose Share is ≤ 0 (the flow was not active) are
// ignored. ok is false when some flow is still outside the band at its last sample in the
// window, or no flow has a sample there.
func ConvergenceTime(series [][]Point, from, to units.Time, tol float64) (d units.Time, ok bool) {
	latest := units.Time(-1)
	for _, ps := range series {
		var in []Point
		for _, p := range ps {
			if p.T > from && p.T <= to && p.Share > 0 {
				in = append(in, p)
			}
		}
		if len(in) == 0 {
			continue
		}
		first := 0
		for i, p := range in {
			if math.Abs(p.Rate-p.Share) > tol*p.Share {
				first = i + 1
			}
		}
		if first == len(in) {
			return 0, false
		}
		if t := in[first].T; t > latest {
			latest = t
		}
	}
	if latest < 0 {
		return 0, false
	}
	return latest - from, true
}

// Slowdown is a flow's FCT divided by its ideal FCT (on an empty network); NaN when the
// ideal is not positive.
func Slowdown(fct, ideal units.Time) float64 {
	if ideal <= 0 {
		return math.NaN()
	}
	return float64(fct) / float64(ideal)
}

// IdealFCT is the completion time of a size-byte message alone on its path: one base
// round trip (the first byte's propagation and per-hop serialisation there and the ACK's
// way back, baseRTT) plus the time the bottleneck takes to serialise the rest of the
// payload.
func IdealFCT(size units.Bytes, bottleneck units.Rate, baseRTT units.Time) units.Time {
	return baseRTT + bottleneck.TxTime(size)
}

// Bucket is a flow-size range [Min, Max) for FCT breakdowns.
type Bucket struct {
	Name     string
	Min, Max units.Bytes
}

// DefaultBuckets are the size buckets reports and expectations use: small (< 100KB),
// medium (100KB–1MB) and large (≥ 1MB), after the usual web-search breakdowns.
func DefaultBuckets() []Bucket {
	return []Bucket{
		{"small", 0, 100 * units.Kilobyte},
		{"medium", 100 * units.Kilobyte, units.Megabyte},
		{"large", units.Megabyte, units.MaxBytes},
	}
}

// BucketOf returns the index of the bucket holding size, or -1.
func BucketOf(bs []Bucket, size units.Bytes) int {
	for i, b := range bs {
		if size >= b.Min && size < b.Max {
			return i
		}
	}
	return -1
}
