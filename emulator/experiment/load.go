package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"reef/emulator/expect"
	"reef/emulator/internal/yamlstrict"
)

// Experiment is a loaded, validated experiment file with its sweep expanded.
type Experiment struct {
	// Path is the file it came from (errors and relative topology paths use it).
	Path string
	// Name is the experiment's name.
	Name string
	// Points are the runs, one per sweep combination (one when there is no sweep).
	Points []*Point
	// Sweep is the sweep as written.
	Sweep Sweep

	// invalid are the points that decoded but did not validate (Check compiles them).
	invalid []*Point
}

// Point is one combination of sweep values and the file as decoded with them.
type Point struct {
	// Index is the point's position in the sweep (0-based).
	Index int
	// Label is "cc=swift,M=4" ("" without a sweep).
	Label string
	// Vars are the sweep values of this point, in sweep order.
	Vars []Var
	// File is the experiment decoded with this point's values substituted.
	File *File

	sweepLine int
	// badLines are the lines with a problem, on an invalid point.
	badLines map[int]bool
}

// Var is one variable's value at a point.
type Var struct {
	Name  string
	Value any
}

// Var returns the value of variable name at the point.
func (p *Point) Var(name string) (any, bool) {
	for _, v := range p.Vars {
		if v.Name == name {
			return v.Value, true
		}
	}
	return nil, false
}

// Load reads, validates and expands the experiment at path.
func Load(path string) (*Experiment, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	return Parse(path, src)
}

// Parse is Load on bytes already read; path is used in errors and to resolve relative
// file names.
func Parse(path string, src []byte) (*Experiment, error) {
	x, errs, err := parse(path, src)
	if err != nil {
		return nil, err
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	x.Name = x.Points[0].File.Name
	if err := x.resolveExpectations(nil); err != nil {
		return nil, err
	}
	return x, nil
}

// Check reports every problem of the experiment in src at once, creating nothing: what
// Parse finds at each sweep point, and for each point that parses, what compiling it
// for each of backends finds (its topology, hosts, links, switch patterns, parameters
// at the backend's time scale, expectations). Each problem is reported once, naming
// the sweep points it concerns when not all of them, in line order.
func Check(path string, src []byte, backends []string) error {
	x, errs, err := parse(path, src)
	if err != nil {
		return err
	}
	if len(x.Points) > 0 {
		x.Name = x.Points[0].File.Name
	}
	// A point that decoded but did not validate is compiled too, and what that finds is
	// reported unless validation said it already: on the same line (a bad workload's
	// line says what is wrong with it once) or about algorithm parameters (validation
	// checked them all). A compile problem of every point is not a point's own.
	compileErrs := newSweepErrors(len(x.Points) + len(x.invalid))
	for _, pt := range append(slices.Clip(x.Points), x.invalid...) {
		for _, b := range backends {
			for _, e := range splitErrors(x.compileChecked(pt, CompileOptions{Backend: b})) {
				var pe *paramsError
				if pt.badLines != nil && (pt.badLines[errLine(path, e)] || errors.As(e, &pe)) {
					continue
				}
				compileErrs.add(pt, e)
			}
		}
	}
	all := append(splitErrors(errs.err()), splitErrors(compileErrs.err())...)
	slices.SortStableFunc(all, func(a, b error) int { return errLine(path, a) - errLine(path, b) })
	return errors.Join(all...)
}

// compileChecked compiles pt for what it finds. A point that failed validation may
// hold values compile assumes away (a negative count, an incast without receivers); a
// panic on one is not a problem of its own (validation named it) and is dropped.
func (x *Experiment) compileChecked(pt *Point, opts CompileOptions) (err error) {
	if pt.badLines != nil {
		defer func() {
			if recover() != nil {
				err = nil
			}
		}()
	}
	_, err = x.compile(pt, opts)
	return err
}

// parse decodes and validates every sweep point. Problems with the file as a whole
// (its sweep, its placeholders) come back as err; those of single points are gathered
// in errs, and x holds the points that had none.
func parse(path string, src []byte) (x *Experiment, errs *sweepErrors, err error) {
	// First pass: only the sweep and vars, which say how to substitute the rest.
	var head struct {
		Sweep Sweep         `yaml:"sweep"`
		Vars  yaml.MapSlice `yaml:"vars"`
	}
	if err := yaml.Unmarshal(src, &head); err != nil {
		return nil, nil, posError(path, src, err)
	}
	seen := map[string]bool{}
	for _, v := range head.Sweep {
		if seen[v.Name] {
			return nil, nil, fmt.Errorf("%s:%d: sweep.%s: variable swept twice", path, v.Line, v.Name)
		}
		seen[v.Name] = true
		if len(v.Values) == 0 {
			return nil, nil, fmt.Errorf("%s:%d: sweep.%s: want at least one value", path, v.Line, v.Name)
		}
		if !identRe.MatchString(v.Name) {
			return nil, nil, fmt.Errorf("%s:%d: sweep.%s: variable names are letters, digits and _", path, v.Line, v.Name)
		}
		for _, val := range v.Values {
			switch val.(type) {
			case string, int, int64, uint64, float64, bool:
			default:
				return nil, nil, fmt.Errorf("%s:%d: sweep.%s: values must be scalars, got %T", path, v.Line, v.Name, val)
			}
		}
	}
	x = &Experiment{Path: path, Sweep: head.Sweep}
	points := expand(head.Sweep)
	errs = newSweepErrors(len(points))
	for i, vars := range points {
		pt := &Point{Index: i, Vars: vars, Label: label(vars)}
		if len(head.Sweep) > 0 {
			pt.sweepLine = head.Sweep[0].Line
		}
		env := map[string]any{}
		for _, kv := range head.Vars {
			env[fmt.Sprint(kv.Key)] = kv.Value
		}
		for _, v := range vars {
			env[v.Name] = v.Value
		}
		if err := derive(env, head.Vars); err != nil {
			errs.add(pt, fmt.Errorf("%s: vars: %w", path, err))
			continue
		}
		text, err := substitute(src, env)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%w", path, err)
		}
		f, err := decodeFile(path, text)
		if err != nil {
			errs.add(pt, err)
			if f != nil {
				pt.File = f
				pt.badLines = map[int]bool{}
				for _, e := range splitErrors(err) {
					pt.badLines[errLine(path, e)] = true
				}
				x.invalid = append(x.invalid, pt)
			}
			continue
		}
		pt.File = f
		x.Points = append(x.Points, pt)
	}
	return x, errs, nil
}

