package render

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"reef/emulator/analysis"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"reef/emulator/expect"
	"reef/emulator/metrics"
	"reef/emulator/results"
)

// Plot limits: how many flows and ports one figure shows.
const (
	maxPlotFlows = 12
	maxPlotPorts = 4
)

// Figure is one rendered plot: its file stem, a caption, and the PNG and SVG bytes.
type Figure struct {
	Name    string
	Title   string
	Caption string
	PNG     []byte
	SVG     []byte
}

// The size of every figure.
const (
	figWidth  = 9 * vg.Inch
	figHeight = 4.5 * vg.Inch
)

// render draws p as a PNG (at vgimg's default 96 dpi, its long lines stroked in pieces:
// see splitStrokes) and as an SVG.
func render(p *plot.Plot, name, caption string) (Figure, error) {
	f := Figure{Name: name, Title: p.Title.Text, Caption: caption}
	img := vgimg.New(figWidth, figHeight)
	p.Draw(draw.New(&splitStrokes{Canvas: img}))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&b); err != nil {
		return f, fmt.Errorf("report: plot %s: %w", name, err)
	}
	f.PNG = b.Bytes()
	w, err := p.WriterTo(figWidth, figHeight, "svg")
	if err != nil {
		return f, fmt.Errorf("report: plot %s: %w", name, err)
	}
	var sb bytes.Buffer
	if _, err := w.WriteTo(&sb); err != nil {
		return f, fmt.Errorf("report: plot %s: %w", name, err)
	}
	f.SVG = sb.Bytes()
	return f, nil
}

// figureJob is a plot ready to render as the figure name with its caption.
type figureJob struct {
	p             *plot.Plot
	name, caption string
}

// renderAll renders the jobs, as many at a time as Go may run threads (each plot is
// drawn by one goroutine only: drawing one plot twice at once is not safe), and returns
// the figures in the jobs' order.
func renderAll(jobs []figureJob) ([]Figure, error) {
	figs := make([]Figure, len(jobs))
	errs := make([]error, len(jobs))
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, j := range jobs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			figs[i], errs[i] = render(j.p, j.name, j.caption)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return figs, nil
}

// writeFigures saves every figure as plots/NAME.png and plots/NAME.svg under dir.
func writeFigures(dir string, figs []Figure) error {
	pd := filepath.Join(dir, "plots")
	if err := os.MkdirAll(pd, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for _, f := range figs {
		if err := os.WriteFile(filepath.Join(pd, f.Name+".png"), f.PNG, 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if err := os.WriteFile(filepath.Join(pd, f.Name+".svg"), f.SVG, 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.X.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Y.Tick.Label.Font.Size = vg.Points(10)
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Add(plotter.NewGrid())
	return p
}

// headroom starts the y axis at 0 (or below, for negative data) and leaves a quarter of
// the height free above the data for the legend; an axis whose data are all 0 spans
// flat.
func headroom(p *plot.Plot, flat float64) {
	p.Y.Min = math.Min(0, p.Y.Min)
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min + flat
	}
	p.Y.Max += (p.Y.Max - p.Y.Min) / 3
}

// palette has a distinct colour for each of the maxPlotFlows lines of a figure (Tableau
// 10 and two more).
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255}, {0, 0, 0, 255}, {255, 187, 120, 255},
}

func colour(i int) color.Color { return palette[i%len(palette)] }

func line(p *plot.Plot, xys plotter.XYs, i int, dashed bool, label string) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = colour(i)
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		l.Width = vg.Points(1)
	}
	p.Add(l)
	if label != "" {
		p.Legend.Add(label, l)
	}
	return nil
}

