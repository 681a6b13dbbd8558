// Package comparison compares what two runs, or two experiments' sweeps, measured: the
// same flows, groups and queues side by side with their differences, in emulator units
// when both ran at the same time scale and in paper units when not
// (analysis.Summary.InPaperUnits). It reads summaries only (emulator/analysis), never raw
// results; `reef compare` is its user.
package comparison

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"reef/emulator/analysis"
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

// QueueDiff compares one port of two runs (matched by name); delays in µs. DelayMean,
// DelayP50 and DelayP99 are over the port's samples (Queue.QueueDelayUS), PacketDelay
// is the mean wait of the packets that left it (Queue.PacketDelayUS).
type QueueDiff struct {
	Name string `json:"name"`
	// MTU is the port's MTU in run A (bytes; 0 when the summary does not say).
	MTU         int  `json:"mtu,omitempty"`
	Utilisation Diff `json:"utilisation"`
	DelayMean   Diff `json:"queue_delay_mean_us"`
	DelayP50    Diff `json:"queue_delay_p50_us"`
	DelayP99    Diff `json:"queue_delay_p99_us"`
	BytesMean   Diff `json:"queue_bytes_mean"`
	PacketDelay Diff `json:"packet_delay_us"`
	Drops       Diff `json:"drops"`
}

// The units a Comparison is in (Comparison.Units).
const (
	// EmulatorUnits: both runs had the same time scale; values are as they ran.
	EmulatorUnits = "emulator"
	// PaperUnits: the runs had different time scales; each run's rates are × its τ
	// and its times ÷ its τ (Summary.InPaperUnits).
	PaperUnits = "paper"
)

// Comparison is run B against run A (the reference: sim against netns gives netns's
// emulation error relative to sim when A is the sim run).
type Comparison struct {
	A string `json:"a"`
	B string `json:"b"`
	// Units is EmulatorUnits when A and B ran at the same time scale and PaperUnits
	// when not (a sim run at τ = 200 against a netns run at τ = 2000); TimeScaleA and
	// TimeScaleB are their τ (1 for a summary without one). Sizes, utilisation, drops
	// and slowdowns are unit-free and compare as measured either way.
	Units      string  `json:"units"`
	TimeScaleA float64 `json:"time_scale_a"`
	TimeScaleB float64 `json:"time_scale_b"`
	// FidelityA and FidelityB are the runs' fidelity verdicts ("ok", "degraded"; empty
	// when the summary has none) and FidelityWhyA and FidelityWhyB what made a run
	// degraded. A degraded run's values may differ because the emulator did not keep
	// its schedule, not because of what it emulates.
	FidelityA    string      `json:"fidelity_a"`
	FidelityB    string      `json:"fidelity_b"`
	FidelityWhyA string      `json:"fidelity_why_a,omitempty"`
	FidelityWhyB string      `json:"fidelity_why_b,omitempty"`
	Groups       []GroupDiff `json:"groups"`
	Flows        []FlowDiff  `json:"flows"`
	Queues       []QueueDiff `json:"queues"`
	// OnlyA and OnlyB are flows or ports found in one run only.
	OnlyA []string `json:"only_a,omitempty"`
	OnlyB []string `json:"only_b,omitempty"`
}

