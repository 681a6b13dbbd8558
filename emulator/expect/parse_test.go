package expect

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		check, when string
		dim         Dim
		cross       bool
	}{
		{check: "victim.goodput >= 0.85 * victim.fair_share", dim: DimRate},
		{check: "jain(bulk) >= 0.95", dim: DimNone},
		{check: "convergence_time(poseidon) * 3 <= convergence_time(swift)", dim: DimTime},
		{check: "p99(fct_slowdown(small)) <= 10", dim: DimNone},
		{check: "queue_delay_p99(s1:p3) < 50us", dim: DimTime},
		{check: "s1:p3.queue_delay_p99 < 0.05ms", dim: DimTime},
		{check: "victim.goodput >= 90% * victim.line_rate", dim: DimRate},
		{check: "swift:victim.goodput < 0.5 * swift:victim.fair_share", dim: DimRate, cross: true},
		{check: "poseidon:s1:p3.queue_delay_p99 <= swift:s1:p3.queue_delay_p99", dim: DimTime, cross: true},
		{check: "p99(fct(all, 0, 100KB)) <= 2ms", dim: DimTime},
		{check: "fct_slowdown_p99(all, 1MB) < 1e2", dim: DimNone},
		{check: "victim.goodput / victim.fair_share >= 0.85", dim: DimNone},
		{check: "abs(victim.goodput - 'bulk'.goodput_mean) < 10Mbps", dim: DimRate},
		{check: "min(victim.goodput, bulk.goodput_min) > 0", dim: DimRate},
		{check: "max(victim.goodput, bulk.goodput_min, 1Mbps) > 0", dim: DimRate},
		{check: "median(convergence_time(bulk, 0, 1ms), convergence_time(bulk, 1ms, 2ms), 1ms) < 2ms", dim: DimTime},
		{check: "-victim.rtt_p99 > -(1ms + 200us)", dim: DimTime},
		{check: "count(rtt(victim)) > 10", dim: DimNone},
		{check: "convergence_time(all, paper(2ms)) < paper(100us)", dim: DimTime},
		{check: "bulk.goodput > 0", dim: DimRate},
		{check: "1 < 2", when: "cc == 'poseidon' && M >= 2", dim: DimNone},
		{check: "1 < 2", when: "!(cc != \"swift\") || (N < 4 && rate == 100Mbps)", dim: DimNone},
		{check: "1 < 2", when: "M >= -1", dim: DimNone},
	}
	for _, tt := range tests {
		x, err := Parse(Spec{Name: "t", Check: tt.check, When: tt.when})
		if err != nil {
			t.Errorf("Parse(%q, when %q): %v", tt.check, tt.when, err)
			continue
		}
		if x.dim != tt.dim {
			t.Errorf("Parse(%q): dimension %v, want %v", tt.check, x.dim, tt.dim)
		}
		if x.CrossRun() != tt.cross {
			t.Errorf("Parse(%q): CrossRun %v, want %v", tt.check, x.CrossRun(), tt.cross)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		check, when string
		field       string
		col         int
		msg         string
	}{
		{check: "victim.goodptu >= 1Mbps", field: "check", col: 8, msg: `unknown metric "goodptu" (did you mean "goodput"?)`},
		{check: "jian(bulk) >= 0.95", field: "check", col: 1, msg: `unknown metric or function "jian" (did you mean "jain"?)`},
		{check: "victim.goodput >= 0.85", field: "check", col: 16, msg: "cannot compare a rate with a plain number (give the number a unit, e.g. 100Mbps)"},
		{check: "victim.goodput >= 5us", field: "check", col: 16, msg: "cannot compare a rate with a time"},
		{check: "victim.goodput >= 0.85 *", field: "check", col: 25, msg: "want a number, a name or '(', got end of expression"},
		{check: "victim.goodput 0.85", field: "check", col: 16, msg: `want a comparison (<, <=, >, >=, ==, !=), got "0.85"`},
		{check: "victim.goodput >= 3 furlongs", field: "check", col: 21, msg: `unexpected "furlongs" after the comparison`},
		{check: "x.rtt_p99 < 3 lightyears", field: "check", col: 15, msg: "unexpected"},
		{check: "victim.rtt_p99 < 50xs", field: "check", col: 18, msg: `unknown unit "xs"`},
		{check: "victim.goodput # 1", field: "check", col: 16, msg: "unexpected character '#'"},
		{check: "p99(victim) < 1", field: "check", col: 1, msg: "p99 needs a distribution"},
		{check: "rtt(victim) < 1ms", field: "check", col: 13, msg: "both sides of a comparison must be numbers"},
		{check: "queue_delay_p99(victim) < 1ms", field: "check", col: 17, msg: "needs a port as switch:port"},
		{check: "goodput(s1:p3:x) > 0", field: "check", col: 9, msg: "needs a flow set"},
		{check: "victim.goodput * victim.goodput > 0", field: "check", col: 16, msg: "cannot multiply a rate by a rate"},
		{check: "jain(bulk, 3) > 0", field: "check", col: 12, msg: "takes at most 0 argument(s)"},
		{check: "fct_p99(all, 1ms) > 0", field: "check", col: 14, msg: "argument min_size of fct_p99 must be a size"},
		{check: "victim + 1 > 0", field: "check", col: 8, msg: "'+' needs numbers"},
		{check: "paper(victim) > 0", field: "check", col: 1, msg: "paper takes one number"},
		{check: "median(1ms) > 0", field: "check", col: 1, msg: "median takes two or more numbers (p50 reduces a distribution)"},
		{check: "median(1ms, 2ms, victim.goodput) > 0", field: "check", col: 18, msg: "median of a time and a rate"},
		{check: "quantile(0.5, 1ms) > 0", field: "check", col: 1, msg: "quantile takes a fraction q and two or more numbers"},
		{check: "quantile(1ms, 1ms, 2ms) > 0", field: "check", col: 10, msg: "quantile's first argument is a fraction from 0 to 1, got a time"},
		{check: "quantile(1.5, 1ms, 2ms) > 0", field: "check", col: 10, msg: "quantile's fraction must be from 0 to 1, got 1.5"},
		{check: "quantile(0.5, 1ms, victim.goodput) > 0", field: "check", col: 20, msg: "quantile of a time and a rate"},
		{check: "quantile(0.5, 1ms, rtt(victim)) > 0", field: "check", col: 20, msg: "quantile takes numbers, got a distribution"},
		{check: "max(1ms, rtt(victim)) > 0", field: "check", col: 10, msg: "max takes numbers, got a distribution"},
		{check: "convergence_time(victim, 1ms, 2ms, 3ms) > 0", field: "check", col: 36, msg: "takes at most 2 argument(s)"},
		{check: "'unterminated > 1", field: "check", col: 1, msg: "unterminated string"},
		{check: "(1 < 2", field: "check", col: 4, msg: "want ')'"},
		{check: "1 < 2", when: "cc = 'x'", field: "when", col: 4, msg: "unexpected character '='"},
		{check: "1 < 2", when: "cc == ", field: "when", col: 7, msg: "want a sweep variable"},
		{check: "1 < 2", when: "cc < 'x'", field: "when", col: 4, msg: "strings can only be compared with == and !="},
		{check: "1 < 2", when: "M >= 2 &&", field: "when", col: 10, msg: "want a sweep variable"},
	}
	for _, tt := range tests {
		_, err := Parse(Spec{Name: "t", Check: tt.check, When: tt.when})
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q, when %q) = %v, want an *Error", tt.check, tt.when, err)
			continue
		}
		if e.Field != tt.field || e.Col != tt.col || !strings.Contains(e.Msg, tt.msg) {
			t.Errorf("Parse(%q, when %q) = %s: col %d: %s\n want %s: col %d: ...%s...", tt.check, tt.when, e.Field, e.Col, e.Msg, tt.field, tt.col, tt.msg)
		}
	}
}

