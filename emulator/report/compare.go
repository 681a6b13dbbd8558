package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Diff is one value in two runs: B − A absolutely and relative to A.
type Diff struct {
	A   float64 `json:"a"`
	B   float64 `json:"b"`
	Abs float64 `json:"abs"`
	// Rel is (B − A) / |A|: 0 when both are 0, ±Inf when only A is 0, NaN when either
	// value is missing.
	Rel float64 `json:"rel"`
}

// MarshalJSON writes non-finite numbers (a difference relative to 0, a missing value) as
// null.
func (d Diff) MarshalJSON() ([]byte, error) {
	f := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "null"
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return []byte(fmt.Sprintf(`{"a":%s,"b":%s,"abs":%s,"rel":%s}`, f(d.A), f(d.B), f(d.Abs), f(d.Rel))), nil
}

func diff(a, b float64) Diff {
	d := Diff{A: a, B: b, Abs: b - a}
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		d.Rel = math.NaN()
	case a == b:
		d.Rel = 0
	case a == 0:
		d.Rel = math.Inf(int(math.Copysign(1, b)))
	default:
		d.Rel = (b - a) / math.Abs(a)
	}
	return d
}

// FlowDiff compares one flow of two runs (matched by name).
type FlowDiff struct {
	Name      string `json:"name"`
	Group     string `json:"group"`
	LongLived bool   `json:"long_lived"`
	// Goodput in bit/s; RTT and FCT in µs.
	Goodput Diff `json:"goodput_bps"`
	RTTP50  Diff `json:"rtt_p50_us"`
	RTTP99  Diff `json:"rtt_p99_us"`
	FCT     Diff `json:"fct_us"`
}

// GroupDiff compares one flow group of two runs: summed goodput (bit/s), RTT p99 (µs)
// and the FCT slowdown of its finished messages.
type GroupDiff struct {
	Name         string `json:"name"`
	Goodput      Diff   `json:"goodput_bps"`
	RTTP99       Diff   `json:"rtt_p99_us"`
	SlowdownP50  Diff   `json:"fct_slowdown_p50"`
	SlowdownP99  Diff   `json:"fct_slowdown_p99"`
	FinishedFlow Diff   `json:"finished"`
}

// QueueDiff compares one port of two runs (matched by name); delays in µs.
type QueueDiff struct {
	Name        string `json:"name"`
	Utilisation Diff   `json:"utilisation"`
	DelayMean   Diff   `json:"queue_delay_mean_us"`
	DelayP50    Diff   `json:"queue_delay_p50_us"`
	DelayP99    Diff   `json:"queue_delay_p99_us"`
	Drops       Diff   `json:"drops"`
}

// Comparison is run B against run A (the reference: sim against netns gives netns's
// emulation error relative to sim when A is the sim run).
type Comparison struct {
	A      string      `json:"a"`
	B      string      `json:"b"`
	Groups []GroupDiff `json:"groups"`
	Flows  []FlowDiff  `json:"flows"`
	Queues []QueueDiff `json:"queues"`
	// OnlyA and OnlyB are flows or ports found in one run only.
	OnlyA []string `json:"only_a,omitempty"`
	OnlyB []string `json:"only_b,omitempty"`
}

