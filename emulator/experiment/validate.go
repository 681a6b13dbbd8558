package experiment

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"reef/cc"
	"reef/emulator/expect"
	"reef/emulator/internal/yamlpos"
	"reef/emulator/internal/yamlstrict"
	"reef/switchd"
)

// Workload kinds.
const (
	WorkloadPoisson  = "poisson"
	WorkloadIncast   = "incast"
	WorkloadAllToAll = "all-to-all"
	WorkloadTrace    = "trace"
)

// scale returns τ on backend (1 when absent).
func (f *File) scale(backend string) float64 {
	if t, ok := f.backendScale(backend); ok {
		return t
	}
	if f.TimeScale == nil {
		return 1
	}
	return *f.TimeScale
}

// sameRate names, for a backend of real packets without a backend_time_scale entry of
// its own, the backend whose entry it takes: a lab across machines (swarm) carries
// real packets through the same daemons as netns.
var sameRate = map[string]string{"swarm": "netns"}

// backendScale is the file's backend_time_scale for backend (its own entry, else the
// entry of the backend it runs like), and whether there is one.
func (f *File) backendScale(backend string) (float64, bool) {
	if t, ok := f.BackendTimeScale[backend]; ok {
		return t, true
	}
	t, ok := f.BackendTimeScale[sameRate[backend]]
	return t, ok
}