func TestParseAllNamesAndErrors(t *testing.T) {
	_, err := ParseAll([]Spec{
		{Name: "a", Check: "jain(all) > 0.9"},
		{Name: "a", Check: "jain(all) > 0.9"},
		{Name: "", Check: "jain(all) > 0.9"},
		{Name: "b", Check: "jain(all) >"},
	})
	if err == nil {
		t.Fatal("ParseAll accepted a duplicate name, a missing name and a syntax error")
	}
	for _, want := range []string{`"a": name used twice`, "missing name", `expectation "b": check: col 12`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAll error %q does not mention %q", err, want)
		}
	}
}

func TestResolve(t *testing.T) {
	cat := &Catalogue{
		Groups: []string{"victim", "bulk"},
		Flows:  []string{"victim", "bulk1", "bulk2"},
		CCs:    []string{"poseidon", "swift"},
		Ports:  []string{"s1:p3", "s2:p3"},
		Vars:   map[string][]string{"cc": {"poseidon", "swift"}, "M": {"1", "2"}},
	}
	tests := []struct {
		check, when string
		cross       bool
		err         string
	}{
		{check: "victim.goodput >= 0.85 * victim.fair_share", when: "cc == 'poseidon' && M >= 2"},
		{check: "convergence_time(poseidon) * 3 <= convergence_time(swift)", cross: true},
		{check: "poseidon:victim.goodput >= 2 * swift:victim.goodput", when: "M == 2", cross: true},
		{check: "queue_delay_p99(s1:p3) < 50us"},
		{check: "p99(fct_slowdown(small)) < 5"},
		{check: "queue_delay_p99(s9:p3) < 50us", err: `check: col 17: unknown port "s9:p3" (did you mean "s1:p3"?)`},
		{check: "victum.goodput > 0", err: `check: col 1: unknown flow group, flow or cc "victum" (did you mean "victim"?)`},
		{check: "hpcc:victim.goodput > 0", err: `run qualifier "hpcc" is not a value`},
		{check: "victim.goodput > 0", when: "K == 2", err: `when: col 1: unknown sweep variable "K"`},
		{check: "convergence_time(poseidon) < convergence_time(victim)", err: `col 47: "victim": this check compares runs`},
		{check: "convergence_time(poseidon) < 1ms", when: "cc == 'swift'", err: "cannot select on cc"},
	}
	for _, tt := range tests {
		x, err := Parse(Spec{Name: "t", Check: tt.check, When: tt.when})
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.check, err)
		}
		err = x.Resolve(cat)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("Resolve(%q): %v", tt.check, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Resolve(%q) = %v, want an error containing %q", tt.check, err, tt.err)
		case tt.err == "" && x.CrossRun() != tt.cross:
			t.Errorf("Resolve(%q): CrossRun %v, want %v", tt.check, x.CrossRun(), tt.cross)
		}
	}
}

