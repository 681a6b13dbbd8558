// Package expect is reef's small language for expectations: named checks over a run's
// metrics that carry a paper's claim, such as
//
//	victim.goodput >= 0.85 * victim.fair_share
//	jain(bulk) >= 0.95
//	convergence_time(poseidon) * 3 <= convergence_time(swift)
//	p99(fct_slowdown(small)) <= 10
//	queue_delay_p99(s1:p3) < 50us
//
// with an optional when: selector over sweep variables (cc == 'poseidon' && M >= 2). It
// sits between the experiment loader, which parses and checks every expectation before
// anything runs (Parse, then Resolve against the experiment's Catalogue), and the report,
// which builds one Env per run from the measured results and calls Evaluate.
//
// # Grammar
//
//	check   = sum cmp sum
//	cmp     = "<" | "<=" | ">" | ">=" | "==" | "!="
//	sum     = product { ("+" | "-") product }
//	product = unary { ("*" | "/") unary }
//	unary   = "-" unary | primary
//	primary = NUMBER [UNIT] | "(" sum ")" | IDENT "(" [sum {"," sum}] ")" | name ["." IDENT]
//	name    = part { ":" part }          part = IDENT | 'quoted' | "quoted"
//
//	when    = or;  or = and {"||" and};  and = not {"&&" not}
//	not     = "!" not | "(" or ")" | operand cmp operand
//	operand = IDENT (a sweep variable) | 'string' | NUMBER [UNIT]
//
// Units in literals: ns, us (µs), ms, s; bps, Kbps, Mbps, Gbps, Tbps; B, KB, MB, GB (decimal),
// KiB, MiB, GiB; % (a fraction: 85% = 0.85). Values are compared in base units (time in
// nanoseconds, rates in bit/s, sizes in bytes) and every quantity carries its dimension:
// comparing a rate with a time, or a rate with a bare number, is an error at parse time.
// Literals are in emulator units; paper(2ms) and paper(200Gbps) take the paper's units
// and apply the run's time scale τ (2ms × τ, 200Gbps ÷ τ).
//
// # Subjects
//
// A flow metric takes a flow set: a flow group, a flow name, a cc name (the flows running
// that algorithm), all, or a size bucket: small (< 100KB), medium (100KB–1MB), large
// (≥ 1MB), taken over sized flows (messages). Names are tried in that order. A port
// metric takes switch:port (s1:p3). subject.metric and metric(subject) are the same
// thing: victim.goodput == goodput(victim).
//
// # Metrics
//
// Over a flow set (goodputs and shares in bit/s over the measurement window; a fair
// share is the max-min oracle's share over the topology, as goodput):
//
//	goodput, goodput_mean, goodput_min, goodput_max   sum / mean / min / max per flow
//	fair_share, line_rate                             sums of shares and source NIC rates
//	share_ratio_min                                   smallest goodput / fair share
//	jain, jain_share                                  Jain's index of goodputs, of goodput / share
//	rate_std                                          mean per-flow std of the rate over time
//	convergence_time(S [, from])                      see below
//	retransmits, timeouts, flows, finished            counts
//	rtt                                               distribution: RTT samples
//	fct(S [, min_size, max_size])                     distribution: FCTs of finished messages
//	fct_slowdown(S [, min_size, max_size])            distribution: FCT / ideal FCT
//	goodputs                                          distribution: per-flow goodputs
//
// Over a port: utilisation, drops, marks, pause_time; distributions queue_delay and
// queue_bytes. A distribution is reduced by p50, p90, p99, p999 (nearest rank), mean,
// min, max, std or count, as p99(rtt(victim)), or by the shorthand rtt_p99(victim) =
// victim.rtt_p99. Helpers: abs(x), min(x, y, ...), max(x, y, ...), median(x, y, ...),
// quantile(q, x, y, ...) (the nearest-rank q-quantile, 0 ≤ q ≤ 1: quantile(0.25, ...) is
// the smallest value at least a quarter of them are at or below), paper(x). Metrics
// lists the catalogue with units and descriptions.
//
// convergence_time(S [, from [, until]]) is measured from the last start or stop among
// S's flows (or from the time given) until every flow of S is within 10% of its fair
// share at every sample up to the next start or stop (or until, if earlier); +Inf when
// that never happens. A median over several events, median(convergence_time(S, t1, t2),
// convergence_time(S, t2, t3), ...), keeps a result from hanging on one event's phase;
// a lower quantile over many events judges a behaviour that holds for most of them by
// chance, not for all.
//
// # Comparing runs of a sweep
//
// A sweep over the algorithm must call its variable cc. Two forms then refer to another
// run: a qualifier, swift:victim.goodput (or swift:s1:p3.queue_delay_p99), is the metric
// in the run whose cc is swift; and a bare cc value used as a flow set, as in
// convergence_time(poseidon), is every flow of the run whose cc is poseidon. The other
// sweep variables are held equal, so
//
//	convergence_time(poseidon) * 3 <= convergence_time(swift)
//
// in a sweep over cc × M is evaluated once per value of M. In such a cross-run check
// every subject must name its run, and when: may not mention cc.
//
// # Limitations
//
// Only the variable cc can qualify runs. Convergence time is measured after one event
// (by default the last start or stop among the flows measured).
package expect

