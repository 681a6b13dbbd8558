package topo

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"reef/emulator/internal/yamlpos"
	"reef/switchd"
	"reef/units"
)

// MaxLabName is the longest lab name: names prefix namespaces and interfaces.
const MaxLabName = 12

// MaxNodeName is the longest node name (a Linux interface name is at most 15 bytes).
const MaxNodeName = 15

var (
	labNameRE  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	nodeNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
)

// resolver turns a raw document into a Topology, collecting every problem.
type resolver struct {
	file string
	root ast.Node
	raw  *rawFile
	errs []error
}

func (r *resolver) fieldLine(p yamlpos.Path) int { return yamlpos.LineOf(r.root, p) }

func (r *resolver) errorf(p yamlpos.Path, format string, args ...any) {
	r.errs = append(r.errs, posError(r.file, r.fieldLine(p), p.String(), fmt.Sprintf(format, args...)))
}

// Error is one problem in a topology: where it is and what was expected.
type Error struct {
	File  string
	Line  int    // 0 when unknown
	Field string // "links[2].rate"; "" when the problem is the whole document
	Msg   string
}

// Error formats "file:line: field: msg" (line and field left out when unknown).
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func posError(file string, line int, field, msg string) error {
	return &Error{File: file, Line: line, Field: field, Msg: msg}
}

// partial is a set of link parameters a block sets; nil fields are not set.
type partial struct {
	rate   *units.Rate
	delay  *units.Time
	buffer *units.Bytes
	mtu    *int
	pfc    *switchd.PFCConfig
}

func (q partial) apply(p *Params) {
	if q.rate != nil {
		p.Rate = *q.rate
	}
	if q.delay != nil {
		p.Delay = *q.delay
	}
	if q.buffer != nil {
		p.Buffer = *q.buffer
	}
	if q.mtu != nil {
		p.MTU = *q.mtu
	}
	if q.pfc != nil {
		p.PFC = *q.pfc
	}
}

// MinMTU and MaxMTU bound a link's MTU: IPv4's minimum datagram every host must take, and
// the largest MTU a switch port takes (switchd.MaxMTU), so a jumbo link of up to 9216
// bytes runs on every backend and a larger one is refused here, with its line.
const (
	MinMTU = 576
	MaxMTU = switchd.MaxMTU
)

func (r *resolver) params(raw *rawParams, p yamlpos.Path) partial {
	var q partial
	if raw == nil {
		return q
	}
	if raw.Rate != nil {
		if v, ok := r.rate(*raw.Rate, p.With("rate")); ok {
			if v <= 0 {
				r.errorf(p.With("rate"), "must be > 0, got %q", *raw.Rate)
			} else {
				q.rate = &v
			}
		}
	}
	if raw.Delay != nil {
		if v, ok := r.time(*raw.Delay, p.With("delay")); ok {
			if v < 0 {
				r.errorf(p.With("delay"), "must be ≥ 0, got %q", *raw.Delay)
			} else {
				q.delay = &v
			}
		}
	}
	if raw.Buffer != nil {
		if v, ok := r.bytes(*raw.Buffer, p.With("buffer")); ok {
			if v <= 0 {
				r.errorf(p.With("buffer"), "must be > 0, got %q", *raw.Buffer)
			} else {
				q.buffer = &v
			}
		}
	}
	if raw.MTU != nil {
		if m := *raw.MTU; m < MinMTU || m > MaxMTU {
			r.errorf(p.With("mtu"), "must be in [%d, %d] bytes, got %d", MinMTU, MaxMTU, m)
		} else {
			q.mtu = raw.MTU
		}
	}
	if raw.PFC != nil {
		pp := p.With("pfc")
		c := switchd.PFCConfig{Enabled: true}
		okOff, okOn := false, true
		if raw.PFC.XOff == nil {
			r.errorf(pp, "xoff is required (the ingress bytes that pause the upstream)")
		} else if c.XOff, okOff = r.bytes(*raw.PFC.XOff, pp.With("xoff")); okOff && c.XOff <= 0 {
			r.errorf(pp.With("xoff"), "must be > 0, got %q", *raw.PFC.XOff)
			okOff = false
		}
		if raw.PFC.XOn != nil {
			if c.XOn, okOn = r.bytes(*raw.PFC.XOn, pp.With("xon")); okOn && c.XOn < 0 {
				r.errorf(pp.With("xon"), "must be ≥ 0, got %q", *raw.PFC.XOn)
				okOn = false
			}
		} else {
			c.XOn = c.XOff / 2
		}
		if okOff && okOn && c.XOn >= c.XOff {
			r.errorf(pp.With("xon"), "must be below xoff (%v), got %v", c.XOff, c.XOn)
		} else if okOff && okOn {
			q.pfc = &c
		}
	}
	return q
}

