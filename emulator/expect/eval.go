package expect

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"reef/cc"
	"reef/emulator/metrics"
	"reef/units"
)

// Env is one run's metric environment: what the report measured, in emulator units. The
// report builds it from a results.Run and the plan; tests build it by hand.
type Env struct {
	// Vars are the run's sweep variables as written ("cc": "swift", "M": "4").
	Vars map[string]string
	// From and To bound the measurement window.
	From, To units.Time
	// TimeScale is τ, for paper(x) (0 means 1).
	TimeScale float64
	Flows     []Flow
	Ports     []Port
}

// Flow is one flow's measured values.
type Flow struct {
	Name, Group, CC string
	// Size is the message size (0 for long-lived flows).
	Size units.Bytes
	// Start and End bound the flow's activity (End: its stop, finish or the run's end).
	Start, End units.Time
	// Goodput is over the measurement window, FairShare the max-min oracle's share,
	// LineRate the source NIC's rate.
	Goodput, FairShare, LineRate units.Rate
	// RTT samples in the window.
	RTT []units.Time
	// FCT and IdealFCT for finished sized flows (0 otherwise).
	FCT, IdealFCT         units.Time
	Retransmits, Timeouts int64
	// Series is the flow's rate over time with its fair share at each point.
	Series []metrics.Point
}

// Port is one egress port's measured values.
type Port struct {
	// Name is "switch:port".
	Name        string
	Utilisation float64
	Drops       int64
	Marks       int64
	PauseTime   units.Time
	// QueueDelay and QueueBytes are the samples in the window.
	QueueDelay []units.Time
	QueueBytes []units.Bytes
}

// ConvergenceTolerance is the band convergence_time uses: within 10% of the fair share.
const ConvergenceTolerance = 0.1

// events are the instants the set of active flows among fs changes, sorted.
func (e *Env) events(fs []*Flow) []units.Time {
	var ts []units.Time
	for _, f := range fs {
		ts = append(ts, f.Start)
		if f.End > 0 && f.End < e.To {
			ts = append(ts, f.End)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	return ts
}

// convergence implements convergence_time(flows [, from [, until]]).
func (e *Env) convergence(fs []*Flow, args []float64) float64 {
	evs := e.events(fs)
	from := units.Time(0)
	if len(args) > 0 {
		from = units.Time(args[0])
	} else if len(evs) > 0 {
		from = evs[len(evs)-1]
	}
	to := e.To
	if len(args) > 1 && units.Time(args[1]) < to {
		to = units.Time(args[1])
	}
	for _, t := range evs {
		if t > from {
			to = min(to, t)
			break
		}
	}
	series := make([][]metrics.Point, len(fs))
	for i, f := range fs {
		series[i] = f.Series
	}
	d, ok := metrics.ConvergenceTime(series, from, to, ConvergenceTolerance)
	if !ok {
		return math.Inf(1)
	}
	return float64(d)
}

// Result is one evaluated expectation.
type Result struct {
	Name  string `json:"name"`
	Check string `json:"check"`
	Claim string `json:"claim,omitempty"`
	// Vars are the sweep variables of the run (or, for a check comparing runs, the
	// variables the compared runs share) the check was evaluated on.
	Vars map[string]string `json:"vars,omitempty"`
	// Value is the left side and Bound the right side of the comparison, in Unit (base
	// units: ns, bps, B or none). Non-finite values are written as null.
	Value float64 `json:"value"`
	Bound float64 `json:"bound"`
	Unit  string  `json:"unit"`
	// ValueText and BoundText are the same for people ("42.5us").
	ValueText string `json:"value_text"`
	BoundText string `json:"bound_text"`
	Pass      bool   `json:"pass"`
	// Error says why the check could not be evaluated (it then fails).
	Error string `json:"error,omitempty"`
}

// MarshalJSON writes non-finite Value and Bound as null.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	type out struct {
		plain
		Value *float64 `json:"value"`
		Bound *float64 `json:"bound"`
	}
	o := out{plain: plain(r)}
	if !math.IsNaN(r.Value) && !math.IsInf(r.Value, 0) {
		o.Value = &r.Value
	}
	if !math.IsNaN(r.Bound) && !math.IsInf(r.Bound, 0) {
		o.Bound = &r.Bound
	}
	return json.Marshal(o)
}