// plotFlows picks the flows to draw, at most maxPlotFlows: long-lived flows, then sized
// flows with at least minPlotSamples samples (longest first), else any with two.
func plotFlows(run *results.Run) (idx []int, note string) {
	const minPlotSamples = 5
	var sized []int
	for i, f := range run.Flows {
		switch {
		case f.Size == 0 && len(f.Samples) > 0:
			idx = append(idx, i)
		case f.Size > 0 && len(f.Samples) >= minPlotSamples:
			sized = append(sized, i)
		}
	}
	sort.SliceStable(sized, func(a, b int) bool { return len(run.Flows[sized[a]].Samples) > len(run.Flows[sized[b]].Samples) })
	idx = append(idx, sized...)
	if len(idx) == 0 {
		for i, f := range run.Flows {
			if len(f.Samples) > 1 {
				idx = append(idx, i)
			}
		}
	}
	if len(idx) > maxPlotFlows {
		note = fmt.Sprintf(" (%d of %d flows)", maxPlotFlows, len(idx))
		idx = idx[:maxPlotFlows]
	}
	sort.Ints(idx)
	return idx, note
}

// timeAxis labels p's x axis, in seconds, "time" in the unit its range reads best in,
// with the paper's time when scaled.
func timeAxis(s *analysis.Summary, p *plot.Plot) {
	label := "time ({unit})"
	if s.Scale().Scaled() {
		label = fmt.Sprintf("emulator time ({unit}); paper time = t / %g", s.TimeScale)
	}
	setAxis(&p.X, label, durationUnits)
}

// runFigures draws one run's plots: rate and cwnd per flow, queue delay at the busiest
// ports, FCT slowdown by size bucket. It builds them one by one and renders them side by
// side.
func runFigures(s *analysis.Summary) ([]Figure, error) {
	run := s.Input().Run
	var jobs []figureJob
	idx, note := plotFlows(run)
	if len(idx) > 0 {
		p := newPlot("Goodput per flow (solid) and max-min fair share (dashed)", "", "")
		c := newPlot("Congestion window per flow", "", "")
		cwndDrawn := false
		for k, i := range idx {
			f := run.Flows[i]
			ef := s.Env().Flows[i]
			var rate, share, cwnd plotter.XYs
			for _, pt := range ef.Series {
				rate = append(rate, plotter.XY{X: pt.T.Seconds(), Y: pt.Rate})
				share = append(share, plotter.XY{X: pt.T.Seconds(), Y: pt.Share})
			}
			for _, smp := range f.Samples {
				if smp.Cwnd > 0 && smp.Cwnd < 1<<40 {
					cwnd = append(cwnd, plotter.XY{X: smp.T.Seconds(), Y: float64(smp.Cwnd)})
				}
			}
			label := f.Name
			if f.CC != "" {
				label += " (" + f.CC + ")"
			}
			if len(rate) > 0 {
				if err := line(p, rate, k, false, label); err != nil {
					return nil, err
				}
				if err := line(p, share, k, true, ""); err != nil {
					return nil, err
				}
			}
			if len(cwnd) > 0 {
				cwndDrawn = true
				if err := line(c, cwnd, k, false, label); err != nil {
					return nil, err
				}
			}
		}
		timeAxis(s, p)
		yAxis(p, "rate ({unit})", rateUnits)
		jobs = append(jobs, figureJob{p, "rate", "Each flow's goodput over time (moving average over max(sample interval, 4 base RTTs)) against its max-min fair share" + note + "."})
		if cwndDrawn {
			timeAxis(s, c)
			yAxis(c, "cwnd ({unit})", byteUnits)
			jobs = append(jobs, figureJob{c, "cwnd", "Each flow's congestion window as its algorithm reported it" + note + "."})
		}
	}
	if ports := busiestPorts(s); len(ports) > 0 {
		p := newPlot("Queueing delay at the busiest ports", "", "")
		for k, i := range ports {
			pt := run.Ports[i]
			var xys plotter.XYs
			for _, smp := range pt.Samples {
				xys = append(xys, plotter.XY{X: smp.T.Seconds(), Y: smp.QueueDelay.Seconds()})
			}
			if err := line(p, xys, k, false, pt.Switch+":"+pt.Name+" → "+pt.Peer); err != nil {
				return nil, err
			}
		}
		timeAxis(s, p)
		yAxis(p, "queue delay ({unit})", durationUnits)
		jobs = append(jobs, figureJob{p, "queue-delay", "Queueing delay over time at the ports with the highest p99 queue delay in the measurement window (the bottlenecks)."})
	}
	if len(s.FCTBuckets) > 0 {
		j, err := fctFigure(s)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return renderAll(jobs)
}

// busiestPorts are the ports with samples and the largest p99 queue delay (utilisation
// breaking ties), at most maxPlotPorts.
func busiestPorts(s *analysis.Summary) []int {
	var idx []int
	for i, q := range s.Queues {
		if i < len(s.Input().Run.Ports) && len(s.Input().Run.Ports[i].Samples) > 0 && (q.Utilisation > 0 || q.QueueDelayUS != nil && q.QueueDelayUS.Max > 0) {
			idx = append(idx, i)
		}
	}
	p99 := func(i int) float64 {
		if q := s.Queues[i].QueueDelayUS; q != nil {
			return q.P99
		}
		return 0
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if p99(idx[a]) != p99(idx[b]) {
			return p99(idx[a]) > p99(idx[b])
		}
		return s.Queues[idx[a]].Utilisation > s.Queues[idx[b]].Utilisation
	})
	if len(idx) > maxPlotPorts {
		idx = idx[:maxPlotPorts]
	}
	return idx
}