// Compare matches flows and queues of a and b by name and computes their differences.
func Compare(a, b *Summary) *Comparison {
	c := &Comparison{A: label(a), B: label(b)}
	bg := map[string]*Group{}
	for i := range b.Groups {
		bg[b.Groups[i].Name] = &b.Groups[i]
	}
	for i := range a.Groups {
		ga := &a.Groups[i]
		gb, ok := bg[ga.Name]
		if !ok {
			c.OnlyA = append(c.OnlyA, "group "+ga.Name)
			continue
		}
		p50 := func(p *Pct) float64 { return p.P50 }
		p99 := func(p *Pct) float64 { return p.P99 }
		count := func(p *Pct) float64 { return float64(p.Count) }
		c.Groups = append(c.Groups, GroupDiff{Name: ga.Name,
			Goodput:      diff(ga.GoodputBps, gb.GoodputBps),
			RTTP99:       diff(pctField(ga.RTTUS, p99), pctField(gb.RTTUS, p99)),
			SlowdownP50:  diff(pctField(ga.Slowdown, p50), pctField(gb.Slowdown, p50)),
			SlowdownP99:  diff(pctField(ga.Slowdown, p99), pctField(gb.Slowdown, p99)),
			FinishedFlow: diff(pctField(ga.Slowdown, count), pctField(gb.Slowdown, count)),
		})
	}
	bf := map[string]*Flow{}
	for i := range b.Flows {
		bf[b.Flows[i].Name] = &b.Flows[i]
	}
	seen := map[string]bool{}
	for i := range a.Flows {
		fa := &a.Flows[i]
		fb, ok := bf[fa.Name]
		if !ok {
			c.OnlyA = append(c.OnlyA, "flow "+fa.Name)
			continue
		}
		seen[fa.Name] = true
		c.Flows = append(c.Flows, FlowDiff{Name: fa.Name, Group: fa.Group, LongLived: fa.SizeBytes == 0,
			Goodput: diff(fa.GoodputBps, fb.GoodputBps),
			RTTP50:  diff(pctField(fa.RTTUS, func(p *Pct) float64 { return p.P50 }), pctField(fb.RTTUS, func(p *Pct) float64 { return p.P50 })),
			RTTP99:  diff(pctField(fa.RTTUS, func(p *Pct) float64 { return p.P99 }), pctField(fb.RTTUS, func(p *Pct) float64 { return p.P99 })),
			FCT:     diff(optional(fa.FCTUS), optional(fb.FCTUS)),
		})
	}
	for _, f := range b.Flows {
		if !seen[f.Name] {
			c.OnlyB = append(c.OnlyB, "flow "+f.Name)
		}
	}
	bq := map[string]*Queue{}
	for i := range b.Queues {
		bq[b.Queues[i].Name] = &b.Queues[i]
	}
	seenQ := map[string]bool{}
	for i := range a.Queues {
		qa := &a.Queues[i]
		qb, ok := bq[qa.Name]
		if !ok {
			c.OnlyA = append(c.OnlyA, "port "+qa.Name)
			continue
		}
		seenQ[qa.Name] = true
		get := func(q *Queue, f func(*Pct) float64) float64 {
			if q.QueueDelayUS == nil {
				return 0 // no samples: an empty queue
			}
			return f(q.QueueDelayUS)
		}
		c.Queues = append(c.Queues, QueueDiff{Name: qa.Name,
			Utilisation: diff(qa.Utilisation, qb.Utilisation),
			DelayMean:   diff(get(qa, func(p *Pct) float64 { return p.Mean }), get(qb, func(p *Pct) float64 { return p.Mean })),
			DelayP50:    diff(get(qa, func(p *Pct) float64 { return p.P50 }), get(qb, func(p *Pct) float64 { return p.P50 })),
			DelayP99:    diff(get(qa, func(p *Pct) float64 { return p.P99 }), get(qb, func(p *Pct) float64 { return p.P99 })),
			Drops:       diff(float64(qa.Drops), float64(qb.Drops)),
		})
	}
	for _, q := range b.Queues {
		if !seenQ[q.Name] {
			c.OnlyB = append(c.OnlyB, "port "+q.Name)
		}
	}
	return c
}

func label(s *Summary) string {
	l := s.Run
	if l == "" {
		l = s.Experiment
	}
	return fmt.Sprintf("%s (%s)", l, s.Backend)
}

func pctField(p *Pct, f func(*Pct) float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return f(p)
}

