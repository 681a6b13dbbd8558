package render

import (
	"image"

	"reef/emulator/analysis"

	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/emulator/topo"
	"reef/units"
)

// incastSummary is a run shaped like timely-incast's (40 long-lived flows, 4000 samples
// each, every 500 µs): each flow acks 16 KB segments at random samples, so its goodput
// over a sample jumps between 0 and 262 Mbit/s from one sample to the next (as TIMELY's
// line-rate bursts make it), its window is a sawtooth between 4 and 63 KB, and four
// ports' queueing delay oscillates with noise. Dense, full-height zigzags like the rates
// are what make a plot slow to rasterise.
func incastSummary(tb testing.TB) *analysis.Summary {
	tb.Helper()
	tp, err := topo.Parse("t.yaml", []byte("name: t\ndefaults: {rate: 1Gbps, delay: 20us, buffer: 4MB, mtu: 1500}\ngenerator: {kind: dumbbell, hosts: 4}\n"))
	if err != nil {
		tb.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	const (
		flows   = 40
		samples = 4000
		every   = 500 * us
	)
	sc := &scenario.Scenario{Name: "incast/cc=timely", TimeScale: 10, Duration: samples * every, Warmup: samples * every / 2, SampleInterval: every}
	run := &results.Run{Backend: "sim", Scenario: sc.Name, Duration: sc.Duration}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range flows {
		name := "incast" + strconv.Itoa(i+1)
		src, dst := "h"+strconv.Itoa(1+i%4), "h"+strconv.Itoa(5+i%4)
		sc.Flows = append(sc.Flows, scenario.Flow{ID: uint32(i + 1), Name: name, Group: "incast", Src: src, Dst: dst, CC: "timely"})
		f := results.Flow{ID: uint32(i + 1), Name: name, Group: "incast", Src: src, Dst: dst, CC: "timely"}
		var acked units.Bytes
		for k := 1; k <= samples; k++ {
			if rng.Float64() < 0.19 {
				acked += 16 * units.Kilobyte
			}
			f.Samples = append(f.Samples, results.FlowSample{T: units.Time(k) * every, Acked: acked,
				Cwnd: units.Bytes(4+(k+7*i)%120/2) * units.Kilobyte, RTT: 100*us + units.Time(rng.IntN(900))*us})
		}
		run.Flows = append(run.Flows, f)
	}
	for j := range 4 {
		pt := results.Port{Switch: "s1", Port: j, Name: "p" + strconv.Itoa(j+1), Peer: "h" + strconv.Itoa(j+5) + ":eth0", Rate: units.Gbps}
		var tx int64
		for k := 1; k <= samples; k++ {
			tx += 50000
			d := 1000 * (1 + math.Sin(float64(k)/40)) / float64(j+1)
			pt.Samples = append(pt.Samples, results.PortSample{T: units.Time(k) * every, TxBytes: tx, TxPackets: tx / 1500,
				QueueDelay: units.Time(d+200*rng.Float64()) * us, QueueBytes: units.Bytes(d * 125)})
		}
		run.Ports = append(run.Ports, pt)
	}
	s, err := analysis.Summarize(p, sc, run, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// BenchmarkRunFigures draws one incast run's figures (rate, cwnd, queue delay; PNG and
// SVG each), what WriteRun spends most of its time on.
func BenchmarkRunFigures(b *testing.B) {
	s := incastSummary(b)
	b.ResetTimer()
	for b.Loop() {
		figs, err := runFigures(s)
		if err != nil {
			b.Fatal(err)
		}
		if len(figs) != 3 {
			b.Fatalf("%d figures, want rate, cwnd and queue-delay", len(figs))
		}
	}
}

// zigzag is n points over [0, 1) that alternate between the bottom and the top of the
// range, with some noise: the densest line a plot can hold.
func zigzag(n int, seed uint64) plotter.XYs {
	rng := rand.New(rand.NewPCG(seed, 3))
	xys := make(plotter.XYs, n)
	for i := range xys {
		xys[i] = plotter.XY{X: float64(i) / float64(n), Y: float64(i%2) + 0.2*rng.Float64()}
	}
	return xys
}

// drawBoth draws p on a plain vgimg canvas and through splitStrokes.
func drawBoth(p *plot.Plot) (plain, split *image.RGBA) {
	a, b := vgimg.New(figWidth, figHeight), vgimg.New(figWidth, figHeight)
	p.Draw(draw.New(a))
	p.Draw(draw.New(&splitStrokes{Canvas: b}))
	return a.Image().(*image.RGBA), b.Image().(*image.RGBA)
}

// pixelDiff counts the pixels that differ by more than tol in some channel, and the
// largest difference.
func pixelDiff(a, b *image.RGBA, tol int) (n, maxd int) {
	for i := 0; i < len(a.Pix); i += 4 {
		d := 0
		for c := range 4 {
			d = max(d, abs(int(a.Pix[i+c])-int(b.Pix[i+c])))
		}
		if d > tol {
			n++
		}
		maxd = max(maxd, d)
	}
	return n, maxd
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestSplitStrokesDrawTheSameLines draws dense, sparse and fine (segments far shorter
// than a pixel), solid and dashed lines whole and in pieces. A line of at most
// strokeSegments segments is not split and must come out identical. A split one may
// differ only in anti-aliased edge pixels where pieces meet: each piece's edges are
// blended on their own where the whole line summed their coverage first, and a cut
// point is rounded to the rasteriser's grid, which tilts its two half segments (by a
// hundredth of a pixel on a long segment: a level or two, not counted below; by more on
// a segment shorter than a pixel, whose cut ends then sit at a slightly different
// angle). On a sparse line that is a few pixels a cut; on a line denser than its width
// the segments next to a cut overlap along the plot's height, and a few dozen pixels a
// cut change. Measured: under 1% of the image, each by at most 75 levels. A lost or
// misplaced segment, or a dash pattern out of phase, changes whole runs of pixels by
// the full contrast between the line and white (over 200 levels for these colours).
func TestSplitStrokesDrawTheSameLines(t *testing.T) {
	sine := func(n int) plotter.XYs { // segments far shorter than a dot
		xys := make(plotter.XYs, n)
		for i := range xys {
			xys[i] = plotter.XY{X: float64(i) / float64(n), Y: math.Sin(float64(i) / float64(n) * 20)}
		}
		return xys
	}
	for _, tc := range []struct {
		name   string
		a, b   plotter.XYs
		dashed bool
	}{
		{"short", zigzag(strokeSegments, 1), zigzag(strokeSegments, 2), false},
		{"short-dashed", zigzag(strokeSegments, 1), zigzag(strokeSegments, 2), true},
		{"dense", zigzag(400, 1), zigzag(400, 2), false},
		{"dense-dashed", zigzag(400, 1), zigzag(400, 2), true},
		{"sparse", zigzag(200, 1), zigzag(200, 2), false},
		{"sparse-dashed", zigzag(200, 1), zigzag(200, 2), true},
		{"fine", sine(20000), zigzag(200, 2), false},
		{"fine-dashed", sine(20000), zigzag(200, 2), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlot("t", "x", "y")
			if err := line(p, tc.a, 0, tc.dashed, "a"); err != nil {
				t.Fatal(err)
			}
			if err := line(p, tc.b, 1, tc.dashed, "b"); err != nil {
				t.Fatal(err)
			}
			plain, split := drawBoth(p)
			n, maxd := pixelDiff(plain, split, 4)
			t.Logf("%d of %d pixels differ, by at most %d", n, len(plain.Pix)/4, maxd)
			if len(tc.a) <= strokeSegments {
				if n != 0 {
					t.Errorf("%d pixels differ, want none: the line was not to be split", n)
				}
				return
			}
			if maxd > 100 || n > len(plain.Pix)/4/50 {
				t.Errorf("%d pixels differ, by at most %d: want at most 2%% of them, by at most 100", n, maxd)
			}
		})
	}
}