func fctFigure(s *analysis.Summary) (figureJob, error) {
	p := newPlot("FCT slowdown by flow size", "size bucket", "FCT / ideal FCT")
	var names []string
	var p50, p99 plotter.Values
	for _, b := range s.FCTBuckets {
		label := b.Name
		if b.MaxBytes > 0 {
			label += fmt.Sprintf(" [%s, %s)", fmtBytes(b.MinBytes), fmtBytes(b.MaxBytes))
		} else {
			label += fmt.Sprintf(" ≥ %s", fmtBytes(b.MinBytes))
		}
		names = append(names, fmt.Sprintf("%s (n=%d)", label, b.Slowdown.Count))
		p50 = append(p50, b.Slowdown.P50)
		p99 = append(p99, b.Slowdown.P99)
	}
	w := vg.Points(28)
	for k, vals := range []plotter.Values{p50, p99} {
		bc, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return figureJob{}, fmt.Errorf("report: fct plot: %w", err)
		}
		bc.Color = colour(k)
		bc.LineStyle.Width = 0
		bc.Offset = vg.Length(2*k-1) * w / 2
		p.Add(bc)
		p.Legend.Add([]string{"p50", "p99"}[k], bc)
	}
	p.NominalX(names...)
	yAxis(p, "FCT / ideal FCT", plainUnits)
	return figureJob{p, "fct-slowdown", "Median and 99th-percentile FCT slowdown (completion time over the time the same message takes alone on the network) by message size."}, nil
}

func fmtBytes(b int64) string {
	switch {
	case b >= 1e6:
		return strconv.FormatFloat(float64(b)/1e6, 'f', -1, 64) + "MB"
	case b >= 1e3:
		return strconv.FormatFloat(float64(b)/1e3, 'f', -1, 64) + "KB"
	}
	return strconv.FormatInt(b, 10) + "B"
}

// A checkTable shows each run's value of a per-run expectation that applies at one
// value of a swept variable, where a plot against that variable would be one column of
// points on an otherwise empty axis.
type checkTable struct {
	Name, Check, Claim string
	// At says where the check applies: "M = 2".
	At   string
	Rows []expect.Result
}

