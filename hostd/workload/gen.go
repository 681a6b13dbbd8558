package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"reef/units"
)

// Flow is one flow to create: Src sends Size bytes (0: long-lived) to Dst from Start
// until it finishes or Stop (0: never). Src and Dst index the experiment's host list.
type Flow struct {
	Src, Dst    int
	Size        units.Bytes
	Start, Stop units.Time
}

// Poisson describes open-loop traffic: every source starts flows with exponential
// inter-arrival times so that it offers Load × Rate on average, each to a destination
// drawn uniformly from Dsts (itself excluded), with sizes from CDF.
type Poisson struct {
	Srcs, Dsts []int
	// Load is the offered load per source as a fraction of Rate, in (0, 1].
	Load float64
	// Rate is the host link rate.
	Rate units.Rate
	CDF  *CDF
	// Start and Duration bound the arrival times.
	Start, Duration units.Time
}

// ArrivalRate is the flows per second one source starts: load × rate / mean size.
func (p Poisson) ArrivalRate() float64 { return p.Load * float64(p.Rate) / 8 / p.CDF.Mean() }

// Generate draws the flows, ordered by start time (then source).
func (p Poisson) Generate(r *rand.Rand) ([]Flow, error) {
	switch {
	case p.CDF == nil:
		return nil, fmt.Errorf("workload: poisson needs a size distribution")
	case !(p.Load > 0 && p.Load <= 1):
		return nil, fmt.Errorf("workload: poisson load must be in (0, 1] (fraction of the link rate), got %g", p.Load)
	case p.Rate <= 0:
		return nil, fmt.Errorf("workload: poisson rate must be > 0 bit/s, got %v", p.Rate)
	case p.Duration <= 0:
		return nil, fmt.Errorf("workload: poisson duration must be > 0, got %v", p.Duration)
	case len(p.Srcs) == 0:
		return nil, fmt.Errorf("workload: poisson needs at least one source")
	}
	for _, src := range p.Srcs {
		if !slices.ContainsFunc(p.Dsts, func(d int) bool { return d != src }) {
			return nil, fmt.Errorf("workload: poisson source %d has no destination other than itself", src)
		}
	}
	lambda := p.ArrivalRate() // per second
	var flows []Flow
	for _, src := range p.Srcs {
		t := float64(p.Start)
		for {
			t += r.ExpFloat64() / lambda * 1e9
			if t >= float64(p.Start+p.Duration) {
				break
			}
			dst := src
			for dst == src {
				dst = p.Dsts[r.IntN(len(p.Dsts))]
			}
			flows = append(flows, Flow{Src: src, Dst: dst, Size: p.CDF.Sample(r), Start: units.Time(math.Round(t))})
		}
	}
	slices.SortStableFunc(flows, func(a, b Flow) int {
		if a.Start != b.Start {
			return int(a.Start - b.Start)
		}
		return a.Src - b.Src
	})
	return flows, nil
}

// LongLived returns one long-lived flow per pair, all from start to stop.
func LongLived(pairs [][2]int, start, stop units.Time) []Flow {
	out := make([]Flow, 0, len(pairs))
	for _, p := range pairs {
		out = append(out, Flow{Src: p[0], Dst: p[1], Start: start, Stop: stop})
	}
	return out
}

// Incast returns rounds of N-to-1 incast: every sender sends size bytes to dst at
// start + k·period for k < rounds, each start jittered uniformly in [0, jitter).
func Incast(senders []int, dst int, size units.Bytes, start units.Time, rounds int, period, jitter units.Time, r *rand.Rand) []Flow {
	var out []Flow
	for k := 0; k < rounds; k++ {
		for _, s := range senders {
			at := start + units.Time(k)*period
			if jitter > 0 {
				at += units.Time(r.Int64N(int64(jitter)))
			}
			out = append(out, Flow{Src: s, Dst: dst, Size: size, Start: at})
		}
	}
	return out
}

// Permutation returns one flow per host to a distinct other host (a random
// derangement of hosts 0..n-1), all of size at start.
func Permutation(n int, size units.Bytes, start units.Time, r *rand.Rand) []Flow {
	if n < 2 {
		return nil
	}
	perm := make([]int, n)
	for {
		for i := range perm {
			perm[i] = i
		}
		r.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		ok := true
		for i, d := range perm {
			if i == d {
				ok = false
				break
			}
		}
		if ok {
			break
		}
	}
	out := make([]Flow, n)
	for i, d := range perm {
		out[i] = Flow{Src: i, Dst: d, Size: size, Start: start}
	}
	return out
}

// AllPairs returns a flow from every host to every other host.
func AllPairs(n int, size units.Bytes, start units.Time) []Flow {
	var out []Flow
	for s := 0; s < n; s++ {
		for d := 0; d < n; d++ {
			if s != d {
				out = append(out, Flow{Src: s, Dst: d, Size: size, Start: start})
			}
		}
	}
	return out
}

// IdealFCT is the flow completion time on an empty network: size at the line rate
// plus the base RTT. Slowdown is FCT / IdealFCT.
func IdealFCT(size units.Bytes, rate units.Rate, baseRTT units.Time) units.Time {
	return rate.TxTime(size) + baseRTT
}

// Slowdown is fct over the ideal FCT of size (≥ 1 unless the base RTT is
// overestimated).
func Slowdown(fct units.Time, size units.Bytes, rate units.Rate, baseRTT units.Time) float64 {
	return float64(fct) / float64(IdealFCT(size, rate, baseRTT))
}