import (
	"errors"
	"fmt"
)

// Spec is an expectation as written in an experiment file.
type Spec struct {
	// Name identifies the expectation in reports ("victim-share").
	Name string `json:"name" yaml:"name"`
	// Check is the comparison to hold (see the package doc's grammar).
	Check string `json:"check" yaml:"check"`
	// When, if set, restricts the check to the sweep runs it selects.
	When string `json:"when,omitempty" yaml:"when,omitempty"`
	// Claim is the paper's claim this check carries, shown beside the verdict.
	Claim string `json:"claim,omitempty" yaml:"claim,omitempty"`
}

// Expectation is a parsed Spec, ready to check and evaluate.
type Expectation struct {
	Spec
	check *binNode
	when  node
	// lhs and rhs types of the check (after Parse).
	dim Dim
	// subjects are the flow/port subjects the check uses, in order.
	subjects []subjectUse
	// cross is true when the check refers to other runs of a sweep (a qualifier, or a
	// bare cc value found by Check).
	cross bool
}

// subjectUse is one use of a subject in a check.
type subjectUse struct {
	n    *nameNode
	port bool
}

// Parse parses s.Check and s.When and checks metric and function names, argument kinds
// and dimensions against the built-in catalogue (see Metrics). Errors are *Error values
// (with the column of the bad token) wrapped with the expectation's name.
func Parse(s Spec) (*Expectation, error) {
	label := s.Name
	if label == "" {
		label = s.Check
	}
	if s.Name == "" {
		return nil, fmt.Errorf("expectation %q: missing name", label)
	}
	chk, err := parseCheck(s.Check)
	if err != nil {
		return nil, fmt.Errorf("expectation %q: %w", label, err)
	}
	x := &Expectation{Spec: s, check: chk}
	if s.When != "" {
		if x.when, err = parseWhen(s.When); err != nil {
			return nil, fmt.Errorf("expectation %q: %w", label, err)
		}
	}
	if err := x.typecheck(); err != nil {
		return nil, fmt.Errorf("expectation %q: %w", label, err)
	}
	return x, nil
}

// ParseAll parses every spec and joins the errors; names must be unique.
func ParseAll(specs []Spec) ([]*Expectation, error) {
	var errs []error
	seen := map[string]bool{}
	out := make([]*Expectation, 0, len(specs))
	for _, s := range specs {
		if s.Name != "" && seen[s.Name] {
			errs = append(errs, fmt.Errorf("expectation %q: name used twice", s.Name))
			continue
		}
		seen[s.Name] = true
		x, err := Parse(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, x)
	}
	return out, errors.Join(errs...)
}

// CrossRun reports whether the expectation compares runs of a sweep (a qualifier such as
// swift:victim.goodput, or, once Resolve has seen the sweep, a bare cc value as a flow set).
// Such expectations are evaluated over the whole sweep, not in one run's summary.
func (x *Expectation) CrossRun() bool { return x.cross }