// sweepFigures draws, for every numeric sweep variable X, each per-run expectation's
// value (solid) and bound (dashed) against X, and each flow group's goodput relative to
// its fair share against X, with one line per algorithm (and per value of the other
// variables). An expectation that applies at one value of some X is not drawn against
// it: it gets a table instead.
func sweepFigures(sums []*analysis.Summary) ([]Figure, []checkTable, error) {
	vars := numericVars(sums)
	var figs []Figure
	if f, ok, err := shareSweepFigure(sums); err != nil {
		return nil, nil, err
	} else if ok {
		figs = append(figs, f)
	}
	for _, q := range []string{"p50", "p99"} {
		f, ok, err := fctSweepFigure(sums, q)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			figs = append(figs, f)
		}
	}
	// The per-run expectations, in order of first appearance, and where each applies.
	var order []string
	byName := map[string][]expect.Result{}
	at := map[string]map[string]map[string]bool{} // name → variable → values
	for _, s := range sums {
		for _, r := range s.Expectations {
			if byName[r.Name] == nil {
				order = append(order, r.Name)
				at[r.Name] = map[string]map[string]bool{}
			}
			byName[r.Name] = append(byName[r.Name], r)
			for _, x := range vars {
				if at[r.Name][x] == nil {
					at[r.Name][x] = map[string]bool{}
				}
				at[r.Name][x][s.Vars[x]] = true
			}
		}
	}
	var tables []checkTable
	for _, name := range order {
		var one []string
		for _, x := range vars {
			if len(at[name][x]) == 1 {
				one = append(one, x+" = "+keysOf(at[name][x])[0])
			}
		}
		if len(one) > 0 {
			r := byName[name][0]
			tables = append(tables, checkTable{Name: name, Check: r.Check, Claim: r.Claim, At: strings.Join(one, ", "), Rows: byName[name]})
		}
	}
	for _, x := range vars {
		// Expectation values.
		for _, name := range order {
			if len(at[name][x]) < 2 {
				continue
			}
			get := func(s *analysis.Summary) (v, b float64, unit string, ok bool) {
				for _, r := range s.Expectations {
					if r.Name == name && !math.IsNaN(r.Value) && !math.IsInf(r.Value, 0) {
						return r.Value, r.Bound, r.Unit, true
					}
				}
				return 0, 0, "", false
			}
			f, ok, err := sweepFigure(sums, x, "sweep-"+slug(name)+"-vs-"+slug(x),
				fmt.Sprintf("%s: %s, against %s", name, byName[name][0].Check, x),
				fmt.Sprintf("The value of expectation %q (solid) and its bound (dashed) against %s, one line per algorithm.", name, x),
				"", get)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				figs = append(figs, f)
			}
		}
		// Group goodput over fair share.
		groups := map[string]bool{}
		var gorder []string
		for _, s := range sums {
			for _, g := range s.Groups {
				if !groups[g.Name] {
					groups[g.Name] = true
					gorder = append(gorder, g.Name)
				}
			}
		}
		for _, gname := range gorder {
			get := func(s *analysis.Summary) (v, b float64, unit string, ok bool) {
				for _, g := range s.Groups {
					if g.Name == gname && g.FairShareBps > 0 {
						return g.GoodputBps / g.FairShareBps, math.NaN(), "", true
					}
				}
				return 0, 0, "", false
			}
			f, ok, err := sweepFigure(sums, x, "sweep-"+slug(gname)+"-share-vs-"+slug(x),
				fmt.Sprintf("%s goodput / max-min fair share against %s", gname, x),
				fmt.Sprintf("Goodput of group %q over its max-min fair share against %s, one line per algorithm (1 = its fair share).", gname, x),
				"goodput / fair share", get)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				figs = append(figs, f)
			}
		}
	}
	return figs, tables, nil
}

// maxBarRuns bounds the runs a per-run bar chart shows.
const maxBarRuns = 10