// UnmarshalJSON reads what MarshalJSON writes (null becomes NaN).
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	var in struct {
		plain
		Value *float64 `json:"value"`
		Bound *float64 `json:"bound"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*r = Result(in.plain)
	r.Value, r.Bound = math.NaN(), math.NaN()
	if in.Value != nil {
		r.Value = *in.Value
	}
	if in.Bound != nil {
		r.Bound = *in.Bound
	}
	return nil
}

// Label is the name with its sweep variables: "victim-share [M=2 N=4 cc=poseidon]".
func (r Result) Label() string {
	if len(r.Vars) == 0 {
		return r.Name
	}
	return r.Name + " [" + varsKey(r.Vars, "") + "]"
}

func varsKey(v map[string]string, skip string) string {
	var parts []string
	for _, k := range keys(v) {
		if k != skip {
			parts = append(parts, k+"="+v[k])
		}
	}
	return strings.Join(parts, " ")
}

// EvaluateRun evaluates, on one run, every expectation that does not compare runs and
// whose when: selects the run. Checks comparing runs are left to Evaluate over the sweep.
func EvaluateRun(xs []*Expectation, env *Env) []Result {
	var out []Result
	for _, x := range xs {
		if x.crossIn([]*Env{env}) || !x.selects(env.Vars) {
			continue
		}
		out = append(out, x.eval(&evalCtx{cur: env, runs: []*Env{env}}, env.Vars))
	}
	return out
}

// Evaluate evaluates every expectation over a sweep's runs: a check within one run once
// per run its when: selects, a check comparing runs (CrossRun) once per group of runs
// that agree on every sweep variable but cc, with its run references resolved in that
// group. A group that lacks a run the check names (a sweep narrowed by reef run --only)
// is left out: the check is not evaluated there, rather than failed.
func Evaluate(xs []*Expectation, runs []*Env) []Result {
	var out []Result
	for _, x := range xs {
		if !x.crossIn(runs) {
			for _, env := range runs {
				if x.selects(env.Vars) {
					out = append(out, x.eval(&evalCtx{cur: env, runs: runs}, env.Vars))
				}
			}
			continue
		}
		seen := map[string]bool{}
		for _, env := range runs {
			k := varsKey(env.Vars, "cc")
			if seen[k] {
				continue
			}
			seen[k] = true
			shared := map[string]string{}
			for n, v := range env.Vars {
				if n != "cc" {
					shared[n] = v
				}
			}
			if !x.selects(shared) || !x.hasRuns(env, runs) {
				continue
			}
			out = append(out, x.eval(&evalCtx{cur: env, runs: runs}, shared))
		}
	}
	return out
}

// crossIn reports whether x compares runs of this sweep: it does when Resolve or a run
// qualifier said so, or when a bare flow-set subject names no group or flow of any run
// but is the cc value of a run (or, in runs that sweep cc, names a registered algorithm
// that neither a run nor a flow has: it must name a run left out of these).
func (x *Expectation) crossIn(runs []*Env) bool {
	if x.cross {
		return true
	}
	for _, u := range x.subjects {
		if u.port || len(u.n.parts) != 1 {
			continue
		}
		name := u.n.parts[0]
		if name == "all" || bucketNames[name] {
			continue
		}
		known, isCC, flowCC := false, false, false
		for _, r := range runs {
			if r.Vars["cc"] == name {
				isCC = true
			}
			for _, f := range r.Flows {
				if f.Group == name || f.Name == name || (f.CC == name && r.Vars["cc"] == "") {
					known = true
				}
				flowCC = flowCC || f.CC == name
			}
		}
		if known {
			continue
		}
		if isCC && len(runs) > 1 {
			return true
		}
		// An algorithm no run or flow has, in a sweep over cc: another run's, left
		// out of these (a single run's summary, or a sweep narrowed by reef run --only).
		if !isCC && !flowCC && ccSwept(runs) {
			if _, err := cc.Lookup(name); err == nil {
				return true
			}
		}
	}
	return false
}

// ccSwept reports whether the runs sweep cc.
func ccSwept(runs []*Env) bool {
	for _, r := range runs {
		if _, ok := r.Vars["cc"]; ok {
			return true
		}
	}
	return false
}

// hasRuns reports whether runs hold every run a check comparing runs names from a
// group of runs agreeing with cur on all but cc: a qualifier's cc (swift:victim), or a
// bare cc value that no run has as a flow group or flow name.
func (x *Expectation) hasRuns(cur *Env, runs []*Env) bool {
	has := func(v string) bool { return partner(cur, runs, v) != nil }
	for _, u := range x.subjects {
		parts := u.n.parts
		switch {
		case u.port && len(parts) == 3, !u.port && len(parts) == 2:
			if !has(parts[0]) {
				return false
			}
		case !u.port && len(parts) == 1:
			name := parts[0]
			if name == "all" || bucketNames[name] || slices.ContainsFunc(runs, func(r *Env) bool {
				return slices.ContainsFunc(r.Flows, func(f Flow) bool { return f.Group == name || f.Name == name })
			}) {
				continue
			}
			if !has(name) {
				return false
			}
		}
	}
	return true
}

// evalCtx is the run a check is evaluated in and the sweep around it.
type evalCtx struct {
	cur  *Env
	runs []*Env
}

type evalError struct{ msg string }

func (e *evalError) Error() string { return e.msg }

func (x *Expectation) eval(c *evalCtx, vars map[string]string) Result {
	res := Result{Name: x.Name, Check: x.Check, Claim: x.Claim, Unit: x.dim.Unit()}
	if len(vars) > 0 {
		res.Vars = vars
	}
	var errs []string
	res.Value = c.side(x.check.l, &errs)
	res.Bound = c.side(x.check.r, &errs)
	if len(errs) > 0 {
		res.Error = strings.Join(errs, "; ")
	} else {
		res.Pass = compare(x.check.op, res.Value, res.Bound)
	}
	res.ValueText, res.BoundText = x.dim.Format(res.Value), x.dim.Format(res.Bound)
	return res
}

// side evaluates one side of a check; an evaluation error gives NaN and is appended to
// errs.
func (c *evalCtx) side(n node, errs *[]string) (v float64) {
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(*evalError)
			if !ok {
				panic(p)
			}
			*errs = append(*errs, e.msg)
			v = math.NaN()
		}
	}()
	return c.scalar(n)
}

func compare(op string, l, r float64) bool {
	switch op {
	case "<":
		return l < r
	case "<=":
		return l <= r
	case ">":
		return l > r
	case ">=":
		return l >= r
	case "==":
		return l == r
	case "!=":
		return l != r
	}
	return false
}

func fail(format string, args ...any) { panic(&evalError{fmt.Sprintf(format, args...)}) }

func (c *evalCtx) scalar(n node) float64 {
	switch n := n.(type) {
	case *numNode:
		return n.v
	case *unNode:
		return -c.scalar(n.x)
	case *binNode:
		l, r := c.scalar(n.l), c.scalar(n.r)
		switch n.op {
		case "+":
			return l + r
		case "-":
			return l - r
		case "*":
			return l * r
		case "/":
			return l / r
		}
	case *refNode:
		d := catalogue[n.metric]
		return d.scalar(c.subject(n.subj, d.port), nil)
	case *callNode:
		if a, ok := aggs[n.fn]; ok && len(n.args) == 1 {
			xs := c.dist(n.args[0])
			if len(xs) == 0 && !a.count {
				fail("%s: no samples", n.fn)
			}
			return a.f(xs)
		}
		switch n.fn {
		case "min", "max", "median":
			xs := make([]float64, len(n.args))
			for i, a := range n.args {
				xs[i] = c.scalar(a)
			}
			switch n.fn {
			case "min":
				return slices.Min(xs)
			case "max":
				return slices.Max(xs)
			}
			return metrics.Median(xs)
		case "quantile":
			q := c.scalar(n.args[0])
			if !(q >= 0 && q <= 1) {
				fail("quantile: fraction %g is not from 0 to 1", q)
			}
			xs := make([]float64, len(n.args)-1)
			for i, a := range n.args[1:] {
				xs[i] = c.scalar(a)
			}
			return metrics.Percentile(xs, 100*q)
		case "abs":
			return math.Abs(c.scalar(n.args[0]))
		case "paper":
			return c.paper(n.args[0])
		}
		d := catalogue[n.fn]
		return d.scalar(c.subject(n.args[0].(*nameNode), d.port), c.args(n.args[1:]))
	}
	fail("cannot evaluate expression at col %d", n.col())
	return 0
}

// paper converts a quantity in the paper's units to emulator units with the run's time
// scale: times × τ, rates ÷ τ, anything else unchanged.
func (c *evalCtx) paper(n node) float64 {
	v := c.scalar(n)
	sc := units.TimeScale(c.cur.TimeScale)
	switch c.dimOf(n) {
	case DimTime:
		return sc.EmulatorTime(v)
	case DimRate:
		return sc.EmulatorRate(v)
	}
	return v
}

// dimOf is the dimension of a scalar expression (checked by Parse).
func (c *evalCtx) dimOf(n node) Dim {
	x := &Expectation{}
	t, _ := x.typeOf(n)
	return t.dim
}

func (c *evalCtx) args(ns []node) []float64 {
	out := make([]float64, len(ns))
	for i, a := range ns {
		out[i] = c.scalar(a)
	}
	return out
}

func (c *evalCtx) dist(n node) []float64 {
	switch n := n.(type) {
	case *refNode:
		d := catalogue[n.metric]
		return d.values(c.subject(n.subj, d.port), nil)
	case *callNode:
		d := catalogue[n.fn]
		return d.values(c.subject(n.args[0].(*nameNode), d.port), c.args(n.args[1:]))
	}
	fail("not a distribution at col %d", n.col())
	return nil
}

// runFor finds the run of the sweep whose cc is v and whose other variables equal cur's.
func (c *evalCtx) runFor(v string) *Env {
	if r := partner(c.cur, c.runs, v); r != nil {
		return r
	}
	if want := varsKey(c.cur.Vars, "cc"); want == "" {
		fail("no run with cc=%s in the sweep", v)
	} else {
		fail("no run with cc=%s and %s in the sweep", v, want)
	}
	return nil
}

// partner returns cur when its cc is v, else the run of runs whose cc is v and whose
// other variables equal cur's, or nil.
func partner(cur *Env, runs []*Env, v string) *Env {
	if cur.Vars["cc"] == v {
		return cur
	}
	want := varsKey(cur.Vars, "cc")
	for _, r := range runs {
		if r.Vars["cc"] == v && varsKey(r.Vars, "cc") == want {
			return r
		}
	}
	return nil
}

func (c *evalCtx) subject(n *nameNode, port bool) subject {
	env, parts := c.cur, n.parts
	if (port && len(parts) == 3) || (!port && len(parts) == 2) {
		env, parts = c.runFor(parts[0]), parts[1:]
	}
	if port {
		name := parts[0] + ":" + parts[1]
		for i := range env.Ports {
			if env.Ports[i].Name == name {
				return subject{env: env, port: &env.Ports[i]}
			}
		}
		fail("no port %q in the run", name)
	}
	s := parts[0]
	pick := func(e *Env, f func(*Flow) bool) []*Flow {
		var out []*Flow
		for i := range e.Flows {
			if f(&e.Flows[i]) {
				out = append(out, &e.Flows[i])
			}
		}
		return out
	}
	if s == "all" {
		return subject{env: env, flows: pick(env, func(*Flow) bool { return true })}
	}
	for _, f := range []func(*Flow) bool{
		func(f *Flow) bool { return f.Group == s },
		func(f *Flow) bool { return f.Name == s },
		func(f *Flow) bool { return f.CC == s },
	} {
		if fs := pick(env, f); len(fs) > 0 {
			return subject{env: env, flows: fs}
		}
	}
	for _, b := range metrics.DefaultBuckets() {
		if b.Name == s {
			return subject{env: env, flows: pick(env, func(f *Flow) bool { return f.Size > 0 && f.Size >= b.Min && f.Size < b.Max })}
		}
	}
	if len(n.parts) == 1 {
		for _, r := range c.runs {
			if r.Vars["cc"] == s {
				r := c.runFor(s)
				return subject{env: r, flows: pick(r, func(*Flow) bool { return true })}
			}
		}
	}
	if _, swept := c.cur.Vars["cc"]; swept && len(n.parts) == 1 {
		fail("no flow group, flow or cc %q in the run, and no run with cc=%s in the sweep", s, s)
	}
	fail("no flow group, flow or cc %q in the run", s)
	return subject{}
}

// selects evaluates the when: selector on vars (true when there is none).
func (x *Expectation) selects(vars map[string]string) bool {
	if x.when == nil {
		return true
	}
	ok, err := evalWhen(x.when, vars)
	return err == nil && ok
}

// Selects reports whether the expectation's when: selects a run with these sweep
// variables; an error names a variable the run lacks or a value that is not a number.
func (x *Expectation) Selects(vars map[string]string) (bool, error) {
	if x.when == nil {
		return true, nil
	}
	return evalWhen(x.when, vars)
}

func evalWhen(n node, vars map[string]string) (bool, error) {
	switch n := n.(type) {
	case *unNode:
		v, err := evalWhen(n.x, vars)
		return !v, err
	case *binNode:
		switch n.op {
		case "&&", "||":
			l, err := evalWhen(n.l, vars)
			if err != nil {
				return false, err
			}
			if (n.op == "&&" && !l) || (n.op == "||" && l) {
				return l, nil
			}
			return evalWhen(n.r, vars)
		}
		l, lstr, err := operand(n.l, vars)
		if err != nil {
			return false, err
		}
		r, rstr, err := operand(n.r, vars)
		if err != nil {
			return false, err
		}
		_, lq := n.l.(*strNode)
		_, rq := n.r.(*strNode)
		if lq || rq {
			eq := lstr == rstr
			return eq == (n.op == "=="), nil
		}
		lv, err := whenNumber(lstr, l)
		if err != nil {
			return false, &Error{"when", n.l.col(), err.Error()}
		}
		rv, err := whenNumber(rstr, r)
		if err != nil {
			return false, &Error{"when", n.r.col(), err.Error()}
		}
		return compare(n.op, lv, rv), nil
	}
	return false, &Error{"when", n.col(), "want a comparison"}
}

// operand returns a when operand as text (and as a number literal when it is one).
func operand(n node, vars map[string]string) (*numNode, string, error) {
	switch n := n.(type) {
	case *numNode:
		return n, n.text, nil
	case *strNode:
		return nil, n.s, nil
	case *nameNode:
		v, ok := vars[n.parts[0]]
		if !ok {
			return nil, "", &Error{"when", n.c, fmt.Sprintf("the run has no sweep variable %q", n.parts[0])}
		}
		return nil, v, nil
	}
	return nil, "", &Error{"when", n.col(), "want a variable, a string or a number"}
}

func whenNumber(text string, lit *numNode) (float64, error) {
	if lit != nil {
		return lit.v, nil
	}
	if v, err := strconv.ParseFloat(strings.TrimSpace(text), 64); err == nil {
		return v, nil
	}
	v, _, err := parseNumber(strings.TrimSpace(text))
	if err != nil {
		return 0, fmt.Errorf("value %q is not a number", text)
	}
	return v, nil
}