// Catalogue is what expectations may refer to across every point: groups, flow names,
// algorithms and sweep values (ports, when given, e.g. from a compiled plan).
func (x *Experiment) Catalogue(ports []string) *expect.Catalogue {
	c := &expect.Catalogue{Vars: map[string][]string{}, Ports: ports}
	seen := map[string]bool{}
	add := func(list *[]string, kind, v string) {
		if v != "" && !seen[kind+v] {
			seen[kind+v] = true
			*list = append(*list, v)
		}
	}
	for _, pt := range x.Points {
		f := pt.File
		for _, fl := range f.Flows {
			g := fl.Group
			if g == "" {
				g = fl.Name
			}
			add(&c.Groups, "g", g)
			for _, n := range fl.names() {
				add(&c.Flows, "f", n)
			}
			add(&c.CCs, "c", f.ccName(fl.CC))
		}
		for _, w := range f.Workloads {
			add(&c.Groups, "g", w.group())
			add(&c.CCs, "c", f.ccName(w.CC))
		}
	}
	for _, v := range x.Sweep {
		for _, val := range v.Values {
			c.Vars[v.Name] = append(c.Vars[v.Name], fmt.Sprint(val))
		}
	}
	return c
}

// resolveExpectations checks every expectation's names against the catalogue.
func (x *Experiment) resolveExpectations(ports []string) error {
	c := x.Catalogue(ports)
	var errs errList
	for _, e := range x.Points[0].File.Expectations {
		ex, err := expect.Parse(e.Spec())
		if err == nil {
			err = ex.Resolve(c)
		}
		if err != nil {
			errs.add(x.Path, e.line, "%v", err)
		}
	}
	return errs.err()
}

// decodeFile decodes and validates one point's text. It reports every problem at once:
// each entry the strict decoder rejects (an unknown field, a value of the wrong type or
// unit), and then what validate finds in the rest of the file, except on lines that
// already have a decode error (a dropped duration is not also reported as missing).
// The File comes back with the errors when everything else decoded, for Check.
func decodeFile(path string, text []byte) (*File, error) {
	doc, err := parser.ParseBytes(text, 0)
	if err != nil {
		return nil, posError(path, text, err)
	}
	var body ast.Node
	if len(doc.Docs) > 0 {
		body = doc.Docs[0].Body
	}
	f := new(File)
	if body == nil {
		return f, f.validate(path, body)
	}
	decodeErrs, complete := yamlstrict.DecodeAll(body, func(n ast.Node) error {
		*f = File{}
		return yaml.NodeToValue(n, f, strict...)
	})
	var out []error
	bad := map[int]bool{}
	for _, e := range decodeErrs {
		e = posError(path, text, e)
		bad[errLine(path, e)] = true
		out = append(out, e)
	}
	if complete {
		for _, e := range splitErrors(f.validate(path, body)) {
			if !bad[errLine(path, e)] {
				out = append(out, e)
			}
		}
	}
	if !complete {
		return nil, errors.Join(out...)
	}
	return f, errors.Join(out...)
}