// fctSweepFigure draws the FCT slowdown percentile q ("p50" or "p99") of every size
// bucket, one bar per run; ok is false without finished messages or with too many runs.
func fctSweepFigure(sums []*analysis.Summary, q string) (Figure, bool, error) {
	var buckets []string
	seen := map[string]bool{}
	any := false
	for _, s := range sums {
		for _, b := range s.FCTBuckets {
			any = true
			if !seen[b.Name] {
				seen[b.Name] = true
				buckets = append(buckets, b.Name)
			}
		}
	}
	if !any || len(sums) < 2 || len(sums) > maxBarRuns {
		return Figure{}, false, nil
	}
	// Buckets in the catalogue's order.
	order := map[string]int{}
	for i, b := range metrics.DefaultBuckets() {
		order[b.Name] = i
	}
	sort.SliceStable(buckets, func(i, j int) bool { return order[buckets[i]] < order[buckets[j]] })
	p := newPlot("FCT slowdown "+q+" by flow size, per run", "size bucket", "FCT / ideal FCT ("+q+")")
	w := vg.Points(float64(min(24, 200/len(sums))))
	for k, s := range sums {
		vals := make(plotter.Values, len(buckets))
		for i, name := range buckets {
			for _, b := range s.FCTBuckets {
				if b.Name == name && b.Slowdown != nil {
					if q == "p50" {
						vals[i] = b.Slowdown.P50
					} else {
						vals[i] = b.Slowdown.P99
					}
				}
			}
		}
		bc, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return Figure{}, false, fmt.Errorf("report: fct sweep plot: %w", err)
		}
		bc.Color = colour(k)
		bc.LineStyle.Width = 0
		bc.Offset = w * vg.Length(2*k-len(sums)+1) / 2
		p.Add(bc)
		p.Legend.Add(runLabel(s), bc)
	}
	p.NominalX(buckets...)
	p.X.Min, p.X.Max = p.X.Min-0.5, p.X.Max+0.5
	yAxis(p, "FCT / ideal FCT ("+q+")", plainUnits)
	f, err := render(p, "sweep-fct-slowdown-"+q, fmt.Sprintf("The %s FCT slowdown of each size bucket (small < 100KB ≤ medium < 1MB ≤ large), one bar per run.", q))
	return f, err == nil, err
}

// shareSweepFigure draws each flow group's goodput over its fair share, one bar per run.
func shareSweepFigure(sums []*analysis.Summary) (Figure, bool, error) {
	if len(sums) < 2 || len(sums) > maxBarRuns {
		return Figure{}, false, nil
	}
	var groups []string
	seen := map[string]bool{}
	for _, s := range sums {
		for _, g := range s.Groups {
			if !seen[g.Name] && g.FairShareBps > 0 {
				seen[g.Name] = true
				groups = append(groups, g.Name)
			}
		}
	}
	if len(groups) == 0 {
		return Figure{}, false, nil
	}
	p := newPlot("Goodput / max-min fair share by flow group, per run", "flow group", "goodput / fair share")
	w := vg.Points(float64(min(24, 200/len(sums))))
	for k, s := range sums {
		vals := make(plotter.Values, len(groups))
		for i, name := range groups {
			for _, g := range s.Groups {
				if g.Name == name && g.FairShareBps > 0 {
					vals[i] = g.GoodputBps / g.FairShareBps
				}
			}
		}
		bc, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return Figure{}, false, fmt.Errorf("report: share sweep plot: %w", err)
		}
		bc.Color = colour(k)
		bc.LineStyle.Width = 0
		bc.Offset = w * vg.Length(2*k-len(sums)+1) / 2
		p.Add(bc)
		p.Legend.Add(runLabel(s), bc)
	}
	p.NominalX(groups...)
	p.X.Min, p.X.Max = p.X.Min-0.5, p.X.Max+0.5
	yAxis(p, "goodput / fair share", plainUnits)
	f, err := render(p, "sweep-group-share", "Each flow group's goodput over its max-min fair share (1 = its fair share), one bar per run.")
	return f, err == nil, err
}