func optional(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// GoodputFlows are the flows the goodput limit applies to: the long-lived ones, or every
// flow when there is none (a message's goodput mostly measures its FCT, compared apart).
func (c *Comparison) GoodputFlows() []FlowDiff {
	var out []FlowDiff
	for _, f := range c.Flows {
		if f.LongLived {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return c.Flows
	}
	return out
}

// MaxGoodputDiff is the largest |relative goodput difference| over GoodputFlows and the
// flow it occurs on (0, "" when there are no flows).
func (c *Comparison) MaxGoodputDiff() (float64, string) {
	worst, name := 0.0, ""
	for _, f := range c.GoodputFlows() {
		r := math.Abs(f.Goodput.Rel)
		if math.IsNaN(r) {
			continue
		}
		if r > worst || name == "" {
			worst, name = r, f.Name
		}
	}
	return worst, name
}

// BusyQueueUtilisation is the utilisation (in run A) from which a port counts as a
// bottleneck for MaxQueueDelayDiff.
const BusyQueueUtilisation = 0.5

// MaxQueueDelayDiff is the largest |relative difference| of mean queue delay over the
// ports at least BusyQueueUtilisation busy in run A, and the port (0, "" when none).
func (c *Comparison) MaxQueueDelayDiff() (float64, string) {
	worst, name := 0.0, ""
	for _, q := range c.Queues {
		if q.Utilisation.A < BusyQueueUtilisation {
			continue
		}
		r := math.Abs(q.DelayMean.Rel)
		if math.IsNaN(r) {
			continue
		}
		if r > worst || name == "" {
			worst, name = r, q.Name
		}
	}
	return worst, name
}

// maxTextFlows bounds the flows WriteText prints.
const maxTextFlows = 40

func absRel(d Diff) float64 {
	r := math.Abs(d.Rel)
	if math.IsNaN(r) {
		return -1
	}
	return r
}

func fmtRel(r float64) string {
	switch {
	case math.IsNaN(r):
		return "–"
	case math.IsInf(r, 0):
		return "∞"
	}
	return fmt.Sprintf("%+.1f%%", r*100)
}

func fmtVal(v float64, unit string) string {
	if math.IsNaN(v) {
		return "–"
	}
	switch unit {
	case "Mbps":
		return fmt.Sprintf("%.2f", v/1e6)
	case "us":
		return fmt.Sprintf("%.1f", v)
	case "%":
		return fmt.Sprintf("%.1f", v*100)
	case "x":
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func cols(d Diff, unit string) string {
	return strings.Join([]string{fmtVal(d.A, unit), fmtVal(d.B, unit), fmtVal(d.Abs, unit), fmtRel(d.Rel)}, "\t")
}

// WriteText prints the comparison as aligned tables: per flow goodput (Mbit/s), RTT
// p50/p99 and FCT (µs); per port utilisation (%), mean/p50/p99 queue delay (µs) and
// drops. Each value shows A, B, B − A and the relative difference. Ports idle in both
// runs are left out.
func (c *Comparison) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "A = %s\nB = %s\n\n", c.A, c.B)
	hdr := func(names ...string) string {
		var parts []string
		for _, n := range names {
			parts = append(parts, n+" A", "B", "Δ", "Δ%")
		}
		return strings.Join(parts, "\t")
	}
	// Groups: slowdown columns only when some group has finished messages.
	slow := false
	for _, g := range c.Groups {
		if !math.IsNaN(g.SlowdownP50.A) || !math.IsNaN(g.SlowdownP50.B) {
			slow = true
		}
	}
	if slow {
		fmt.Fprintf(tw, "GROUP\t%s\t\n", hdr("GOODPUT Mbit/s", "RTT p99 µs", "SLOWDOWN p50", "SLOWDOWN p99", "FINISHED"))
	} else {
		fmt.Fprintf(tw, "GROUP\t%s\t\n", hdr("GOODPUT Mbit/s", "RTT p99 µs"))
	}
	for _, g := range c.Groups {
		row := cols(g.Goodput, "Mbps") + "\t" + cols(g.RTTP99, "us")
		if slow {
			row += "\t" + cols(g.SlowdownP50, "x") + "\t" + cols(g.SlowdownP99, "x") + "\t" + cols(g.FinishedFlow, "")
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", g.Name, row)
	}
	fmt.Fprintln(tw)
	// Flows: at most maxTextFlows, those whose goodput differs most.
	flows := c.Flows
	note := ""
	if len(flows) > maxTextFlows {
		flows = append([]FlowDiff(nil), flows...)
		sort.SliceStable(flows, func(i, j int) bool { return absRel(flows[i].Goodput) > absRel(flows[j].Goodput) })
		flows = flows[:maxTextFlows]
		note = fmt.Sprintf("(the %d of %d flows whose goodput differs most; --json lists all)\n", maxTextFlows, len(c.Flows))
	}
	// Columns without a value in either run (FCT of long-lived flows, RTT without
	// samples) are left out.
	has := func(get func(FlowDiff) Diff) bool {
		for _, f := range c.Flows {
			if d := get(f); !math.IsNaN(d.A) || !math.IsNaN(d.B) {
				return true
			}
		}
		return false
	}
	type column struct {
		name, unit string
		get        func(FlowDiff) Diff
	}
	var fcols []column
	for _, col := range []column{
		{"GOODPUT Mbit/s", "Mbps", func(f FlowDiff) Diff { return f.Goodput }},
		{"RTT p50 µs", "us", func(f FlowDiff) Diff { return f.RTTP50 }},
		{"RTT p99 µs", "us", func(f FlowDiff) Diff { return f.RTTP99 }},
		{"FCT µs", "us", func(f FlowDiff) Diff { return f.FCT }},
	} {
		if has(col.get) {
			fcols = append(fcols, col)
		}
	}
	var names []string
	for _, col := range fcols {
		names = append(names, col.name)
	}
	fmt.Fprint(tw, note)
	fmt.Fprintf(tw, "FLOW\tGROUP\t%s\t\n", hdr(names...))
	for _, f := range flows {
		var vals []string
		for _, col := range fcols {
			vals = append(vals, cols(col.get(f), col.unit))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", f.Name, f.Group, strings.Join(vals, "\t"))
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "PORT\t%s\t\n", hdr("UTIL %", "QDELAY mean µs", "QDELAY p50 µs", "QDELAY p99 µs", "DROPS"))
	for _, q := range c.Queues {
		if q.Utilisation.A == 0 && q.Utilisation.B == 0 && q.DelayP99.A == 0 && q.DelayP99.B == 0 && q.Drops.A == 0 && q.Drops.B == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", q.Name, cols(q.Utilisation, "%"), cols(q.DelayMean, "us"), cols(q.DelayP50, "us"), cols(q.DelayP99, "us"), cols(q.Drops, ""))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	only := func(which string, names []string) {
		if len(names) > 0 {
			sort.Strings(names)
			fmt.Fprintf(w, "\nonly in %s: %s\n", which, strings.Join(names, ", "))
		}
	}
	only("A", c.OnlyA)
	only("B", c.OnlyB)
	return nil
}