// errLine is the line of an error formatted "path:line:…", 0 if it has none.
func errLine(path string, err error) int {
	rest, ok := strings.CutPrefix(err.Error(), path+":")
	if !ok {
		return 0
	}
	n, _, _ := strings.Cut(rest, ":")
	line, _ := strconv.Atoi(n)
	return line
}

// splitErrors undoes errors.Join (nil gives none).
func splitErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, splitErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// sweepErrors gathers the errors of every point of a sweep, each message once: one
// that every point has is reported as it is, one only some points have names them.
type sweepErrors struct {
	points    int
	msgs      []string
	at        map[string][]string
	sweepLine int
}

func newSweepErrors(points int) *sweepErrors {
	return &sweepErrors{points: points, at: map[string][]string{}}
}

// add records the errors err joins, found at pt.
func (s *sweepErrors) add(pt *Point, err error) {
	s.sweepLine = pt.sweepLine
	for _, e := range splitErrors(err) {
		m := e.Error()
		if _, seen := s.at[m]; !seen {
			s.msgs = append(s.msgs, m)
		}
		if !slices.Contains(s.at[m], pt.Label) {
			s.at[m] = append(s.at[m], pt.Label)
		}
	}
}

// err joins what was recorded, in the order found (nil when nothing was).
func (s *sweepErrors) err() error {
	var out []error
	for _, m := range s.msgs {
		labels := s.at[m]
		switch {
		case len(labels) == s.points || labels[0] == "":
			out = append(out, errors.New(m))
		case len(labels) == 1:
			out = append(out, fmt.Errorf("%s\n(at sweep point %s; the sweep's values are on line %d)", m, labels[0], s.sweepLine))
		default:
			out = append(out, fmt.Errorf("%s\n(at sweep points %s; the sweep's values are on line %d)", m, strings.Join(labels, " "), s.sweepLine))
		}
	}
	return errors.Join(out...)
}