// runLabel names a run in a legend by its sweep variables.
func runLabel(s *analysis.Summary) string {
	label := strings.TrimSuffix(strings.TrimPrefix(expectResultLabel(s.Vars), " ["), "]")
	if label == "" {
		label = s.Run
	}
	return label
}

func expectResultLabel(v map[string]string) string { return expect.Result{Vars: v}.Label() }

// numericVars are the sweep variables whose values all parse as numbers and that take
// more than one value.
func numericVars(sums []*analysis.Summary) []string {
	seen := map[string]map[string]bool{}
	numeric := map[string]bool{}
	for _, s := range sums {
		for k, v := range s.Vars {
			if seen[k] == nil {
				seen[k] = map[string]bool{}
				numeric[k] = true
			}
			seen[k][v] = true
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				numeric[k] = false
			}
		}
	}
	var out []string
	for k := range seen {
		if numeric[k] && len(seen[k]) > 1 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// sweepFigure draws get(s) against variable x, one line per combination of the other
// variables (cc first). ok is false when the points take fewer than two values of x.
func sweepFigure(sums []*analysis.Summary, x, name, title, caption, ylabel string, get func(*analysis.Summary) (v, bound float64, unit string, ok bool)) (Figure, bool, error) {
	type pt struct{ x, v, b float64 }
	lines := map[string][]pt{}
	unit := ""
	xs := map[float64]bool{}
	for _, s := range sums {
		xv, err := strconv.ParseFloat(s.Vars[x], 64)
		if err != nil {
			continue
		}
		v, b, u, ok := get(s)
		if !ok {
			continue
		}
		unit = u
		var parts []string
		if cc, ok := s.Vars["cc"]; ok {
			parts = append(parts, cc)
		}
		for _, k := range keysOf(s.Vars) {
			if k != x && k != "cc" {
				parts = append(parts, k+"="+s.Vars[k])
			}
		}
		key := strings.Join(parts, " ")
		lines[key] = append(lines[key], pt{xv, v, b})
		xs[xv] = true
	}
	if len(xs) < 2 {
		return Figure{}, false, nil
	}
	scale, units, ul := expectAxis(unit)
	if ylabel == "" {
		ylabel = ul
	}
	p := newPlot(title, "", "")
	boundShown := false
	for k, key := range keysOf(lines) {
		pts := lines[key]
		sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		var vs, bs plotter.XYs
		for _, q := range pts {
			vs = append(vs, plotter.XY{X: q.x, Y: q.v * scale})
			if !math.IsNaN(q.b) && !math.IsInf(q.b, 0) {
				bs = append(bs, plotter.XY{X: q.x, Y: q.b * scale})
			}
		}
		label := key
		if label == "" {
			label = "value"
		}
		l, s, err := plotter.NewLinePoints(vs)
		if err != nil {
			return Figure{}, false, fmt.Errorf("report: sweep plot: %w", err)
		}
		l.Color, s.Color = colour(k), colour(k)
		l.Width = vg.Points(1.5)
		s.Shape = plotutil.Shape(k)
		p.Add(l, s)
		p.Legend.Add(label, l, s)
		if len(bs) > 0 {
			bl := ""
			if !boundShown {
				bl, boundShown = "bound (dashed)", true
			}
			if err := line(p, bs, k, true, bl); err != nil {
				return Figure{}, false, err
			}
		}
	}
	// The x axis is labelled at the swept values only: between them it means nothing.
	p.X.Label.Text = x
	var ticks plot.ConstantTicks
	for _, xv := range slices.Sorted(maps.Keys(xs)) {
		ticks = append(ticks, plot.Tick{Value: xv, Label: strconv.FormatFloat(xv, 'g', -1, 64)})
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = p.X.Min-(p.X.Max-p.X.Min)/20, p.X.Max+(p.X.Max-p.X.Min)/20
	yAxis(p, ylabel, units)
	f, err := render(p, name, caption)
	return f, err == nil, err
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