// validate checks what can be checked without the topology; every problem is reported,
// each with path:line.
func (f *File) validate(file string, body ast.Node) error {
	var errs errList
	if f.Name == "" {
		errs.add(file, 1, "name: missing; want the experiment's name")
	} else if strings.ContainsAny(f.Name, "/\\ ") {
		errs.add(file, 1, "name: %q: want no spaces or slashes (it names the results directory)", f.Name)
	}
	if f.Topology.File == "" && f.Topology.Inline == nil {
		errs.add(file, 1, "topology: missing; want {file: PATH} or an inline topology")
	}
	if f.TimeScale != nil && !(*f.TimeScale > 0) {
		errs.add(file, keyLine(body, "time_scale"), "time_scale: must be > 0, got %g", *f.TimeScale)
	}
	for b, t := range f.BackendTimeScale {
		if !(t > 0) {
			errs.add(file, keyLine(body, "backend_time_scale", b), "backend_time_scale.%s: must be > 0, got %g", b, t)
		}
	}
	if f.Duration <= 0 {
		errs.add(file, keyLine(body, "duration"), "duration: must be > 0, got %v", f.Duration)
	}
	if f.Warmup < 0 || (f.Duration > 0 && f.Warmup >= f.Duration) {
		errs.add(file, keyLine(body, "warmup"), "warmup: must be in [0, duration=%v), got %v", f.Duration, f.Warmup)
	}
	if f.SampleInterval < 0 || (f.Duration > 0 && f.SampleInterval > f.Duration) {
		errs.add(file, keyLine(body, "sample_interval"), "sample_interval: must be in [0, duration], got %v", f.SampleInterval)
	}
	for _, e := range f.Switches {
		if _, err := path.Match(e.Pattern, ""); err != nil {
			errs.add(file, e.Line, "switches.%s: bad pattern: %v", e.Pattern, err)
		}
		if e.Features.INT != nil {
			switch e.Features.INT.Mode {
			case switchd.INTOff, switchd.INTMPD, switchd.INTHPCC, "":
			default:
				errs.add(file, e.Line, "switches.%s.int.mode: %q; want off, mpd or hpcc", e.Pattern, e.Features.INT.Mode)
			}
		}
		if e.Features.ECN != nil {
			switch e.Features.ECN.Mode {
			case switchd.ECNOff, switchd.ECNStep, switchd.ECNRED, "":
			default:
				errs.add(file, e.Line, "switches.%s.ecn.mode: %q; want off, step or red", e.Pattern, e.Features.ECN.Mode)
			}
		}
		if e.Features.LB != nil {
			switch e.Features.LB.Mode {
			case switchd.LBECMP, switchd.LBSpray, switchd.LBAdaptive, switchd.LBFlowlet, "":
			default:
				errs.add(file, e.Line, "switches.%s.lb.mode: %q; want ecmp, spray, adaptive or flowlet", e.Pattern, e.Features.LB.Mode)
			}
		}
	}
	names := map[string]int{}
	seen := map[string]bool{}
	for i, fl := range f.Flows {
		where := fmt.Sprintf("flows[%d]", i)
		if fl.Name != "" {
			where = fmt.Sprintf("flows[%d] (%s)", i, fl.Name)
		}
		n := fl.count()
		switch {
		case fl.Count != nil && *fl.Count < 0:
			errs.add(file, fl.line, "%s.count: must be ≥ 0, got %d", where, *fl.Count)
		case fl.Count != nil && fl.Group == "":
			errs.add(file, fl.line, "%s: count needs a group (flows are named GROUP1..GROUPn)", where)
		case fl.Count == nil && fl.Name == "":
			errs.add(file, fl.line, "%s: want a name (or a group with a count)", where)
		}
		for _, nm := range fl.names() {
			if prev, dup := names[nm]; dup {
				errs.add(file, fl.line, "%s: flow name %q already used on line %d", where, nm, prev)
			}
			names[nm] = fl.line
		}
		if n > 0 && (fl.Src == "" || fl.Dst == "") {
			errs.add(file, fl.line, "%s: want both src and dst hosts", where)
		}
		if fl.Src != "" && fl.Src == fl.Dst {
			errs.add(file, fl.line, "%s: src and dst are both %q", where, fl.Src)
		}
		if fl.Start < 0 || (fl.Stop != 0 && fl.Stop <= fl.Start) {
			errs.add(file, fl.line, "%s: want 0 ≤ start < stop, got start %v stop %v", where, fl.Start, fl.Stop)
		}
		if fl.Size < 0 {
			errs.add(file, fl.line, "%s.size: must be ≥ 0, got %v", where, fl.Size)
		}
		f.checkParams(&errs, seen, file, body, fl.line, where, fl.CC, fl.Params)
	}
	for i, w := range f.Workloads {
		where := fmt.Sprintf("workloads[%d] (%s)", i, w.Kind)
		switch w.Kind {
		case WorkloadPoisson, WorkloadAllToAll:
			if !(w.Load > 0 && w.Load <= 1) {
				errs.add(file, w.line, "%s.load: want a fraction of the NIC rate in (0, 1], got %g", where, w.Load)
			}
			if w.CDF == "" && w.Size <= 0 {
				errs.add(file, w.line, "%s: want a cdf (websearch, hadoop, cachefollower or a file) or a fixed size", where)
			}
		case WorkloadIncast:
			if len(w.Senders) == 0 || (w.Receiver == "" && len(w.Receivers) == 0) {
				errs.add(file, w.line, "%s: want senders and a receiver (or receivers)", where)
			}
			if w.Size <= 0 {
				errs.add(file, w.line, "%s.size: want the message size each sender sends, got %v", where, w.Size)
			}
		case WorkloadTrace:
			if w.Trace == "" {
				errs.add(file, w.line, "%s.trace: missing; want the trace file (CSV or JSON lines of start, src, dst, size)", where)
			}
			if w.CDF != "" || w.Load != 0 || w.Size != 0 || len(w.Hosts)+len(w.Senders)+len(w.Receivers) > 0 || w.Receiver != "" {
				errs.add(file, w.line, "%s: a trace lists its flows; want no cdf, load, size or hosts", where)
			}
		default:
			errs.add(file, w.line, "workloads[%d].kind: %q; want poisson, incast, all-to-all or trace", i, w.Kind)
		}
		if w.Kind != WorkloadTrace && w.Trace != "" {
			errs.add(file, w.line, "%s.trace: only a trace workload (kind: trace) reads a trace file", where)
		}
		if w.Start < 0 || (w.Stop != 0 && w.Stop <= w.Start) {
			errs.add(file, w.line, "%s: want 0 ≤ start < stop, got start %v stop %v", where, w.Start, w.Stop)
		}
		f.checkParams(&errs, seen, file, body, w.line, where, w.CC, w.Params)
	}
	for i, ev := range f.Timeline {
		n := 0
		if ev.Rate != 0 {
			n++
		}
		if ev.Down {
			n++
		}
		if ev.Up {
			n++
		}
		if n != 1 {
			errs.add(file, ev.line, "timeline[%d]: want exactly one of rate, down: true, up: true", i)
		}
		if ev.Rate < 0 {
			errs.add(file, ev.line, "timeline[%d].rate: must be > 0, got %v", i, ev.Rate)
		}
		if ev.Link == "" {
			errs.add(file, ev.line, "timeline[%d].link: missing; want \"NODE-NODE\"", i)
		}
		if ev.At < 0 || ev.At > f.Duration {
			errs.add(file, ev.line, "timeline[%d].at: %v is outside the run [0, %v]", i, ev.At, f.Duration)
		}
	}
	enames := map[string]bool{}
	for i, e := range f.Expectations {
		where := fmt.Sprintf("expectations[%d]", i)
		if e.Name != "" {
			where = fmt.Sprintf("expectations[%d] (%s)", i, e.Name)
		}
		if e.Name != "" && enames[e.Name] {
			errs.add(file, e.line, "%s: name used twice", where)
			continue
		}
		enames[e.Name] = true
		if e.Check == "" {
			errs.add(file, e.line, "%s.check: missing; want a comparison such as \"victim.goodput >= 0.85 * victim.fair_share\"", where)
			continue
		}
		if _, err := expect.Parse(e.Spec()); err != nil {
			errs.add(file, e.line, "%v", err)
		}
	}
	return errs.err()
}