func pointErr(pt *Point, err error) error {
	if pt.Label == "" {
		return err
	}
	return fmt.Errorf("%w\n(at sweep point %s; the sweep's values are on line %d)", err, pt.Label, pt.sweepLine)
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expand returns the cartesian product of the sweep, first variable slowest.
func expand(s Sweep) [][]Var {
	out := [][]Var{nil}
	for _, v := range s {
		var next [][]Var
		for _, prefix := range out {
			for _, val := range v.Values {
				p := append(append([]Var(nil), prefix...), Var{Name: v.Name, Value: val})
				next = append(next, p)
			}
		}
		out = next
	}
	return out
}

func label(vars []Var) string {
	parts := make([]string, len(vars))
	for i, v := range vars {
		parts[i] = fmt.Sprintf("%s=%v", v.Name, v.Value)
	}
	return strings.Join(parts, ",")
}

var (
	placeholderRe = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	quotedRe      = regexp.MustCompile(`"\$\{([A-Za-z_][A-Za-z0-9_]*)\}"|'\$\{([A-Za-z_][A-Za-z0-9_]*)\}'`)
)

// substitute replaces ${name} placeholders line by line, so line numbers survive. A
// placeholder that is a whole quoted scalar becomes the value in YAML (keeping its
// type); one inside a longer string becomes the value's text.
func substitute(src []byte, env map[string]any) ([]byte, error) {
	lines := strings.Split(string(src), "\n")
	inSweep := false
	for i, ln := range lines {
		// the sweep section itself is not substituted
		if len(ln) > 0 && ln[0] != ' ' && ln[0] != '\t' && ln[0] != '#' {
			inSweep = strings.HasPrefix(ln, "sweep:")
		}
		if inSweep || !strings.Contains(ln, "${") {
			continue
		}
		var missing string
		ln = quotedRe.ReplaceAllStringFunc(ln, func(m string) string {
			name := m[3 : len(m)-2]
			v, ok := env[name]
			if !ok {
				missing = name
				return m
			}
			b, _ := json.Marshal(v)
			return string(b)
		})
		ln = placeholderRe.ReplaceAllStringFunc(ln, func(m string) string {
			name := m[2 : len(m)-1]
			v, ok := env[name]
			if !ok {
				missing = name
				return m
			}
			return fmt.Sprint(v)
		})
		if missing != "" {
			known := make([]string, 0, len(env))
			for k := range env {
				known = append(known, k)
			}
			sort.Strings(known)
			return nil, fmt.Errorf("%d: unknown variable ${%s}; defined in vars or sweep: %s", i+1, missing, strings.Join(known, ", "))
		}
		lines[i] = ln
	}
	return []byte(strings.Join(lines, "\n")), nil
}

var (
	yamlPosRe   = regexp.MustCompile(`^\[(\d+):(\d+)\] ([^\n]*)`)
	quotedValRe = regexp.MustCompile(`"([^"]+)"`)
)

// posError turns a go-yaml error into "path:line:col: message" followed by the source
// excerpt. Errors from a value's own parser (units) carry no position; the line of the
// offending value is then found in the source.
func posError(path string, src []byte, err error) error {
	msg := err.Error()
	if m := yamlPosRe.FindStringSubmatch(msg); m != nil {
		excerpt := strings.TrimPrefix(yaml.FormatError(err, false, true), m[0])
		return fmt.Errorf("%s:%s:%s: %s%s", path, m[1], m[2], m[3], strings.TrimRight(excerpt, "\n"))
	}
	if m := quotedValRe.FindStringSubmatch(msg); m != nil {
		tok := regexp.MustCompile(`(?:^|[\s{,:\[])["']?(` + regexp.QuoteMeta(m[1]) + `)["']?(?:$|[\s},\]#])`)
		for i, ln := range strings.Split(string(src), "\n") {
			if loc := tok.FindStringSubmatchIndex(ln); loc != nil {
				idx := loc[2]
				key := ""
				if k := strings.LastIndex(ln[:idx], ":"); k >= 0 {
					f := strings.Fields(strings.Trim(ln[:k], " -{,"))
					if len(f) > 0 {
						key = strings.Trim(f[len(f)-1], "{,") + ": "
					}
				}
				return fmt.Errorf("%s:%d: %s%s", path, i+1, key, msg)
			}
		}
	}
	return fmt.Errorf("%s: %w", path, err)
}

// errList gathers validation errors, each already prefixed with path:line.
type errList []error

func (l *errList) add(path string, line int, format string, args ...any) {
	*l = append(*l, fmt.Errorf("%s:%s: %s", path, strconv.Itoa(line), fmt.Sprintf(format, args...)))
}

func (l errList) err() error { return errors.Join(l...) }

// derive resolves variables defined per value of another variable:
//
//	vars:
//	  int_mode: {by: cc, hpcc: hpcc, poseidon: mpd, default: "off"}
//
// takes the entry named by cc's value at this point, else default.
func derive(env map[string]any, vars yaml.MapSlice) error {
	for _, kv := range vars {
		name := fmt.Sprint(kv.Key)
		m, ok := kv.Value.(map[string]any)
		if !ok {
			continue
		}
		by, ok := m["by"].(string)
		if !ok {
			return fmt.Errorf("%s: a mapping needs by: VARIABLE and one entry per value", name)
		}
		key, ok := env[by]
		if !ok {
			return fmt.Errorf("%s: by: %q is not a variable", name, by)
		}
		v, ok := m[fmt.Sprint(key)]
		if !ok {
			if v, ok = m["default"]; !ok {
				return fmt.Errorf("%s: no entry for %s=%v and no default", name, by, key)
			}
		}
		env[name] = v
	}
	return nil
}

// SetExpectations replaces the file's expectations at every sweep point with specs and
// resolves them against the experiment's catalogue, as Load does for the file's own.
// reef lab check grades a student's experiment this way: on the lab's checks, whatever
// the student's copy of the file says.
func (x *Experiment) SetExpectations(specs []expect.Spec) error {
	list := make([]Expectation, len(specs))
	for i, s := range specs {
		list[i] = Expectation{Name: s.Name, Check: s.Check, When: s.When, Claim: s.Claim}
	}
	for _, pt := range x.Points {
		pt.File.Expectations = list
	}
	return x.resolveExpectations(nil)
}