func (r *resolver) rate(s string, p yamlpos.Path) (units.Rate, bool) {
	v, err := units.ParseRate(s)
	if err != nil {
		r.errorf(p, "%v", err)
		return 0, false
	}
	return v, true
}

func (r *resolver) time(s string, p yamlpos.Path) (units.Time, bool) {
	v, err := units.ParseTime(s)
	if err != nil {
		r.errorf(p, "%v", err)
		return 0, false
	}
	return v, true
}

func (r *resolver) bytes(s string, p yamlpos.Path) (units.Bytes, bool) {
	v, err := units.ParseBytes(s)
	if err != nil {
		r.errorf(p, "%v", err)
		return 0, false
	}
	return v, true
}

func (r *resolver) resolve() *Topology {
	raw := r.raw
	t := &Topology{Name: raw.Name, File: r.file, Groups: map[string][]string{}}
	switch {
	case raw.Name == "":
		r.errorf(nil, "name is required (the lab name: [a-z0-9-], at most %d characters)", MaxLabName)
	case len(raw.Name) > MaxLabName || !labNameRE.MatchString(raw.Name):
		r.errorf(yamlpos.At("name"), "%q: want [a-z0-9-], at most %d characters, not starting or ending with '-'", raw.Name, MaxLabName)
	}

	defaults := DefaultParams
	r.params(raw.Defaults, yamlpos.At("defaults")).apply(&defaults)

	classes := map[string]partial{}
	for name := range raw.Classes {
		c := raw.Classes[name]
		classes[name] = r.params(&c, yamlpos.At("classes", name))
	}

	// Generated nodes and links first, then the file's own.
	var genClasses []string
	if raw.Generator != nil {
		g := r.generate(raw.Generator)
		if g != nil {
			t.Generator = &g.spec
			t.Nodes = append(t.Nodes, g.nodes...)
			t.Links = append(t.Links, g.links...)
			maps.Copy(t.Groups, g.groups)
			genClasses = g.classes
		}
	} else if len(raw.Nodes) == 0 && len(raw.Links) == 0 {
		r.errorf(nil, "no nodes, links or generator; want nodes and links, or a generator")
	}
	for i, n := range raw.Nodes {
		p := yamlpos.At("nodes", i)
		k := Kind(n.Kind)
		if k != Host && k != Switch {
			r.errorf(p.With("kind"), "%q: want host or switch", n.Kind)
		}
		t.Nodes = append(t.Nodes, Node{Name: n.Name, Kind: k, Line: r.fieldLine(p), Field: p.String()})
	}
	usedClass := map[string]bool{}
	for _, c := range genClasses {
		usedClass[c] = true
	}
	for i, l := range raw.Links {
		p := yamlpos.At("links", i)
		if l.A == "" || l.B == "" {
			r.errorf(p, "a link needs both ends: [a, b] or {a: .., b: ..}")
		}
		lk := Link{A: l.A, B: l.B, Class: l.Class, Line: r.fieldLine(p), Field: p.String()}
		if l.Class != "" {
			if _, ok := classes[l.Class]; !ok {
				r.errorf(p.With("class"), "class %q is not defined under classes", l.Class)
			}
			usedClass[l.Class] = true
		}
		own := r.params(&l.Params, p)
		lk.Params = defaults
		classes[l.Class].apply(&lk.Params)
		own.apply(&lk.Params)
		t.Links = append(t.Links, lk)
	}
	// Generated links get defaults and class now (they carry no own fields).
	for i := range t.Links {
		if t.Links[i].Field == "generator" {
			t.Links[i].Params = defaults
			classes[t.Links[i].Class].apply(&t.Links[i].Params)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(classes)) {
		if !usedClass[name] {
			known := "none"
			if len(genClasses) > 0 {
				known = strings.Join(genClasses, ", ")
			}
			r.errorf(yamlpos.At("classes", name), "class %q is used by no link (generated classes: %s)", name, known)
		}
	}
	if t.Generator != nil && t.Generator.Kind == "leaf-spine" {
		r.leafSpineRates(t, raw)
	}
	r.overrides(t)
	r.features(t)
	// One group per switch with hosts, hosts in link order.
	kind := make(map[string]Kind, len(t.Nodes))
	for _, n := range t.Nodes {
		kind[n.Name] = n.Kind
	}
	attached := map[string][]string{}
	for _, l := range t.Links {
		for _, e := range [][2]string{{l.A, l.B}, {l.B, l.A}} {
			if kind[e[0]] == Switch && kind[e[1]] == Host {
				attached[e[0]] = append(attached[e[0]], e[1])
			}
		}
	}
	for sw, hosts := range attached {
		if _, taken := t.Groups[sw]; !taken {
			t.Groups[sw] = hosts
		}
	}
	return t
}

func (r *resolver) overrides(t *Topology) {
	for i, o := range r.raw.Overrides {
		p := yamlpos.At("overrides", i)
		if o.A == "" && o.B == "" && o.Class == "" {
			r.errorf(p, "an override needs a and b (node names or globs), or a class")
			continue
		}
		a, b := o.A, o.B
		if a == "" {
			a = "*"
		}
		if b == "" {
			b = "*"
		}
		bad := false
		for _, pat := range []string{a, b} {
			if _, err := path.Match(pat, ""); err != nil {
				r.errorf(p, "bad glob %q: %v", pat, err)
				bad = true
			}
		}
		if bad {
			continue
		}
		q := r.params(&rawParams{Rate: o.Rate, Delay: o.Delay, Buffer: o.Buffer, MTU: o.MTU, PFC: o.PFC}, p)
		n := 0
		for j := range t.Links {
			l := &t.Links[j]
			if o.Class != "" && l.Class != o.Class {
				continue
			}
			if globMatch(a, l.A) && globMatch(b, l.B) || globMatch(a, l.B) && globMatch(b, l.A) {
				q.apply(&l.Params)
				n++
			}
		}
		if n == 0 {
			r.errorf(p, "matches no link (a=%q b=%q class=%q)", a, b, o.Class)
		}
	}
}

func globMatch(pat, name string) bool {
	ok, err := path.Match(pat, name)
	return err == nil && ok
}

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

func (r *resolver) features(t *Topology) {
	for i := range t.Nodes {
		if t.Nodes[i].Kind == Switch {
			t.Nodes[i].Features = DefaultFeatures
		}
	}
	keys := mapKeys(r.root, yamlpos.At("switches"))
	if len(keys) != len(r.raw.Switches) { // no AST order (should not happen): sorted
		keys = slices.Sorted(maps.Keys(r.raw.Switches))
	}
	var globs, exact []string
	for _, k := range keys {
		if isGlob(k) {
			globs = append(globs, k)
		} else {
			exact = append(exact, k)
		}
	}
	for _, k := range append(globs, exact...) {
		p := yamlpos.At("switches", k)
		if _, err := path.Match(k, ""); err != nil {
			r.errorf(p, "bad glob: %v", err)
			continue
		}
		raw := r.raw.Switches[k]
		f := r.featureBlock(raw, p)
		n := 0
		for i := range t.Nodes {
			nd := &t.Nodes[i]
			if !globMatch(k, nd.Name) {
				continue
			}
			if nd.Kind != Switch {
				if !isGlob(k) {
					r.errorf(p, "%s is a %s; switches entries apply to switches", nd.Name, nd.Kind)
				}
				continue
			}
			n++
			if f.ECN != nil {
				nd.Features.ECN = *f.ECN
			}
			if f.INT != nil {
				nd.Features.INT = *f.INT
			}
			if f.LB != nil {
				nd.Features.LB = *f.LB
			}
		}
		if n == 0 {
			r.errorf(p, "matches no switch")
		}
	}
}

type featureSet struct {
	ECN *switchd.ECNConfig
	INT *switchd.INTConfig
	LB  *switchd.LBConfig
}

func (r *resolver) featureBlock(raw rawFeatures, p yamlpos.Path) featureSet {
	var f featureSet
	if e := raw.ECN; e != nil {
		ep := p.With("ecn")
		c := switchd.ECNConfig{Mode: e.Mode}
		ok := true
		sz := func(s *string, name string) units.Bytes {
			if s == nil {
				return 0
			}
			v, good := r.bytes(*s, ep.With(name))
			if good && v <= 0 {
				r.errorf(ep.With(name), "must be > 0, got %q", *s)
				good = false
			}
			ok = ok && good
			return v
		}
		unused := func(name string, set bool) {
			if set {
				r.errorf(ep.With(name), "not used by mode %q", e.Mode)
				ok = false
			}
		}
		c.K, c.Min, c.Max = sz(e.K, "k"), sz(e.Min, "min"), sz(e.Max, "max")
		switch e.Mode {
		case switchd.ECNOff:
			unused("k", e.K != nil)
			unused("min", e.Min != nil)
			unused("max", e.Max != nil)
			unused("pmax", e.PMax != nil)
		case switchd.ECNStep:
			if e.K == nil {
				r.errorf(ep, "mode step needs k (the queue length that starts marking)")
				ok = false
			}
			unused("min", e.Min != nil)
			unused("max", e.Max != nil)
			unused("pmax", e.PMax != nil)
		case switchd.ECNRED:
			unused("k", e.K != nil)
			if e.Min == nil || e.Max == nil || e.PMax == nil {
				r.errorf(ep, "mode red needs min, max and pmax")
				ok = false
			} else {
				c.PMax = *e.PMax
				if ok && c.Max <= c.Min {
					r.errorf(ep.With("max"), "must be above min (%v), got %v", c.Min, c.Max)
					ok = false
				}
				if !(c.PMax > 0 && c.PMax <= 1) {
					r.errorf(ep.With("pmax"), "must be in (0, 1], got %v", c.PMax)
					ok = false
				}
			}
		default:
			r.errorf(ep.With("mode"), "%q: want off, step or red", e.Mode)
			ok = false
		}
		if ok {
			f.ECN = &c
		}
	}
	if in := raw.INT; in != nil {
		ip := p.With("int")
		c := switchd.INTConfig{Mode: in.Mode}
		ok := true
		switch in.Mode {
		case switchd.INTOff, switchd.INTHPCC:
			if in.MPDUnit != nil {
				r.errorf(ip.With("mpd_unit"), "not used by mode %q", in.Mode)
				ok = false
			}
		case switchd.INTMPD:
			c.MPDUnit = DefaultMPDUnit
			if in.MPDUnit != nil {
				v, good := r.time(*in.MPDUnit, ip.With("mpd_unit"))
				if good && v <= 0 {
					r.errorf(ip.With("mpd_unit"), "must be > 0, got %q", *in.MPDUnit)
					good = false
				}
				ok = good
				c.MPDUnit = v
			}
		default:
			r.errorf(ip.With("mode"), "%q: want off, mpd or hpcc", in.Mode)
			ok = false
		}
		if ok {
			f.INT = &c
		}
	}
	if lb := raw.LB; lb != nil {
		lp := p.With("lb")
		c := switchd.LBConfig{Mode: lb.Mode}
		ok := true
		switch lb.Mode {
		case switchd.LBECMP, switchd.LBSpray, switchd.LBAdaptive, switchd.LBFlowlet:
		default:
			r.errorf(lp.With("mode"), "%q: want ecmp, spray, adaptive or flowlet", lb.Mode)
			ok = false
		}
		if lb.FlowletGap != nil {
			if lb.Mode != switchd.LBFlowlet {
				r.errorf(lp.With("flowlet_gap"), "only used by mode flowlet")
				ok = false
			} else if v, good := r.time(*lb.FlowletGap, lp.With("flowlet_gap")); !good {
				ok = false
			} else if v <= 0 {
				r.errorf(lp.With("flowlet_gap"), "must be > 0, got %q", *lb.FlowletGap)
				ok = false
			} else {
				c.FlowletGap = v
			}
		} else if lb.Mode == switchd.LBFlowlet {
			r.errorf(lp, "mode flowlet needs flowlet_gap (the idle gap that starts a new flowlet)")
			ok = false
		}
		if lb.Quantum != nil {
			if lb.Mode != switchd.LBAdaptive {
				r.errorf(lp.With("quantum"), "only used by mode adaptive")
				ok = false
			} else if v, good := r.bytes(*lb.Quantum, lp.With("quantum")); !good {
				ok = false
			} else if v <= 0 {
				r.errorf(lp.With("quantum"), "must be > 0, got %q", *lb.Quantum)
				ok = false
			} else {
				c.Quantum = v
			}
		}
		if ok {
			f.LB = &c
		}
	}
	return f
}