// In an experiment that runs several algorithms side by side (no cc sweep), a cc name
// is the set of flows running it, inside the run.
func TestResolveMixedRun(t *testing.T) {
	cat := &Catalogue{Groups: []string{"bulk"}, CCs: []string{"poseidon", "swift"}}
	x, err := Parse(Spec{Name: "t", Check: "goodput(poseidon) >= goodput(swift)"})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Resolve(cat); err != nil || x.CrossRun() {
		t.Errorf("Resolve = %v, CrossRun %v; want a check within the run", err, x.CrossRun())
	}
	x, _ = Parse(Spec{Name: "t", Check: "swift:bulk.goodput > 0"})
	if err := x.Resolve(cat); err == nil || !strings.Contains(err.Error(), "no sweep variable cc") {
		t.Errorf("qualifier without a cc sweep: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"victim.goodput >= 0.85 * victim.fair_share", "jain(bulk) >= 0.95",
		"convergence_time(poseidon) * 3 <= convergence_time(swift)", "p99(fct_slowdown(small)) <= 10",
		"queue_delay_p99(s1:p3) < 50us", "swift:victim.goodput < 1e9bps", "'a b':x.rtt_p99 < 1µs",
		"cc == 'poseidon' && M >= 2", "!(a == 1) || b != 'x'",
	} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, check, when string) {
		x, err := Parse(Spec{Name: "f", Check: check, When: when})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q, %q) error %v is not an *Error", check, when, err)
			}
			if e.Col < 0 || e.Col > len([]rune(check))+len([]rune(when))+1 {
				t.Fatalf("Parse(%q, %q): column %d out of range", check, when, e.Col)
			}
			return
		}
		// A parsed expectation must evaluate without panicking, even on an empty run.
		env := &Env{Vars: map[string]string{"cc": "swift", "M": "2"}, To: 1}
		_ = EvaluateRun([]*Expectation{x}, env)
		_ = Evaluate([]*Expectation{x}, []*Env{env})
		_ = x.Resolve(&Catalogue{Groups: []string{"a"}, Vars: map[string][]string{"cc": {"swift"}}})
	})
}

// The package doc lists every metric of the catalogue (shorthands aside).
func TestDocListsMetrics(t *testing.T) {
	src, err := os.ReadFile("expect.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src[:strings.Index(string(src), "package expect")])
	for _, m := range Metrics() {
		if i := strings.LastIndex(m.Name, "_"); i > 0 {
			if d := catalogue[m.Name[:i]]; d != nil && d.dist {
				if _, isAgg := aggs[m.Name[i+1:]]; isAgg {
					continue // a distribution's shorthand (rtt_p99)
				}
			}
		}
		if !strings.Contains(doc, m.Name) {
			t.Errorf("package doc does not mention metric %s", m.Name)
		}
	}
}
