package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/topo"
	"reef/internal/testlab"
	"reef/units"
)

func TestMedian(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 2, 8}, 3},
		{[]float64{7}, 7},
		{[]float64{inf, 1, 2}, 2},
		{[]float64{inf, inf, 1}, inf},
		{[]float64{inf, 1, 2, inf}, inf},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.xs...)
		if got := Median(tt.xs); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.want)
		}
		if !slices.Equal(in, tt.xs) {
			t.Errorf("Median sorted its input %v in place", in)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median of no samples is not NaN")
	}
}

func TestPercentileNearestRank(t *testing.T) {
	ten := []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5} // 1..10 shuffled
	tests := []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{ten, 0, 1},
		{ten, 10, 1},   // ceil(0.1*10)=1 → 1st
		{ten, 11, 2},   // ceil(1.1)=2 → 2nd
		{ten, 50, 5},   // ceil(5)=5 → 5th
		{ten, 90, 9},   // 9th
		{ten, 99, 10},  // ceil(9.9)=10
		{ten, 100, 10}, // max
		{[]float64{42}, 99.9, 42},
		{[]float64{3, 1, 2}, 50, 2}, // ceil(1.5)=2
	}
	for _, tt := range tests {
		if got := Percentile(tt.xs, tt.p); got != tt.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tt.xs, tt.p, got, tt.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("Percentile of no samples is not NaN")
	}
	if ten[0] != 10 {
		t.Error("Percentile sorted its input in place")
	}
	// 1000 samples: p999 is the 999th, p99 the 990th.
	var k []float64
	for i := 1000; i >= 1; i-- {
		k = append(k, float64(i))
	}
	s := Summarize(k)
	if s.P999 != 999 || s.P99 != 990 || s.P50 != 500 || s.Min != 1 || s.Max != 1000 || s.Mean != 500.5 || s.Count != 1000 {
		t.Errorf("Summarize(1..1000) = %+v", s)
	}
}

func TestJainMeanStd(t *testing.T) {
	tests := []struct {
		xs        []float64
		jain      float64
		mean, std float64
	}{
		{[]float64{5, 5, 5, 5}, 1, 5, 0},
		{[]float64{10, 0, 0, 0}, 0.25, 2.5, math.Sqrt((7.5*7.5 + 3*2.5*2.5) / 4)},
		{[]float64{1, 3}, 16.0 / 20, 2, 1}, // (1+3)²/(2·(1+9))
	}
	for _, tt := range tests {
		if got := Jain(tt.xs); math.Abs(got-tt.jain) > 1e-12 {
			t.Errorf("Jain(%v) = %v, want %v", tt.xs, got, tt.jain)
		}
		if got := Mean(tt.xs); math.Abs(got-tt.mean) > 1e-12 {
			t.Errorf("Mean(%v) = %v, want %v", tt.xs, got, tt.mean)
		}
		if got := StdDev(tt.xs); math.Abs(got-tt.std) > 1e-12 {
			t.Errorf("StdDev(%v) = %v, want %v", tt.xs, got, tt.std)
		}
	}
	for _, xs := range [][]float64{nil, {0, 0}} {
		if !math.IsNaN(Jain(xs)) {
			t.Errorf("Jain(%v) is not NaN", xs)
		}
	}
}