// checkParams reports what is wrong with the parameters a flow or workload gets, each
// problem once: one it inherits unchanged from defaults (no cc or params of its own) is
// reported at the defaults line, once for the file, not at every flow.
func (f *File) checkParams(errs *errList, seen map[string]bool, file string, body ast.Node, line int, where, name string, own Params) {
	_, err := f.params(name, own)
	if err == nil {
		return
	}
	if own.node == nil && f.Defaults.CC != "" && (name == "" || name == f.Defaults.CC) {
		line, where = keyLine(body, "defaults", "cc"), "defaults"
		if f.Defaults.Params.node != nil {
			line = yamlpos.Line(f.Defaults.Params.node) // where the values were written
		}
	}
	for _, e := range splitErrors(err) {
		at, what, msg := line, where, e.Error()
		var le *layerError
		if errors.As(e, &le) {
			// a bad entry is reported where it is written, once
			at, what, msg = le.line, le.layer+" ("+le.cc+")", le.msg
			if le.layer == "params" {
				what = where + ".params (" + le.cc + ")"
			}
		}
		key := fmt.Sprintf("%d %s: %s", at, what, msg)
		if !seen[key] {
			seen[key] = true
			errs.add(file, at, "%s: %s", what, msg)
		}
	}
}

// layerError is an entry of one layer of an algorithm's parameters (defaults.params,
// defaults.cc_params.NAME or a flow's params, written on line) that does not decode.
type layerError struct {
	line      int
	layer, cc string
	msg       string
}

func (e *layerError) Error() string {
	return fmt.Sprintf("%s for %s (line %d): %s", e.layer, e.cc, e.line, e.msg)
}

// keyLine is the line of the key at path (top-level key, then nested keys): validation
// errors about scalar fields use it (the decoder keeps no positions for them). A key
// that is missing gives its parent's line, and a missing top-level key line 1.
func keyLine(body ast.Node, path ...any) int {
	line, _, found := yamlpos.Find(body, path)
	if found == 0 || line == 0 {
		return 1
	}
	return line
}

