package swift

import (
	"math"

	"reef/units"
)

// FlowScaling is the flow-scaling term of Swift's target delay (spec baselines.md §3.1,
// reconstructed): clamp(fs_α/√cwnd + fs_β, 0, fs_range), with fs_α and fs_β chosen so
// that the term is fs_range at fs_min_cwnd and 0 at fs_max_cwnd. It is a pure value,
// computed once per flow, so Swift and its variants (cc/mswift) share one copy of the law.
type FlowScaling struct {
	alpha float64 // fs_α, ns·pkt^½
	beta  float64 // fs_β, ns
	rng   float64 // fs_range, ns
}

// NewFlowScaling returns the curve through (fsMinCwnd, fsRange) and (fsMaxCwnd, 0);
// the windows are in packets and must satisfy 0 < fsMinCwnd < fsMaxCwnd (Params.Validate
// checks this for Swift).
func NewFlowScaling(fsRange units.Time, fsMinCwnd, fsMaxCwnd float64) FlowScaling {
	a := float64(fsRange) / (1/math.Sqrt(fsMinCwnd) - 1/math.Sqrt(fsMaxCwnd))
	return FlowScaling{alpha: a, beta: -a / math.Sqrt(fsMaxCwnd), rng: float64(fsRange)}
}

// Ns is the term for a window of cwnd packets, in nanoseconds, not rounded: callers
// that compare it with other float delays keep the fraction.
func (f FlowScaling) Ns(cwnd float64) float64 {
	fs := f.alpha/math.Sqrt(cwnd) + f.beta
	return min(max(fs, 0), f.rng)
}

// TargetDelay is Swift's target delay for a path of hops switches and a window of cwnd
// packets: base_target + hops·hop_scaling + the flow-scaling term rounded down to a
// nanosecond. Swift.Target is TargetDelay over the flow's own window.
func TargetDelay(p Params, hops int, cwnd float64) units.Time {
	return targetDelay(p, NewFlowScaling(p.FsRange, p.FsMinCwnd, p.FsMaxCwnd), hops, cwnd)
}

func targetDelay(p Params, fs FlowScaling, hops int, cwnd float64) units.Time {
	return p.BaseTarget + units.Time(hops)*p.HopScaling + units.Time(fs.Ns(cwnd))
}