// Compare matches flows and queues of a and b by name and computes their differences:
// in emulator units when a and b ran at the same time scale, in paper units (each
// through its own τ, see InPaperUnits) when not.
func Compare(a, b *analysis.Summary) *Comparison {
	c := &Comparison{A: label(a), B: label(b), Units: EmulatorUnits,
		TimeScaleA: a.Scale().Tau(), TimeScaleB: b.Scale().Tau(),
		FidelityA: a.Fidelity.Verdict, FidelityB: b.Fidelity.Verdict,
		FidelityWhyA: analysis.DegradedWhy(a.Fidelity), FidelityWhyB: analysis.DegradedWhy(b.Fidelity)}
	if c.TimeScaleA != c.TimeScaleB {
		a, b = a.InPaperUnits(), b.InPaperUnits()
		c.Units = PaperUnits
	}
	bg := map[string]*analysis.Group{}
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
		p50 := func(p *analysis.Pct) float64 { return p.P50 }
		p99 := func(p *analysis.Pct) float64 { return p.P99 }
		count := func(p *analysis.Pct) float64 { return float64(p.Count) }
		c.Groups = append(c.Groups, GroupDiff{Name: ga.Name,
			Goodput:      diff(ga.GoodputBps, gb.GoodputBps),
			RTTP99:       diff(pctField(ga.RTTUS, p99), pctField(gb.RTTUS, p99)),
			SlowdownP50:  diff(pctField(ga.Slowdown, p50), pctField(gb.Slowdown, p50)),
			SlowdownP99:  diff(pctField(ga.Slowdown, p99), pctField(gb.Slowdown, p99)),
			FinishedFlow: diff(pctField(ga.Slowdown, count), pctField(gb.Slowdown, count)),
		})
	}
	bf := map[string]*analysis.Flow{}
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
			RTTP50:  diff(pctField(fa.RTTUS, func(p *analysis.Pct) float64 { return p.P50 }), pctField(fb.RTTUS, func(p *analysis.Pct) float64 { return p.P50 })),
			RTTP99:  diff(pctField(fa.RTTUS, func(p *analysis.Pct) float64 { return p.P99 }), pctField(fb.RTTUS, func(p *analysis.Pct) float64 { return p.P99 })),
			FCT:     diff(optional(fa.FCTUS), optional(fb.FCTUS)),
		})
	}
	for _, f := range b.Flows {
		if !seen[f.Name] {
			c.OnlyB = append(c.OnlyB, "flow "+f.Name)
		}
	}
	bq := map[string]*analysis.Queue{}
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
		get := func(q *analysis.Queue, f func(*analysis.Pct) float64) float64 {
			if q.QueueDelayUS == nil {
				return 0 // no samples: an empty queue
			}
			return f(q.QueueDelayUS)
		}
		c.Queues = append(c.Queues, QueueDiff{Name: qa.Name, MTU: qa.MTU,
			Utilisation: diff(qa.Utilisation, qb.Utilisation),
			DelayMean:   diff(get(qa, func(p *analysis.Pct) float64 { return p.Mean }), get(qb, func(p *analysis.Pct) float64 { return p.Mean })),
			DelayP50:    diff(get(qa, func(p *analysis.Pct) float64 { return p.P50 }), get(qb, func(p *analysis.Pct) float64 { return p.P50 })),
			DelayP99:    diff(get(qa, func(p *analysis.Pct) float64 { return p.P99 }), get(qb, func(p *analysis.Pct) float64 { return p.P99 })),
			BytesMean:   diff(meanBytes(qa), meanBytes(qb)),
			PacketDelay: diff(qa.PacketDelayUS, qb.PacketDelayUS),
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

func label(s *analysis.Summary) string {
	l := s.Run
	if l == "" {
		l = s.Experiment
	}
	return fmt.Sprintf("%s (%s)", l, s.Backend)
}

func pctField(p *analysis.Pct, f func(*analysis.Pct) float64) float64 {
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
	f, ok := c.worstGoodput()
	if !ok {
		return 0, ""
	}
	return math.Abs(f.Goodput.Rel), f.Name
}

// worstGoodput is the flow of GoodputFlows whose goodput differs most (ok false when no
// flow has a relative difference).
func (c *Comparison) worstGoodput() (FlowDiff, bool) {
	return largest(c.GoodputFlows(), func(f FlowDiff) float64 { return f.Goodput.Rel })
}

// largest returns the item whose rel is largest in magnitude, passing over NaN (ok false
// when every rel is NaN).
func largest[T any](items []T, rel func(T) float64) (T, bool) {
	var worst T
	w, found := 0.0, false
	for _, it := range items {
		r := math.Abs(rel(it))
		if math.IsNaN(r) {
			continue
		}
		if !found || r > w {
			worst, w, found = it, r, true
		}
	}
	return worst, found
}

// BusyQueueUtilisation is the utilisation (in run A) from which a port counts as a
// bottleneck for MaxQueueDelayDiff.
const BusyQueueUtilisation = 0.5

// MaxQueueDelayDiff is the largest |relative difference| of mean queue delay over the
// ports at least BusyQueueUtilisation busy in run A, and the port (0, "" when none).
func (c *Comparison) MaxQueueDelayDiff() (float64, string) {
	q, ok := c.worstQueueDelay()
	if !ok {
		return 0, ""
	}
	return math.Abs(q.DelayMean.Rel), q.Name
}

// worstQueueDelay is the busy port whose mean queue delay differs most (ok false when
// no port was busy in run A), among those whose mean queue holds a packet (an MTU) in
// one run at least: a queue of less than one packet is the rounding of when frames meet,
// where a difference of a few nanoseconds can be 100%.
func (c *Comparison) worstQueueDelay() (QueueDiff, bool) {
	return largest(c.Queues, func(q QueueDiff) float64 {
		if q.Utilisation.A < BusyQueueUtilisation {
			return math.NaN() // not a bottleneck
		}
		mtu := q.MTU
		if mtu <= 0 {
			mtu = analysis.UnknownMTU
		}
		if max(q.BytesMean.A, q.BytesMean.B) < float64(mtu) {
			return math.NaN() // under a packet
		}
		return q.DelayMean.Rel
	})
}

// meanBytes is q's time-average backlog (0 with no samples: an empty queue).
func meanBytes(q *analysis.Queue) float64 {
	if q.QueueBytes == nil {
		return 0
	}
	return q.QueueBytes.Mean
}

// Limits bound how much run B may differ from run A, as fractions of A; a nil limit is
// not checked.
type Limits struct {
	// Goodput bounds MaxGoodputDiff, QueueDelay MaxQueueDelayDiff.
	Goodput    *float64 `json:"goodput,omitempty"`
	QueueDelay *float64 `json:"queue_delay,omitempty"`
}

// set reports whether any limit is given.
func (l Limits) set() bool { return l.Goodput != nil || l.QueueDelay != nil }

// Exceeded lists the limits c exceeds, one phrase each ("flow victim's goodput differs
// by 12.0% (limit 10.0%)"); nil when it is within them.
func (c *Comparison) Exceeded(l Limits) []string {
	var out []string
	if l.Goodput != nil {
		if d, flow := c.MaxGoodputDiff(); d > *l.Goodput {
			out = append(out, fmt.Sprintf("flow %s's goodput differs by %s (limit %.1f%%)", flow, fmtPct(d), *l.Goodput*100))
		}
	}
	if l.QueueDelay != nil {
		if d, port := c.MaxQueueDelayDiff(); d > *l.QueueDelay {
			out = append(out, fmt.Sprintf("port %s's mean queue delay differs by %s (limit %.1f%%)", port, fmtPct(d), *l.QueueDelay*100))
		}
	}
	return out
}

// fmtPct prints a fraction as a percentage ("12.0%", "∞").
func fmtPct(v float64) string {
	if math.IsInf(v, 0) {
		return "∞"
	}
	return fmt.Sprintf("%.1f%%", v*100)
}

// Degraded says whether either run's fidelity verdict is degraded.
func (c *Comparison) Degraded() bool { return c.FidelityA == "degraded" || c.FidelityB == "degraded" }

// fmtTau prints a time scale ("200").
func fmtTau(t float64) string { return strconv.FormatFloat(t, 'g', -1, 64) }

// unitsLine says which units c is in.
func (c *Comparison) unitsLine() string {
	if c.Units == PaperUnits {
		return fmt.Sprintf("in paper units: A at τ=%s, B at τ=%s (each run's rates × its τ, times ÷ its τ)", fmtTau(c.TimeScaleA), fmtTau(c.TimeScaleB))
	}
	return fmt.Sprintf("in emulator units: A and B at τ=%s", fmtTau(c.TimeScaleA))
}

// fidelityText is a run's verdict as the text output shows it.
func fidelityText(verdict, why string) string {
	switch {
	case verdict == "":
		return "fidelity not recorded"
	case why != "":
		return "fidelity " + verdict + " (" + why + ")"
	}
	return "fidelity " + verdict
}

// degradedNote warns that a degraded run's differences may be the emulator's, or is ""
// when neither run is degraded.
func (c *Comparison) degradedNote() string {
	var which []string
	if c.FidelityA == "degraded" {
		which = append(which, "A")
	}
	if c.FidelityB == "degraded" {
		which = append(which, "B")
	}
	if len(which) == 0 {
		return ""
	}
	verb := "is"
	if len(which) > 1 {
		verb = "are"
	}
	return fmt.Sprintf("! %s %s degraded: a difference may come from the emulator not keeping up, not from what it emulates", strings.Join(which, " and "), verb)
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
	case "Gbps":
		return fmt.Sprintf("%.2f", v/1e9)
	case "Mbps":
		return fmt.Sprintf("%.2f", v/1e6)
	case "us": // paper-unit delays are often below a µs
		switch a := math.Abs(v); {
		case a < 1:
			return fmt.Sprintf("%.3f", v)
		case a < 10:
			return fmt.Sprintf("%.2f", v)
		}
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

// rateUnit is the unit goodput is printed in: Gbit/s when some goodput reaches 10
// Gbit/s (paper units), Mbit/s otherwise.
func (c *Comparison) rateUnit() (unit, name string) {
	big := func(d Diff) bool { return math.Abs(d.A) >= 10e9 || math.Abs(d.B) >= 10e9 }
	for _, g := range c.Groups {
		if big(g.Goodput) {
			return "Gbps", "Gbit/s"
		}
	}
	for _, f := range c.Flows {
		if big(f.Goodput) {
			return "Gbps", "Gbit/s"
		}
	}
	return "Mbps", "Mbit/s"
}

// WriteText prints the comparison: a header with both runs, their time scales and
// fidelity verdicts and the units (a warning when a run is degraded), then aligned
// tables: per group and flow goodput (Mbit/s, or Gbit/s in paper units), RTT p50/p99
// and FCT (µs); per port utilisation (%), mean/p50/p99 queue delay over the samples,
// mean packet delay (µs) and drops. Each value shows A, B, B − A and the relative
// difference. Ports idle in both runs are left out.
func (c *Comparison) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "A = %s, τ=%s, %s\n", c.A, fmtTau(c.TimeScaleA), fidelityText(c.FidelityA, c.FidelityWhyA))
	fmt.Fprintf(w, "B = %s, τ=%s, %s\n", c.B, fmtTau(c.TimeScaleB), fidelityText(c.FidelityB, c.FidelityWhyB))
	fmt.Fprintln(w, c.unitsLine())
	if n := c.degradedNote(); n != "" {
		fmt.Fprintln(w, n)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	ru, rname := c.rateUnit()
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
		fmt.Fprintf(tw, "GROUP\t%s\t\n", hdr("GOODPUT "+rname, "RTT p99 µs", "SLOWDOWN p50", "SLOWDOWN p99", "FINISHED"))
	} else {
		fmt.Fprintf(tw, "GROUP\t%s\t\n", hdr("GOODPUT "+rname, "RTT p99 µs"))
	}
	for _, g := range c.Groups {
		row := cols(g.Goodput, ru) + "\t" + cols(g.RTTP99, "us")
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
		{"GOODPUT " + rname, ru, func(f FlowDiff) Diff { return f.Goodput }},
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
	fmt.Fprintf(tw, "PORT\t%s\t\n", hdr("UTIL %", "QDELAY mean µs", "QDELAY p50 µs", "QDELAY p99 µs", "PKT DELAY µs", "DROPS"))
	for _, q := range c.Queues {
		if q.Utilisation.A == 0 && q.Utilisation.B == 0 && q.DelayP99.A == 0 && q.DelayP99.B == 0 && q.Drops.A == 0 && q.Drops.B == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", q.Name, cols(q.Utilisation, "%"), cols(q.DelayMean, "us"), cols(q.DelayP50, "us"), cols(q.DelayP99, "us"), cols(q.PacketDelay, "us"), cols(q.Drops, ""))
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

// ResultSet is what one `reef compare` argument names: a single run (a run directory
// or its summary.json) or an experiment's results directory (`reef run --out DIR`:
// sweep.json and one run directory per sweep point, "run" when there is no sweep).
type ResultSet struct {
	// Path is the directory or file as given.
	Path string
	// Experiment is true for an experiment's results directory, even one holding a
	// single run.
	Experiment bool
	// Points are the runs: for a single run one with an empty name; for an experiment
	// one per sweep point, named by its run directory ("cc=poseidon,M=2,N=2"), in
	// sweep.json's order (by name when the directory has no sweep.json yet).
	Points []Point
}

// Point is one run of a ResultSet.
type Point struct {
	Name    string
	Summary *analysis.Summary
}

// ReadResults reads what path holds: summary.json (a file, or a directory holding
// one) is a single run; a directory with sweep.json is an experiment's results, each
// run directory it lists a point; a directory without either whose sub-directories hold
// summary.json files (an experiment still running, or one interrupted before it wrote
// sweep.json) is an experiment with those points.
func ReadResults(path string) (*ResultSet, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if !st.IsDir() || exists(filepath.Join(path, analysis.SummaryFile)) {
		s, err := analysis.ReadSummary(path)
		if err != nil {
			return nil, err
		}
		return &ResultSet{Path: path, Points: []Point{{Summary: s}}}, nil
	}
	rs := &ResultSet{Path: path, Experiment: true}
	if sf := filepath.Join(path, analysis.SweepFile); exists(sf) {
		sw, err := analysis.ReadSweep(path)
		if err != nil {
			return nil, err
		}
		for _, r := range sw.Runs {
			s, err := analysis.ReadSummary(filepath.Join(path, filepath.FromSlash(r.Dir)))
			if err != nil {
				return nil, fmt.Errorf("report: %s lists run %s: %w", sf, r.Dir, err)
			}
			rs.Points = append(rs.Points, Point{Name: r.Dir, Summary: s})
		}
		if len(rs.Points) == 0 {
			return nil, fmt.Errorf("report: %s lists no run", sf)
		}
		return rs, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	for _, e := range ents { // os.ReadDir sorts by name
		sub := filepath.Join(path, e.Name())
		if !e.IsDir() || !exists(filepath.Join(sub, analysis.SummaryFile)) {
			continue
		}
		s, err := analysis.ReadSummary(sub)
		if err != nil {
			return nil, err
		}
		rs.Points = append(rs.Points, Point{Name: e.Name(), Summary: s})
	}
	if len(rs.Points) == 0 {
		return nil, fmt.Errorf("report: %s holds no %s, no %s and no run directory with a %s", path, analysis.SummaryFile, analysis.SweepFile, analysis.SummaryFile)
	}
	return rs, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// describe says what a result set is, for messages ("an experiment's results directory
// with 12 sweep points", "one run").
func (r *ResultSet) describe() string {
	switch {
	case !r.Experiment:
		return "one run"
	case len(r.Points) == 1:
		return "an experiment's results directory with one run"
	}
	return fmt.Sprintf("an experiment's results directory with %d sweep points", len(r.Points))
}

// PointComparison is one sweep point of two experiments compared: the comparison of
// its runs, its largest differences and the limits they exceed.
type PointComparison struct {
	Point string `json:"point"`
	// GoodputDiff is MaxGoodputDiff on GoodputFlow, QueueDelayDiff MaxQueueDelayDiff
	// on QueuePort (empty when no port was busy in A).
	GoodputDiff    float64 `json:"max_goodput_diff"`
	GoodputFlow    string  `json:"max_goodput_diff_flow,omitempty"`
	QueueDelayDiff float64 `json:"max_queue_delay_diff"`
	QueuePort      string  `json:"max_queue_delay_diff_port,omitempty"`
	// Exceeded lists the limits the point exceeds (Comparison.Exceeded).
	Exceeded   []string    `json:"exceeded,omitempty"`
	Comparison *Comparison `json:"comparison"`
}

// MarshalJSON writes an infinite difference (a value that was 0 in A) as null.
func (p PointComparison) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Point          string      `json:"point"`
		GoodputDiff    *float64    `json:"max_goodput_diff"`
		GoodputFlow    string      `json:"max_goodput_diff_flow,omitempty"`
		QueueDelayDiff *float64    `json:"max_queue_delay_diff"`
		QueuePort      string      `json:"max_queue_delay_diff_port,omitempty"`
		Exceeded       []string    `json:"exceeded,omitempty"`
		Comparison     *Comparison `json:"comparison"`
	}{p.Point, finite(p.GoodputDiff), p.GoodputFlow, finite(p.QueueDelayDiff), p.QueuePort, p.Exceeded, p.Comparison})
}

// finite is v, or nil when v is NaN or infinite.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// SweepComparison is experiment results directory B against A, sweep point by sweep
// point (matched by run directory name).
type SweepComparison struct {
	A string `json:"a"`
	B string `json:"b"`
	// ExperimentA and ExperimentB name the experiments, BackendA and BackendB their
	// backends (from their first points).
	ExperimentA string `json:"experiment_a"`
	ExperimentB string `json:"experiment_b"`
	BackendA    string `json:"backend_a"`
	BackendB    string `json:"backend_b"`
	Limits      Limits `json:"limits"`
	// Points are the points of A also in B, in A's order.
	Points []PointComparison `json:"points"`
	// OnlyA and OnlyB are the points found on one side only; they are not compared.
	OnlyA []string `json:"only_a,omitempty"`
	OnlyB []string `json:"only_b,omitempty"`
	// Pass is true when no point exceeds a limit and, when a limit is set, every point
	// was found on both sides (a sweep one side did not finish cannot be vouched for).
	Pass bool `json:"pass"`
}

// CompareSweeps compares two experiments' results point by point (Compare on each pair
// of runs of the same sweep point) and checks each against l. It is an error when a or
// b is a single run, or when they have no point in common.
func CompareSweeps(a, b *ResultSet, l Limits) (*SweepComparison, error) {
	if !a.Experiment || !b.Experiment {
		return nil, fmt.Errorf("report: A (%s) is %s but B (%s) is %s: compare two runs (run directories or summary.json files) or two experiments' results directories", a.Path, a.describe(), b.Path, b.describe())
	}
	sc := &SweepComparison{A: a.Path, B: b.Path, Limits: l, Pass: true,
		ExperimentA: a.Points[0].Summary.Experiment, ExperimentB: b.Points[0].Summary.Experiment,
		BackendA: a.Points[0].Summary.Backend, BackendB: b.Points[0].Summary.Backend}
	inB := map[string]*analysis.Summary{}
	for _, p := range b.Points {
		inB[p.Name] = p.Summary
	}
	inA := map[string]bool{}
	for _, p := range a.Points {
		inA[p.Name] = true
		sb, ok := inB[p.Name]
		if !ok {
			sc.OnlyA = append(sc.OnlyA, p.Name)
			continue
		}
		c := Compare(p.Summary, sb)
		pc := PointComparison{Point: p.Name, Comparison: c, Exceeded: c.Exceeded(l)}
		pc.GoodputDiff, pc.GoodputFlow = c.MaxGoodputDiff()
		pc.QueueDelayDiff, pc.QueuePort = c.MaxQueueDelayDiff()
		sc.Pass = sc.Pass && len(pc.Exceeded) == 0
		sc.Points = append(sc.Points, pc)
	}
	for _, p := range b.Points {
		if !inA[p.Name] {
			sc.OnlyB = append(sc.OnlyB, p.Name)
		}
	}
	sc.Pass = sc.Pass && (!l.set() || len(sc.OnlyA)+len(sc.OnlyB) == 0)
	if len(sc.Points) == 0 {
		return nil, fmt.Errorf("report: %s and %s have no sweep point in common (A: %s; B: %s)", a.Path, b.Path, strings.Join(sc.OnlyA, " "), strings.Join(sc.OnlyB, " "))
	}
	return sc, nil
}

// Exceeded lists, per point, the limits it exceeds ("cc=swift,M=2,N=4: flow victim's
// goodput differs by 12.0% (limit 10.0%)") and, when a limit is set, the points one
// side lacks ("cc=hpcc: only in A, not compared").
func (s *SweepComparison) Exceeded() []string {
	var out []string
	for _, p := range s.Points {
		for _, e := range p.Exceeded {
			out = append(out, p.Point+": "+e)
		}
	}
	if s.Limits.set() {
		for _, n := range s.OnlyA {
			out = append(out, n+": only in A, not compared")
		}
		for _, n := range s.OnlyB {
			out = append(out, n+": only in B, not compared")
		}
	}
	return out
}

// WriteText prints one line per compared point (its name, both fidelity verdicts, the
// largest goodput difference and its flow, the largest mean queue delay difference at a
// busy port and the port, and the limits' verdict), the points found on one side only,
// and, when detail is set, each point's full comparison (Comparison.WriteText).
func (s *SweepComparison) WriteText(w io.Writer, detail bool) error {
	side := func(dir, exp, backend string) string {
		return fmt.Sprintf("%s (%s, %s)", dir, exp, backend)
	}
	fmt.Fprintf(w, "A = %s\nB = %s\n", side(s.A, s.ExperimentA, s.BackendA), side(s.B, s.ExperimentB, s.BackendB))
	units := map[string]bool{}
	for _, p := range s.Points {
		units[p.Comparison.unitsLine()] = true
	}
	if len(units) == 1 {
		fmt.Fprintln(w, s.Points[0].Comparison.unitsLine())
	} else {
		fmt.Fprintln(w, "units differ between points (their time scales do): see each point's header with --detail")
	}
	var lim []string
	if s.Limits.Goodput != nil {
		lim = append(lim, fmt.Sprintf("goodput %.1f%% per flow", *s.Limits.Goodput*100))
	}
	if s.Limits.QueueDelay != nil {
		lim = append(lim, fmt.Sprintf("mean queue delay %.1f%% per port at least %.0f%% busy in A", *s.Limits.QueueDelay*100, BusyQueueUtilisation*100))
	}
	if len(lim) > 0 {
		fmt.Fprintf(w, "limits: %s\n", strings.Join(lim, ", "))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POINT\tFIDELITY A\tFIDELITY B\tGOODPUT Δ\tFLOW\tQDELAY Δ\tPORT\tLIMITS")
	verdict := func(v string) string {
		switch v {
		case "":
			return "–"
		case "degraded":
			return "degraded!"
		}
		return v
	}
	degraded, exceeded := 0, 0
	for _, p := range s.Points {
		c := p.Comparison
		if c.Degraded() {
			degraded++
		}
		good, flow := "–", "–"
		if f, ok := c.worstGoodput(); ok {
			good, flow = fmtRel(f.Goodput.Rel), f.Name
		}
		qd, port := "–", "–"
		if q, ok := c.worstQueueDelay(); ok {
			qd, port = fmtRel(q.DelayMean.Rel), q.Name
		}
		limits := "–"
		switch {
		case len(p.Exceeded) > 0:
			exceeded++
			var what []string
			if s.Limits.Goodput != nil && p.GoodputDiff > *s.Limits.Goodput {
				what = append(what, "goodput")
			}
			if s.Limits.QueueDelay != nil && p.QueueDelayDiff > *s.Limits.QueueDelay {
				what = append(what, "queue delay")
			}
			limits = "EXCEEDED: " + strings.Join(what, ", ")
		case s.Limits.Goodput != nil || s.Limits.QueueDelay != nil:
			limits = "ok"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Point, verdict(c.FidelityA), verdict(c.FidelityB), good, flow, qd, port, limits)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	only := func(which string, names []string) {
		if len(names) > 0 {
			fmt.Fprintf(w, "only in %s (not compared): %s\n", which, strings.Join(names, ", "))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d points compared", len(s.Points))
	switch {
	case exceeded == 1:
		fmt.Fprint(w, ", 1 exceeds a limit")
	case exceeded > 1:
		fmt.Fprintf(w, ", %d exceed a limit", exceeded)
	}
	fmt.Fprintln(w)
	only("A", s.OnlyA)
	only("B", s.OnlyB)
	if degraded > 0 {
		fmt.Fprintf(w, "! %d of %d points have a degraded run (marked !): their differences may come from the emulator not keeping up, not from what it emulates\n", degraded, len(s.Points))
	}
	if !detail {
		return nil
	}
	for _, p := range s.Points {
		fmt.Fprintf(w, "\n== %s ==\n", p.Point)
		if err := p.Comparison.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}