// Catalogue is what is known about an experiment before it runs: the names a check may
// refer to. A nil slice or map leaves that kind of name unchecked.
type Catalogue struct {
	// Groups, Flows and CCs are the flow groups, flow names and algorithms of the
	// experiment (over all runs of a sweep).
	Groups, Flows, CCs []string
	// Ports are the switch egress ports as "switch:port" ("s1:p3").
	Ports []string
	// Vars are the sweep variables and their values as written ("cc": {"poseidon",
	// "swift"}, "M": {"1", "2", "4"}).
	Vars map[string][]string
}

// Resolve resolves every subject and sweep variable the expectation uses against c and
// decides whether it compares runs (CrossRun). Errors carry the column of the bad name.
func (x *Expectation) Resolve(c *Catalogue) error {
	if c == nil {
		return nil
	}
	label := x.Name
	wrap := func(err error) error { return fmt.Errorf("expectation %q: %w", label, err) }
	has := func(list []string, s string) bool {
		for _, v := range list {
			if v == s {
				return true
			}
		}
		return false
	}
	ccVals, ccSwept := c.Vars["cc"]
	for _, u := range x.subjects {
		parts := u.n.parts
		want := 1
		if u.port {
			want = 2
		}
		if len(parts) == want+1 {
			if !ccSwept {
				return wrap(&Error{"check", u.n.c, fmt.Sprintf("run qualifier %q: the experiment has no sweep variable cc", parts[0])})
			}
			if !has(ccVals, parts[0]) {
				return wrap(&Error{"check", u.n.c, fmt.Sprintf("run qualifier %q is not a value of the sweep variable cc %q", parts[0], ccVals)})
			}
			x.cross = true
			parts = parts[1:]
		}
		if u.port {
			name := parts[0] + ":" + parts[1]
			if c.Ports != nil && !has(c.Ports, name) {
				return wrap(&Error{"check", u.n.c, fmt.Sprintf("unknown port %q%s", name, suggest(name, c.Ports))})
			}
			continue
		}
		s := parts[0]
		switch {
		case s == "all" || bucketNames[s] || has(c.Groups, s) || has(c.Flows, s):
		case ccSwept && has(ccVals, s):
			if len(u.n.parts) == 1 {
				x.cross = true
			}
		case has(c.CCs, s):
		case c.Groups == nil && c.Flows == nil && c.CCs == nil:
		default:
			known := append(append(append([]string{"all", "small", "medium", "large"}, c.Groups...), c.Flows...), c.CCs...)
			return wrap(&Error{"check", u.n.c, fmt.Sprintf("unknown flow group, flow or cc %q%s", s, suggest(s, known))})
		}
	}
	if x.cross {
		for _, u := range x.subjects {
			q := len(u.n.parts) == 2 && !u.port || len(u.n.parts) == 3
			if !q && !(len(u.n.parts) == 1 && has(ccVals, u.n.parts[0])) {
				example := "swift"
				if len(ccVals) > 0 {
					example = ccVals[0]
				}
				return wrap(&Error{"check", u.n.c, fmt.Sprintf("%q: this check compares runs, so every subject must name its run (e.g. %s:%s)", u.n, example, u.n)})
			}
		}
	}
	if x.when != nil {
		var err error
		walk(x.when, func(n node) {
			nn, ok := n.(*nameNode)
			if !ok || err != nil {
				return
			}
			v := nn.parts[0]
			if _, ok := c.Vars[v]; !ok {
				err = &Error{"when", nn.c, fmt.Sprintf("unknown sweep variable %q%s", v, suggest(v, keys(c.Vars)))}
			} else if x.cross && v == "cc" {
				err = &Error{"when", nn.c, "a check that compares runs cannot select on cc"}
			}
		})
		if err != nil {
			return wrap(err)
		}
	}
	return nil
}

// walk calls f on n and every node below it.
func walk(n node, f func(node)) {
	f(n)
	switch n := n.(type) {
	case *binNode:
		walk(n.l, f)
		walk(n.r, f)
	case *unNode:
		walk(n.x, f)
	case *callNode:
		for _, a := range n.args {
			walk(a, f)
		}
	case *refNode:
		walk(n.subj, f)
	}
}