func TestGoodput(t *testing.T) {
	ms := units.Millisecond
	// Flow starts at 1ms; 1000 bytes acked per ms after that, sampled every ms up to 5ms.
	var s []results.FlowSample
	for i := 2; i <= 5; i++ {
		s = append(s, results.FlowSample{T: units.Time(i) * ms, Acked: units.Bytes(1000 * (i - 1))})
	}
	tests := []struct {
		from, to units.Time
		want     units.Rate
	}{
		{1 * ms, 5 * ms, 8 * units.Mbps},        // 4000 B in 4 ms
		{2 * ms, 4 * ms, 8 * units.Mbps},        // on samples
		{2500 * units.Microsecond, 3 * ms, 8e6}, // interpolated
		{0, 1 * ms, 0},                          // before the start
		{0, 2 * ms, 4 * units.Mbps},             // 1000 B in 2 ms
		{5 * ms, 10 * ms, 0},                    // after the last sample: flat
		{3 * ms, 3 * ms, 0},                     // empty window
	}
	for _, tt := range tests {
		if got := Goodput(1*ms, s, tt.from, tt.to); got != tt.want {
			t.Errorf("Goodput(%v, %v) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
	rs := RateSeries(1*ms, s, 2*ms)
	// At 2ms the window clamps to the start (1ms): 1000 B in 1 ms = 8 Mbps; then 2000 B / 2 ms.
	if len(rs) != 4 || rs[0].Rate != 8e6 || rs[3].Rate != 8e6 || rs[3].T != 5*ms {
		t.Errorf("RateSeries = %+v", rs)
	}
}

func TestConvergenceTime(t *testing.T) {
	pts := func(share float64, rates ...float64) []Point {
		var out []Point
		for i, r := range rates {
			out = append(out, Point{T: units.Time(i+1) * units.Millisecond, Rate: r, Share: share})
		}
		return out
	}
	tests := []struct {
		name   string
		series [][]Point
		from   units.Time
		want   units.Time
		ok     bool
	}{
		{"already converged", [][]Point{pts(100, 100, 95, 105)}, 0, 1 * units.Millisecond, true},
		// second flow leaves the band at 3ms (80 < 90) and is back at 4ms.
		{"last flow decides", [][]Point{pts(100, 50, 100, 100, 100), pts(100, 10, 95, 80, 91)}, 0, 4 * units.Millisecond, true},
		{"never", [][]Point{pts(100, 100, 100, 120)}, 0, 0, false},
		{"from an event", [][]Point{pts(100, 0, 0, 50, 99, 101)}, 2 * units.Millisecond, 2 * units.Millisecond, true},
		{"inactive points ignored", [][]Point{pts(100, 100, 100), pts(0, 5, 5)}, 0, 1 * units.Millisecond, true},
		{"no samples", nil, 0, 0, false},
	}
	for _, tt := range tests {
		got, ok := ConvergenceTime(tt.series, tt.from, 10*units.Millisecond, 0.1)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: ConvergenceTime = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSlowdownAndBuckets(t *testing.T) {
	if got := Slowdown(30*units.Microsecond, 10*units.Microsecond); got != 3 {
		t.Errorf("Slowdown = %v, want 3", got)
	}
	if !math.IsNaN(Slowdown(1, 0)) {
		t.Error("Slowdown with no ideal is not NaN")
	}
	// 100 KB at 100 Mbps is 8 ms, plus the base RTT.
	if got := IdealFCT(100*units.Kilobyte, 100*units.Mbps, 50*units.Microsecond); got != 8050*units.Microsecond {
		t.Errorf("IdealFCT = %v", got)
	}
	bs := DefaultBuckets()
	for _, tt := range []struct {
		size units.Bytes
		want string
	}{{1, "small"}, {99_999, "small"}, {100_000, "medium"}, {999_999, "medium"}, {1_000_000, "large"}, {1 << 40, "large"}} {
		if i := BucketOf(bs, tt.size); i < 0 || bs[i].Name != tt.want {
			t.Errorf("BucketOf(%v) = %d, want %s", tt.size, i, tt.want)
		}
	}
}

func TestFairShares(t *testing.T) {
	// Dumbbell, 2 hosts a side, every link 100 Mbps: two flows share s1→s2 (50 each); a
	// third flow h3→h1 goes the other way and gets its NIC's 100 Mbps.
	tp, err := topo.Parse("t.yaml", []byte("name: t\ndefaults: {rate: 100Mbps, delay: 10us, buffer: 1MB, mtu: 1500}\ngenerator: {kind: dumbbell, hosts: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := FairShares(p, []FlowEnds{{Src: "h1", Dst: "h3", Active: true}, {Src: "h2", Dst: "h4", Active: true}, {Src: "h3", Dst: "h1", Active: true}, {Src: "h1", Dst: "h4"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []units.Rate{50 * units.Mbps, 50 * units.Mbps, 100 * units.Mbps, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("FairShares[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	// A constant-rate flow at 20 Mbps leaves 80 to its neighbour on s1→s2.
	got, _, err = FairShares(p, []FlowEnds{{Src: "h1", Dst: "h3", Active: true, Demand: 20 * units.Mbps}, {Src: "h2", Dst: "h4", Active: true}})
	if err != nil || got[0] != 20*units.Mbps || got[1] != 80*units.Mbps {
		t.Errorf("FairShares with a demand = %v, %v", got, err)
	}
	if _, _, err := FairShares(p, []FlowEnds{{Src: "h1", Dst: "h9", Active: true}}); err == nil {
		t.Error("FairShares accepted a flow to a missing host")
	}
}

// TestWindowGoodputExact: window goodput comes from exact counters at the window's
// edges, the flow's start and its finish whatever the samples say, and falls back to
// interpolating the samples (not exact) only where the run has no counter.
func TestWindowGoodputExact(t *testing.T) {
	ms := units.Millisecond
	// Samples every 1 ms say nothing between 1 and 2 ms; the edges do.
	samples := []results.FlowSample{{T: ms, Acked: 0}, {T: 2 * ms, Acked: 2000}}
	edges := []results.FlowSample{{T: ms + ms/2, Acked: 1500}, {T: 3 * ms, Acked: 2500}}
	long := results.Flow{Start: 0, Acked: 2500, Samples: samples, Edges: edges}
	msg := results.Flow{Start: ms, Size: 4000, Finish: 2*ms + ms/2, Acked: 4000, Samples: samples[1:], Edges: edges[:1]}
	for _, tc := range []struct {
		name     string
		f        results.Flow
		from, to units.Time
		want     units.Rate
		exact    bool
	}{
		{"both edges", long, ms + ms/2, 3 * ms, units.Rate(1000 * 8e9 / float64(ms+ms/2)), true},
		{"start to edge", long, 0, ms + ms/2, units.Rate(1500 * 8e9 / float64(ms+ms/2)), true},
		{"edge to finish", msg, ms + ms/2, 2*ms + ms/2, units.Rate(2500 * 8e9 / float64(ms)), true},
		{"interpolated end", long, ms + ms/2, 2 * ms, units.Rate(500 * 8e9 / float64(ms/2)), false},
		{"empty", long, 2 * ms, 2 * ms, 0, true},
	} {
		got, exact := WindowGoodput(&tc.f, tc.from, tc.to)
		if got != tc.want || exact != tc.exact {
			t.Errorf("%s: %v (exact %v), want %v (exact %v)", tc.name, got, exact, tc.want, tc.exact)
		}
	}
	p := results.Port{Samples: []results.PortSample{{T: ms, TxBytes: 100}, {T: 3 * ms, TxBytes: 300}},
		Edges: []results.PortSample{{T: 2 * ms, TxBytes: 290}}}
	tx := func(s *results.PortSample) int64 { return s.TxBytes }
	if v, ok := PortCounterAt(&p, 2*ms, tx); v != 290 || !ok {
		t.Errorf("port counter at an edge: %v (exact %v), want 290 exact", v, ok)
	}
	if v, ok := PortCounterAt(&p, 2*ms+ms/2, tx); v != 250 || ok {
		t.Errorf("port counter between samples: %v (exact %v), want 250 interpolated", v, ok)
	}
}

// TestFairSharesMovedFlowsFollowMeasuredPaths: a flow whose paths moved during the run
// (it repathed, or a link went down) is placed by the frames the run counted, not by the
// hash of its first 5-tuple: two flows the run saw on one leaf uplink share it, on two
// uplinks they do not.
func TestFairSharesMovedFlowsFollowMeasuredPaths(t *testing.T) {
	tp, err := topo.Parse("t.yaml", []byte("name: t\ndefaults: {rate: 10Gbps, delay: 1us, buffer: 1MB, mtu: 1500}\ngenerator: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}\nclasses:\n  uplink: {rate: 10Gbps}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// up[s] is leaf1's port toward spine s.
	up := map[string]int{}
	for _, l := range p.Links {
		if l.A.Node == "leaf1" && !l.B.IsHost {
			up[l.B.Node] = l.A.Port
		}
	}
	on := func(spine string) []results.PortFrames {
		return []results.PortFrames{{Switch: "leaf1", Port: up[spine], Frames: 100}}
	}
	for _, tc := range []struct {
		name   string
		e1, e2 []results.PortFrames
		want   units.Rate
	}{
		{"one uplink", on("spine1"), on("spine1"), 5 * units.Gbps},
		{"two uplinks", on("spine1"), on("spine2"), 10 * units.Gbps},
	} {
		got, how, err := FairShares(p, []FlowEnds{
			{Src: "h1", Dst: "h3", Active: true, ID: 1, Moved: true, Egress: tc.e1},
			{Src: "h2", Dst: "h4", Active: true, ID: 2, Moved: true, Egress: tc.e2}})
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != tc.want || got[1] != tc.want || how != plan.PlacedMeasured {
			t.Errorf("%s: shares %v placed %v; want %v each, measured", tc.name, got, how, tc.want)
		}
	}
}

// TestOracleMatchesFairShares: an oracle asked about many subsets of one flow list, as a
// run's analysis asks it, places each flow once and must answer every subset exactly as
// FairShares does with only that subset active (a fresh computation each time), and
// one flow more from the subset's filling (ShareWith) as with that flow active too.
func TestOracleMatchesFairShares(t *testing.T) {
	p := testlab.PlanFile(t, "../../topologies/fat-tree-k4.yaml")
	rng := rand.New(rand.NewPCG(1, 2))
	var flows []FlowEnds
	for i := range 40 {
		src, dst := 1+rng.IntN(16), 1+rng.IntN(16)
		if src == dst {
			dst = src%16 + 1
		}
		f := FlowEnds{Src: fmt.Sprintf("h%d", src), Dst: fmt.Sprintf("h%d", dst), ID: uint32(i + 1)}
		if i%5 == 0 {
			f.Demand = units.Rate(50+rng.IntN(400)) * units.Mbps
		}
		flows = append(flows, f)
	}
	o := NewOracle(p, flows)
	for round := range 60 {
		var idx []int
		fresh := slices.Clone(flows)
		for i := range fresh {
			fresh[i].Active = rng.IntN(3) == 0
			if fresh[i].Active {
				idx = append(idx, i)
			}
		}
		got, gotHow, err := o.Shares(idx)
		if err != nil {
			t.Fatal(err)
		}
		want, wantHow, err := FairShares(p, fresh)
		if err != nil {
			t.Fatal(err)
		}
		if gotHow != wantHow {
			t.Errorf("round %d: placed %v, want %v", round, gotHow, wantHow)
		}
		for k, i := range idx {
			if got[k] != want[i] {
				t.Errorf("round %d: flow %d (%s→%s): oracle %v, FairShares %v", round, i, flows[i].Src, flows[i].Dst, got[k], want[i])
			}
		}
		// One flow more, as the analysis asks of a message: its share from the
		// subset's filling is its share among the subset and itself (to within the
		// rounding of a rate computed two ways).
		j := rng.IntN(len(flows))
		if slices.Contains(idx, j) {
			continue
		}
		fill, _, err := o.Fill(idx)
		if err != nil {
			t.Fatal(err)
		}
		with, _, err := o.ShareWith(fill, j)
		if err != nil {
			t.Fatal(err)
		}
		joint := append(slices.Clone(idx), j)
		all, _, err := o.Shares(joint)
		if err != nil {
			t.Fatal(err)
		}
		if d := with - all[len(joint)-1]; d < -1 || d > 1 {
			t.Errorf("round %d: flow %d with %d others: %v, among them all %v", round, j, len(idx), with, all[len(joint)-1])
		}
	}
	if _, _, err := NewOracle(p, []FlowEnds{{Src: "h1", Dst: "h99"}}).Shares([]int{0}); err == nil {
		t.Error("the oracle placed a flow to a missing host")
	}
}
