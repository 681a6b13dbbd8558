package expect

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"reef/emulator/metrics"
)

// Dim is the physical dimension of a value; values are kept in base units.
type Dim int

// Dimensions.
const (
	DimNone  Dim = iota // a plain number (ratio, index, count)
	DimTime             // nanoseconds
	DimRate             // bit/s
	DimBytes            // bytes
)

// Unit is the base unit values of dimension d are expressed in ("ns", "bps", "B", "").
func (d Dim) Unit() string {
	return [...]string{"", "ns", "bps", "B"}[d]
}

func (d Dim) String() string {
	return [...]string{"a plain number", "a time", "a rate", "a size"}[d]
}

// Format writes v (in base units of d) for people, to 4 significant digits: "42.5us",
// "87.12Mbps", "1.5MB", "0.9312".
func (d Dim) Format(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	type step struct {
		f    float64
		unit string
	}
	var steps []step
	switch d {
	case DimTime:
		steps = []step{{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}}
	case DimRate:
		steps = []step{{1e12, "Tbps"}, {1e9, "Gbps"}, {1e6, "Mbps"}, {1e3, "Kbps"}, {1, "bps"}}
	case DimBytes:
		steps = []step{{1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}, {1, "B"}}
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	for _, st := range steps {
		if math.Abs(v) >= st.f || st.f == 1 {
			return strconv.FormatFloat(v/st.f, 'g', 4, 64) + st.unit
		}
	}
	return ""
}

type kind int

const (
	kScalar kind = iota
	kDist
	kSubject
)

type typ struct {
	k   kind
	dim Dim
}

// param is an optional scalar argument after a metric's subject.
type param struct {
	name string
	dim  Dim
}

// subject is a resolved subject during evaluation.
type subject struct {
	env   *Env
	flows []*Flow
	port  *Port
}

// metricDef is one entry of the metric catalogue.
type metricDef struct {
	name   string
	doc    string
	port   bool    // the subject is a port; otherwise a flow set
	params []param // optional arguments after the subject
	dist   bool    // the metric is a distribution (use it inside p99(...), mean(...), ...)
	dim    Dim
	scalar func(s subject, args []float64) float64
	values func(s subject, args []float64) []float64
}

// aggDef reduces a distribution to a number.
type aggDef struct {
	doc   string
	count bool // the result is a plain number whatever the samples' dimension
	f     func([]float64) float64
}

var aggs = map[string]aggDef{
	"p50":   {doc: "median (nearest rank)", f: func(x []float64) float64 { return metrics.Percentile(x, 50) }},
	"p90":   {doc: "90th percentile (nearest rank)", f: func(x []float64) float64 { return metrics.Percentile(x, 90) }},
	"p99":   {doc: "99th percentile (nearest rank)", f: func(x []float64) float64 { return metrics.Percentile(x, 99) }},
	"p999":  {doc: "99.9th percentile (nearest rank)", f: func(x []float64) float64 { return metrics.Percentile(x, 99.9) }},
	"mean":  {doc: "arithmetic mean", f: metrics.Mean},
	"min":   {doc: "smallest sample", f: func(x []float64) float64 { return metrics.Percentile(x, 0) }},
	"max":   {doc: "largest sample", f: func(x []float64) float64 { return metrics.Percentile(x, 100) }},
	"std":   {doc: "population standard deviation", f: metrics.StdDev},
	"count": {doc: "number of samples", count: true, f: func(x []float64) float64 { return float64(len(x)) }},
}

// Size buckets usable as flow sets (see metrics.DefaultBuckets).
var bucketNames = map[string]bool{"small": true, "medium": true, "large": true}

func flowVals(fs []*Flow, f func(*Flow) float64) []float64 {
	out := make([]float64, 0, len(fs))
	for _, fl := range fs {
		out = append(out, f(fl))
	}
	return out
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// sizeRange applies the optional [lo, hi) size arguments of fct and fct_slowdown.
func sizeRange(fs []*Flow, args []float64) []*Flow {
	lo, hi := 0.0, math.Inf(1)
	if len(args) > 0 {
		lo = args[0]
	}
	if len(args) > 1 {
		hi = args[1]
	}
	var out []*Flow
	for _, f := range fs {
		if f.Size > 0 && f.FCT > 0 && float64(f.Size) >= lo && float64(f.Size) < hi {
			out = append(out, f)
		}
	}
	return out
}

var catalogue = buildCatalogue()

func buildCatalogue() map[string]*metricDef {
	goodput := func(f *Flow) float64 { return float64(f.Goodput) }
	defs := []*metricDef{
		{name: "goodput", dim: DimRate, doc: "sum of the flows' goodput over the measurement window",
			scalar: func(s subject, _ []float64) float64 { return sum(flowVals(s.flows, goodput)) }},
		{name: "goodput_mean", dim: DimRate, doc: "mean per-flow goodput",
			scalar: func(s subject, _ []float64) float64 { return metrics.Mean(flowVals(s.flows, goodput)) }},
		{name: "goodput_min", dim: DimRate, doc: "smallest per-flow goodput",
			scalar: func(s subject, _ []float64) float64 { return metrics.Percentile(flowVals(s.flows, goodput), 0) }},
		{name: "goodput_max", dim: DimRate, doc: "largest per-flow goodput",
			scalar: func(s subject, _ []float64) float64 { return metrics.Percentile(flowVals(s.flows, goodput), 100) }},
		{name: "goodputs", dim: DimRate, dist: true, doc: "per-flow goodputs (a distribution)",
			values: func(s subject, _ []float64) []float64 { return flowVals(s.flows, goodput) }},
		{name: "fair_share", dim: DimRate, doc: "sum of the flows' max-min fair shares (oracle over the topology)",
			scalar: func(s subject, _ []float64) float64 {
				return sum(flowVals(s.flows, func(f *Flow) float64 { return float64(f.FairShare) }))
			}},
		{name: "share_ratio_min", dim: DimNone, doc: "smallest goodput / fair share over the flows",
			scalar: func(s subject, _ []float64) float64 {
				return metrics.Percentile(flowVals(s.flows, func(f *Flow) float64 {
					return float64(f.Goodput) / float64(f.FairShare)
				}), 0)
			}},
		{name: "line_rate", dim: DimRate, doc: "sum of the flows' source NIC rates",
			scalar: func(s subject, _ []float64) float64 {
				return sum(flowVals(s.flows, func(f *Flow) float64 { return float64(f.LineRate) }))
			}},
		{name: "jain", dim: DimNone, doc: "Jain's fairness index of the flows' goodputs",
			scalar: func(s subject, _ []float64) float64 { return metrics.Jain(flowVals(s.flows, goodput)) }},
		{name: "jain_share", dim: DimNone, doc: "Jain's index of goodput / fair share (fairness when shares differ)",
			scalar: func(s subject, _ []float64) float64 {
				return metrics.Jain(flowVals(s.flows, func(f *Flow) float64 { return float64(f.Goodput) / float64(f.FairShare) }))
			}},
		{name: "rate_std", dim: DimRate, doc: "mean over the flows of the standard deviation of each flow's rate over time in the window",
			scalar: func(s subject, _ []float64) float64 {
				return metrics.Mean(flowVals(s.flows, func(f *Flow) float64 {
					var xs []float64
					for _, p := range f.Series {
						if p.T >= s.env.From && p.T <= s.env.To {
							xs = append(xs, p.Rate)
						}
					}
					return metrics.StdDev(xs)
				}))
			}},
		{name: "convergence_time", dim: DimTime, params: []param{{"from", DimTime}, {"until", DimTime}},
			doc:    "time from an event (default: the last start or stop among the flows; or the from argument) until every flow is within 10% of its fair share and stays there until the next change among the flows (or the until argument, if earlier); +Inf if never",
			scalar: func(s subject, args []float64) float64 { return s.env.convergence(s.flows, args) }},
		{name: "retransmits", dim: DimNone, doc: "total retransmitted packets",
			scalar: func(s subject, _ []float64) float64 {
				return sum(flowVals(s.flows, func(f *Flow) float64 { return float64(f.Retransmits) }))
			}},
		{name: "timeouts", dim: DimNone, doc: "total retransmission timeouts",
			scalar: func(s subject, _ []float64) float64 {
				return sum(flowVals(s.flows, func(f *Flow) float64 { return float64(f.Timeouts) }))
			}},
		{name: "flows", dim: DimNone, doc: "number of flows in the set",
			scalar: func(s subject, _ []float64) float64 { return float64(len(s.flows)) }},
		{name: "finished", dim: DimNone, doc: "number of sized flows that completed",
			scalar: func(s subject, _ []float64) float64 { return float64(len(sizeRange(s.flows, nil))) }},
		{name: "rtt", dim: DimTime, dist: true, doc: "RTT samples of the flows in the measurement window",
			values: func(s subject, _ []float64) []float64 {
				var xs []float64
				for _, f := range s.flows {
					for _, r := range f.RTT {
						xs = append(xs, float64(r))
					}
				}
				return xs
			}},
		{name: "fct", dim: DimTime, dist: true, params: []param{{"min_size", DimBytes}, {"max_size", DimBytes}},
			doc: "flow completion times of finished sized flows, optionally with size in [min_size, max_size)",
			values: func(s subject, args []float64) []float64 {
				return flowVals(sizeRange(s.flows, args), func(f *Flow) float64 { return float64(f.FCT) })
			}},
		{name: "fct_slowdown", dim: DimNone, dist: true, params: []param{{"min_size", DimBytes}, {"max_size", DimBytes}},
			doc: "FCT / ideal FCT on an empty network, of finished sized flows, optionally with size in [min_size, max_size)",
			values: func(s subject, args []float64) []float64 {
				return flowVals(sizeRange(s.flows, args), func(f *Flow) float64 { return metrics.Slowdown(f.FCT, f.IdealFCT) })
			}},
		{name: "utilisation", port: true, dim: DimNone, doc: "fraction of the port's capacity used in the measurement window",
			scalar: func(s subject, _ []float64) float64 { return s.port.Utilisation }},
		{name: "drops", port: true, dim: DimNone, doc: "packets dropped at the port in the window",
			scalar: func(s subject, _ []float64) float64 { return float64(s.port.Drops) }},
		{name: "marks", port: true, dim: DimNone, doc: "packets ECN-marked at the port in the window",
			scalar: func(s subject, _ []float64) float64 { return float64(s.port.Marks) }},
		{name: "pause_time", port: true, dim: DimTime, doc: "time the port spent paused by PFC",
			scalar: func(s subject, _ []float64) float64 { return float64(s.port.PauseTime) }},
		{name: "queue_delay", port: true, dim: DimTime, dist: true, doc: "sampled queueing delay at the port in the window",
			values: func(s subject, _ []float64) []float64 {
				xs := make([]float64, len(s.port.QueueDelay))
				for i, v := range s.port.QueueDelay {
					xs[i] = float64(v)
				}
				return xs
			}},
		{name: "queue_bytes", port: true, dim: DimBytes, dist: true, doc: "sampled queue length at the port in the window",
			values: func(s subject, _ []float64) []float64 {
				xs := make([]float64, len(s.port.QueueBytes))
				for i, v := range s.port.QueueBytes {
					xs[i] = float64(v)
				}
				return xs
			}},
	}
	m := map[string]*metricDef{}
	for _, d := range defs {
		m[d.name] = d
	}
	// metric_agg shorthands for every distribution: rtt_p99, queue_delay_p99, fct_slowdown_p50...
	for _, d := range defs {
		if !d.dist {
			continue
		}
		for an, a := range aggs {
			d, a := d, a
			dim := d.dim
			if a.count {
				dim = DimNone
			}
			m[d.name+"_"+an] = &metricDef{name: d.name + "_" + an, port: d.port, params: d.params, dim: dim,
				doc:    fmt.Sprintf("%s of %s", a.doc, d.name),
				scalar: func(s subject, args []float64) float64 { return a.f(d.values(s, args)) }}
		}
	}
	return m
}

// MetricDoc describes one metric of the catalogue.
type MetricDoc struct {
	// Name is the metric; Subject is "flows" or "port"; Params its optional arguments.
	Name, Subject string
	Params        []string
	// Dist is true for distributions (reduce them with p50, p99, mean, ...).
	Dist bool
	// Unit is the base unit of its values.
	Unit, Doc string
}

// Metrics lists the catalogue, sorted by name: the names a check may use as subject.metric
// or metric(subject, args...). Aggregators over distributions: p50, p90, p99, p999, mean,
// min, max, std, count; scalar helpers: abs(x), min(x, y, ...), max(x, y, ...),
// median(x, y, ...), quantile(q, x, y, ...), and paper(x), which
// turns a quantity in the paper's units into emulator units (a time × τ, a rate ÷ τ).
func Metrics() []MetricDoc {
	var out []MetricDoc
	for _, d := range catalogue {
		md := MetricDoc{Name: d.name, Subject: "flows", Dist: d.dist, Unit: d.dim.Unit(), Doc: d.doc}
		if d.port {
			md.Subject = "port"
		}
		for _, p := range d.params {
			md.Params = append(md.Params, p.name)
		}
		out = append(out, md)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func metricNames() []string {
	names := make([]string, 0, len(catalogue))
	for n := range catalogue {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// suggest returns ` (did you mean "x"?)` for the closest of known to s, if close enough.
func suggest(s string, known []string) string {
	best, bd := "", 1<<30
	for _, k := range known {
		if d := editDistance(s, k); d < bd {
			best, bd = k, d
		}
	}
	if best != "" && bd <= 2+len(s)/4 {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// typecheck resolves metric and function names and checks argument kinds and dimensions.
func (x *Expectation) typecheck() error {
	l, err := x.typeOf(x.check.l)
	if err != nil {
		return err
	}
	r, err := x.typeOf(x.check.r)
	if err != nil {
		return err
	}
	if l.k != kScalar || r.k != kScalar {
		return &Error{"check", x.check.c, "both sides of a comparison must be numbers (reduce a distribution with p99(...), mean(...), ...)"}
	}
	if l.dim != r.dim && !isZero(x.check.l) && !isZero(x.check.r) {
		return &Error{"check", x.check.c, fmt.Sprintf("cannot compare %s with %s%s", l.dim, r.dim, unitHint(l.dim, r.dim))}
	}
	x.dim = l.dim
	if l.dim == DimNone {
		x.dim = r.dim
	}
	if x.when != nil {
		var err error
		walk(x.when, func(n node) {
			if b, ok := n.(*binNode); ok && err == nil && cmpOps[b.op] {
				_, ls := b.l.(*strNode)
				_, rs := b.r.(*strNode)
				if (ls || rs) && b.op != "==" && b.op != "!=" {
					err = &Error{"when", b.c, "strings can only be compared with == and !="}
				}
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func isZero(n node) bool {
	num, ok := n.(*numNode)
	return ok && num.v == 0
}

func unitHint(a, b Dim) string {
	if a == DimNone || b == DimNone {
		d := a
		if d == DimNone {
			d = b
		}
		return fmt.Sprintf(" (give the number a unit, e.g. %s)", map[Dim]string{DimTime: "50us", DimRate: "100Mbps", DimBytes: "100KB"}[d])
	}
	return ""
}

func (x *Expectation) typeOf(n node) (typ, error) {
	switch n := n.(type) {
	case *numNode:
		return typ{kScalar, n.dim}, nil
	case *strNode:
		return typ{}, &Error{"check", n.c, "strings are for when: selectors; quote a name only as a subject"}
	case *nameNode:
		return typ{k: kSubject}, nil
	case *unNode:
		t, err := x.typeOf(n.x)
		if err != nil {
			return t, err
		}
		if t.k != kScalar {
			return t, &Error{"check", n.c, "'-' needs a number"}
		}
		return t, nil
	case *binNode:
		l, err := x.typeOf(n.l)
		if err != nil {
			return l, err
		}
		r, err := x.typeOf(n.r)
		if err != nil {
			return r, err
		}
		if l.k != kScalar || r.k != kScalar {
			return l, &Error{"check", n.c, fmt.Sprintf("'%s' needs numbers on both sides (a bare name is a subject: write subject.metric)", n.op)}
		}
		switch n.op {
		case "+", "-":
			if l.dim != r.dim && !isZero(n.l) && !isZero(n.r) {
				return l, &Error{"check", n.c, fmt.Sprintf("cannot add %s and %s", l.dim, r.dim)}
			}
			if l.dim == DimNone {
				return r, nil
			}
			return l, nil
		case "*":
			if l.dim != DimNone && r.dim != DimNone {
				return l, &Error{"check", n.c, fmt.Sprintf("cannot multiply %s by %s", l.dim, r.dim)}
			}
			if l.dim == DimNone {
				return r, nil
			}
			return l, nil
		case "/":
			switch {
			case l.dim == r.dim:
				return typ{kScalar, DimNone}, nil
			case r.dim == DimNone:
				return l, nil
			}
			return l, &Error{"check", n.c, fmt.Sprintf("cannot divide %s by %s", l.dim, r.dim)}
		}
		return l, &Error{"check", n.c, fmt.Sprintf("comparison '%s' inside an expression", n.op)}
	case *refNode:
		d, ok := catalogue[n.metric]
		if !ok {
			return typ{}, &Error{"check", n.mcol, fmt.Sprintf("unknown metric %q%s", n.metric, suggest(n.metric, metricNames()))}
		}
		if err := x.subjectOK(n.subj, d); err != nil {
			return typ{}, err
		}
		if d.dist {
			return typ{kDist, d.dim}, nil
		}
		return typ{kScalar, d.dim}, nil
	case *callNode:
		return x.typeOfCall(n)
	}
	return typ{}, &Error{"check", n.col(), "unexpected expression"}
}

func (x *Expectation) subjectOK(s *nameNode, d *metricDef) error {
	if d.port {
		if len(s.parts) != 2 && len(s.parts) != 3 {
			return &Error{"check", s.c, fmt.Sprintf("%s needs a port as switch:port (s1:p3), got %q", d.name, s)}
		}
	} else if len(s.parts) > 2 {
		return &Error{"check", s.c, fmt.Sprintf("%s needs a flow set (group, flow, cc or all, optionally run:set), got %q", d.name, s)}
	}
	if len(s.parts) == 2 && !d.port || len(s.parts) == 3 {
		x.cross = true
	}
	x.subjects = append(x.subjects, subjectUse{n: s, port: d.port})
	return nil
}

func (x *Expectation) typeOfCall(n *callNode) (typ, error) {
	argTypes := make([]typ, len(n.args))
	for i, a := range n.args {
		t, err := x.typeOf(a)
		if err != nil {
			return t, err
		}
		argTypes[i] = t
	}
	if a, ok := aggs[n.fn]; ok && len(n.args) == 1 {
		if argTypes[0].k != kDist {
			if (n.fn == "min" || n.fn == "max") && argTypes[0].k == kScalar {
				return typ{}, &Error{"check", n.c, n.fn + " needs a distribution, or two or more numbers"}
			}
			return typ{}, &Error{"check", n.c, fmt.Sprintf("%s needs a distribution (%s), got %s", n.fn, strings.Join(distNames(), ", "), kindName(argTypes[0]))}
		}
		if a.count {
			return typ{kScalar, DimNone}, nil
		}
		return typ{kScalar, argTypes[0].dim}, nil
	}
	switch n.fn {
	case "min", "max", "median":
		if len(n.args) < 2 {
			if n.fn == "median" {
				return typ{}, &Error{"check", n.c, "median takes two or more numbers (p50 reduces a distribution)"}
			}
			return typ{}, &Error{"check", n.c, n.fn + " takes one distribution or two or more numbers"}
		}
		for i, t := range argTypes {
			if t.k != kScalar {
				return typ{}, &Error{"check", n.args[i].col(), fmt.Sprintf("%s takes numbers, got %s", n.fn, kindName(t))}
			}
			if t.dim != argTypes[0].dim {
				return typ{}, &Error{"check", n.args[i].col(), fmt.Sprintf("%s of %s and %s", n.fn, argTypes[0].dim, t.dim)}
			}
		}
		return argTypes[0], nil
	case "quantile":
		// quantile(q, x, y, ...): q a plain number from 0 to 1, then two or more numbers
		if len(n.args) < 3 {
			return typ{}, &Error{"check", n.c, "quantile takes a fraction q and two or more numbers: quantile(0.25, x, y, ...)"}
		}
		if argTypes[0].k != kScalar || argTypes[0].dim != DimNone {
			return typ{}, &Error{"check", n.args[0].col(), fmt.Sprintf("quantile's first argument is a fraction from 0 to 1, got %s", argTypes[0].dim)}
		}
		if q, ok := n.args[0].(*numNode); ok && (q.v < 0 || q.v > 1) {
			return typ{}, &Error{"check", q.c, fmt.Sprintf("quantile's fraction must be from 0 to 1, got %s", q.text)}
		}
		for i, t := range argTypes[1:] {
			if t.k != kScalar {
				return typ{}, &Error{"check", n.args[i+1].col(), fmt.Sprintf("quantile takes numbers, got %s", kindName(t))}
			}
			if t.dim != argTypes[1].dim {
				return typ{}, &Error{"check", n.args[i+1].col(), fmt.Sprintf("quantile of %s and %s", argTypes[1].dim, t.dim)}
			}
		}
		return argTypes[1], nil
	case "abs", "paper":
		if len(n.args) != 1 || argTypes[0].k != kScalar {
			return typ{}, &Error{"check", n.c, n.fn + " takes one number"}
		}
		return argTypes[0], nil
	}
	d, ok := catalogue[n.fn]
	if !ok {
		known := append(metricNames(), "abs", "min", "max", "median", "quantile", "paper")
		known = append(known, keys(aggs)...)
		return typ{}, &Error{"check", n.c, fmt.Sprintf("unknown metric or function %q%s", n.fn, suggest(n.fn, known))}
	}
	if len(n.args) == 0 {
		return typ{}, &Error{"check", n.c, fmt.Sprintf("%s needs a subject: %s(%s)", n.fn, n.fn, map[bool]string{true: "s1:p3", false: "victim"}[d.port])}
	}
	s, ok := n.args[0].(*nameNode)
	if !ok {
		return typ{}, &Error{"check", n.args[0].col(), fmt.Sprintf("the first argument of %s must be a %s", n.fn, map[bool]string{true: "port (s1:p3)", false: "flow set (group, flow, cc or all)"}[d.port])}
	}
	if err := x.subjectOK(s, d); err != nil {
		return typ{}, err
	}
	rest := n.args[1:]
	if len(rest) > len(d.params) {
		return typ{}, &Error{"check", rest[len(d.params)].col(), fmt.Sprintf("%s takes at most %d argument(s) after its subject", n.fn, len(d.params))}
	}
	for i, a := range rest {
		t := argTypes[i+1]
		if t.k != kScalar || (t.dim != d.params[i].dim && !isZero(a)) {
			return typ{}, &Error{"check", a.col(), fmt.Sprintf("argument %s of %s must be %s", d.params[i].name, n.fn, d.params[i].dim)}
		}
	}
	if d.dist {
		return typ{kDist, d.dim}, nil
	}
	return typ{kScalar, d.dim}, nil
}

func kindName(t typ) string {
	switch t.k {
	case kDist:
		return "a distribution"
	case kSubject:
		return "a subject"
	}
	return t.dim.String()
}

func distNames() []string {
	var out []string
	for _, n := range metricNames() {
		if catalogue[n].dist {
			out = append(out, n)
		}
	}
	return out
}