// ccName resolves a flow's algorithm (its own, else the defaults').
func (f *File) ccName(name string) string {
	if name != "" {
		return name
	}
	return f.Defaults.CC
}

// params builds the algorithm's parameters for a flow: the algorithm's defaults, then
// defaults.params when the algorithm is defaults.cc, then defaults.cc_params[name],
// then the flow's own params, each decoded strictly; then validated. Values stay in
// paper units (Compile scales them).
func (f *File) params(name string, own Params) (cc.Params, error) {
	name = f.ccName(name)
	if name == "" {
		return nil, fmt.Errorf("cc: missing; set it on the flow or in defaults.cc")
	}
	spec, err := cc.Lookup(name)
	if err != nil {
		return nil, err
	}
	p := spec.Defaults()
	layers := []struct {
		what string
		p    Params
	}{}
	if name == f.Defaults.CC {
		layers = append(layers, struct {
			what string
			p    Params
		}{"defaults.params", f.Defaults.Params})
	}
	if cp, ok := f.Defaults.CCParams[name]; ok {
		layers = append(layers, struct {
			what string
			p    Params
		}{"defaults.cc_params." + name, cp})
	}
	layers = append(layers, struct {
		what string
		p    Params
	}{"params", own})
	// Each layer decodes over what the previous ones left: a layer's bad entries are
	// each reported (yamlstrict drops them and decodes the rest) and left out.
	var errs []error
	for _, l := range layers {
		if l.p.node == nil {
			continue
		}
		var next cc.Params
		layerErrs, complete := yamlstrict.DecodeAll(l.p.node, func(n ast.Node) error {
			next = cloneParams(p)
			return yaml.NodeToValue(n, next, strict...)
		})
		for _, e := range layerErrs {
			errs = append(errs, &layerError{line: yamlpos.Line(l.p.node), layer: l.what, cc: name, msg: stripPos(e)})
		}
		if !complete {
			return nil, errors.Join(errs...)
		}
		p = next
	}
	if err := p.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s parameters: %w", name, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// cloneParams copies a Params struct (parameters are plain values: a shallow copy is
// a full one).
func cloneParams(p cc.Params) cc.Params {
	v := reflect.ValueOf(p).Elem()
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	return c.Interface().(cc.Params)
}

func stripPos(err error) string {
	msg := err.Error()
	if m := yamlPosRe.FindStringSubmatch(msg); m != nil {
		return m[3]
	}
	return msg
}

// count is the number of flows a spec makes (none for a negative count, which
// validate reports).
func (fl *FlowSpec) count() int {
	if fl.Count == nil {
		return 1
	}
	return max(*fl.Count, 0)
}

// names are the flow names a spec makes.
func (fl *FlowSpec) names() []string {
	if fl.Count == nil {
		return []string{fl.Name}
	}
	out := make([]string, fl.count())
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", fl.Group, i+1)
	}
	return out
}

var indexRe = regexp.MustCompile(`\{i(%\d+)?([+-]\d+)?\}`)

// host substitutes a group's index into a host name: {i} is the flow's 1-based index,
// {i+K} adds K, and {i%N} cycles 1…N ({i%N+K} adds K after cycling), so
// src: "h{i%10}" spreads 40 flows over h1…h10, four each.
func (fl *FlowSpec) host(h string, i int) string {
	return indexRe.ReplaceAllStringFunc(h, func(m string) string {
		sub := indexRe.FindStringSubmatch(m)
		v := i
		if sub[1] != "" {
			if n, _ := strconv.Atoi(sub[1][1:]); n > 0 {
				v = (i-1)%n + 1
			}
		}
		if sub[2] != "" {
			k, _ := strconv.Atoi(sub[2])
			v += k
		}
		return strconv.Itoa(v)
	})
}
