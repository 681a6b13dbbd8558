// Package lab is reef's teaching labs: a lab is a directory labs/NAME/ with a handout
// (README.md), the topology and experiment files a student starts from, a reference
// solution (solution/) and a manifest, lab.yaml, that lists the checks a student's
// answers are graded on. It sits above the runner: Check copies the lab's starting
// files, lays the student's answers over them, runs each experiment with the runner on
// the sim or netns backend with the lab's checks (emulator/expect's language, each with
// a hint) in place of whatever the student's copy of the file says, checks the numbers
// the student wrote in answers.yaml, and writes a grade (grade.json and grade.html). It
// is what `reef lab` calls.
//
// # Usage
//
//	l, err := lab.Load("labs/queues-ecn")
//	g, err := lab.Check(ctx, l, lab.CheckOptions{Answers: "work/alice", Backend: "sim", Out: "work/alice/grade"})
//	// g.Pass: every check passed (a check that failed on a run whose fidelity was
//	// degraded is not held against the student: its status is "degraded")
//
// # Manifest (lab.yaml)
//
//	title: Queues, buffers and ECN marking on one bottleneck
//	summary: one line for reef lab list
//	topology: topology.yaml          # what reef lab start brings up
//	files: [experiment.yaml, answers.yaml]   # what the student edits and hands in
//	experiments:
//	  - file: experiment.yaml
//	    checks:
//	      - {name: short-queue, check: "queue_delay_p99(s1:p5) <= 150us", hint: "…"}
//	questions:                       # numbers in answers.yaml
//	  - {name: bdp, answer: bdp, unit: bytes, min: 6KB, max: 10KB, hint: "…"}
//	code: {dir: mycc, algorithm: my-dctcp}   # a Go package the student writes (optional)
//
// # Limitations
//
// The checks judge what the runs measure; they cannot see how a student reached it (a
// student who changes a link rate the lab meant to keep is not caught unless a check
// measures it). A student's own algorithm is graded only by a reef built with it (reef
// build --with); other reefs say so.
package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"reef/emulator/expect"
	"reef/units"
)

// ManifestFile is a lab's manifest, HandoutFile its handout, SolutionDir its reference
// answers and AnswersFile where a student writes the numbers questions ask for.
const (
	ManifestFile = "lab.yaml"
	HandoutFile  = "README.md"
	SolutionDir  = "solution"
	AnswersFile  = "answers.yaml"
)

// Lab is one lab directory.
type Lab struct {
	// Name is the directory's name ("queues-ecn"); Dir the directory.
	Name string `yaml:"-"`
	Dir  string `yaml:"-"`
	// Short is the lab's two-character code in the names of a student's lab on a real
	// backend ("qe": lab alice-qe, namespaces reef-alice-qe-h1), which must fit reef's
	// 12-character lab names.
	Short string `yaml:"short"`
	// Title and Summary describe the lab (reef lab list, the handout's header).
	Title   string `yaml:"title"`
	Summary string `yaml:"summary"`
	// Topology is the file reef lab start brings up (relative to Dir).
	Topology string `yaml:"topology"`
	// Files are what a student edits and hands in (relative to Dir); reef lab start
	// copies them, with everything else the lab's experiments need.
	Files []string `yaml:"files"`
	// Experiments are the experiment files graded, each with its checks.
	Experiments []Experiment `yaml:"experiments"`
	// Questions are the numbers a student writes in answers.yaml.
	Questions []Question `yaml:"questions"`
	// Code, when set, is a congestion-control algorithm the student writes.
	Code *Code `yaml:"code"`
}

// Experiment is one experiment file of the lab and the checks its runs are graded on.
type Experiment struct {
	// File is relative to the lab (and, when grading, to the student's answers).
	File   string     `yaml:"file"`
	Checks []LabCheck `yaml:"checks"`
}

// LabCheck is one graded expectation: emulator/expect's check (and when:) over the
// experiment's runs, with a hint for a student whose run fails it.
type LabCheck struct {
	Name  string `yaml:"name"`
	Check string `yaml:"check"`
	When  string `yaml:"when"`
	// Claim says what the check shows when it holds.
	Claim string `yaml:"claim"`
	// Hint tells a student whose run fails the check what to look at.
	Hint string `yaml:"hint"`
}

// Question is a number a student measures or computes and writes in answers.yaml
// under Answer; it passes when it lies in [Min, Max].
type Question struct {
	Name string `yaml:"name"`
	// Answer is the key in answers.yaml.
	Answer string `yaml:"answer"`
	// Text is the question as asked (shown in the grade).
	Text string `yaml:"text"`
	// Unit is time, rate, bytes or number: how Min, Max and the answer are read
	// ("250us", "800Mbps", "7.5KB", "0.4").
	Unit     string `yaml:"unit"`
	Min, Max string
	Hint     string `yaml:"hint"`
}

// Code is an algorithm the student writes as a Go module in Dir, registering Algorithm
// (reef build --with ./Dir builds a reef that has it).
type Code struct {
	Dir       string `yaml:"dir"`
	Algorithm string `yaml:"algorithm"`
}

// questionYAML carries min and max as written (numbers or strings with units).
type questionYAML struct {
	Name   string `yaml:"name"`
	Answer string `yaml:"answer"`
	Text   string `yaml:"text"`
	Unit   string `yaml:"unit"`
	Min    any    `yaml:"min"`
	Max    any    `yaml:"max"`
	Hint   string `yaml:"hint"`
}

// UnmarshalYAML reads min and max as numbers or strings.
func (q *Question) UnmarshalYAML(b []byte) error {
	var y questionYAML
	if err := yaml.UnmarshalWithOptions(b, &y, yaml.Strict()); err != nil {
		return err
	}
	*q = Question{Name: y.Name, Answer: y.Answer, Text: y.Text, Unit: y.Unit, Hint: y.Hint}
	if y.Min != nil {
		q.Min = fmt.Sprint(y.Min)
	}
	if y.Max != nil {
		q.Max = fmt.Sprint(y.Max)
	}
	return nil
}

var (
	nameRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	shortRE = regexp.MustCompile(`^[a-z0-9]{2}$`)
)

// Load reads and checks the lab in dir: its manifest, that every file it names exists,
// that every check parses, and that the questions' bounds read in their units.
func Load(dir string) (*Lab, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	l, err := Parse(path, b)
	if err != nil {
		return nil, err
	}
	l.Dir = dir
	l.Name = filepath.Base(filepath.Clean(dir))
	if !nameRE.MatchString(l.Name) {
		return nil, fmt.Errorf("lab: %s: a lab's directory name wants lower-case letters, digits and '-'", dir)
	}
	var errs []error
	need := append([]string{HandoutFile, l.Topology}, l.Files...)
	for _, x := range l.Experiments {
		need = append(need, x.File)
	}
	for _, f := range need {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			errs = append(errs, fmt.Errorf("lab: %s names %s, which is missing", path, f))
		}
	}
	if l.Code != nil {
		if _, err := os.Stat(filepath.Join(dir, l.Code.Dir)); err != nil {
			errs = append(errs, fmt.Errorf("lab: %s: code.dir %s is missing", path, l.Code.Dir))
		}
	}
	return l, errors.Join(errs...)
}

// Parse reads a manifest (path is for errors) and checks what it can without the
// lab's files: required fields, unique check names, checks in expect's language, and
// question bounds in their units.
func Parse(path string, src []byte) (*Lab, error) {
	l := &Lab{}
	if err := yaml.UnmarshalWithOptions(src, l, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("lab: %s: %w", path, err)
	}
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("lab: %s: "+format, append([]any{path}, a...)...))
	}
	if l.Title == "" {
		bad("title: missing")
	}
	if !shortRE.MatchString(l.Short) {
		bad("short: %q: want two lower-case letters or digits (the lab's code in lab names)", l.Short)
	}
	if l.Topology == "" {
		bad("topology: missing (the file reef lab start brings up)")
	}
	if len(l.Experiments) == 0 && len(l.Questions) == 0 {
		bad("no experiments and no questions: nothing to grade")
	}
	seen := map[string]bool{}
	name := func(n string) {
		switch {
		case n == "":
			bad("a check or question without a name")
		case seen[n]:
			bad("%s: name used twice", n)
		}
		seen[n] = true
	}
	for _, f := range append(append([]string(nil), l.Files...), l.files()...) {
		if filepath.IsAbs(f) || strings.HasPrefix(filepath.Clean(f), "..") {
			bad("%s: want a path inside the lab", f)
		}
	}
	for _, x := range l.Experiments {
		if x.File == "" {
			bad("an experiment without file:")
		}
		if len(x.Checks) == 0 {
			bad("%s: no checks", x.File)
		}
		for _, c := range x.Checks {
			name(c.Name)
			if c.Hint == "" {
				bad("check %s: hint: missing (say what a student whose run fails it should look at)", c.Name)
			}
			if _, err := expect.Parse(c.spec()); err != nil {
				bad("%v", err)
			}
		}
	}
	for _, q := range l.Questions {
		name(q.Name)
		if q.Answer == "" {
			bad("question %s: answer: missing (its key in answers.yaml)", q.Name)
		}
		if q.Hint == "" {
			bad("question %s: hint: missing", q.Name)
		}
		if q.Min == "" && q.Max == "" {
			bad("question %s: min or max: missing", q.Name)
		}
		for _, v := range []string{q.Min, q.Max} {
			if v == "" {
				continue
			}
			if _, err := ParseValue(q.Unit, v); err != nil {
				bad("question %s: %v", q.Name, err)
			}
		}
	}
	if l.Code != nil && (l.Code.Dir == "" || l.Code.Algorithm == "") {
		bad("code: wants dir and algorithm")
	}
	return l, errors.Join(errs...)
}

// files are the paths the manifest names besides Files.
func (l *Lab) files() []string {
	out := []string{l.Topology}
	for _, x := range l.Experiments {
		out = append(out, x.File)
	}
	return out
}

func (c LabCheck) spec() expect.Spec {
	return expect.Spec{Name: c.Name, Check: c.Check, When: c.When, Claim: c.Claim}
}

// ParseValue reads an answer or a bound in unit (time, rate, bytes or number; "" is
// number) to base units: nanoseconds, bit/s, bytes or the number.
func ParseValue(unit, s string) (float64, error) {
	s = strings.TrimSpace(s)
	switch unit {
	case "time":
		t, err := units.ParseTime(s)
		return float64(t), err
	case "rate":
		r, err := units.ParseRate(s)
		return float64(r), err
	case "bytes":
		b, err := units.ParseBytes(s)
		return float64(b), err
	case "", "number":
		v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil {
			return 0, fmt.Errorf("%q: want a number", s)
		}
		if strings.HasSuffix(s, "%") {
			v /= 100
		}
		return v, nil
	}
	return 0, fmt.Errorf("unit %q: want time, rate, bytes or number", unit)
}

// List loads every lab under root (one directory each), sorted by name.
func List(root string) ([]*Lab, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	var out []*Lab
	var errs []error
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, e.Name(), ManifestFile)); err != nil {
			continue
		}
		l, err := Load(filepath.Join(root, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

// Find loads the lab called name under root.
func Find(root, name string) (*Lab, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("lab %q: want lower-case letters, digits and '-'", name)
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err != nil {
		labs, _ := List(root)
		var names []string
		for _, l := range labs {
			names = append(names, l.Name)
		}
		return nil, fmt.Errorf("lab %q: not in %s (labs: %s)", name, root, strings.Join(names, ", "))
	}
	return Load(dir)
}

var studentRE = regexp.MustCompile(`^[a-z0-9]{1,7}$`)

// CheckStudent checks a student ID: 1 to 7 lower-case letters or digits, as it becomes
// part of the student's lab name (at most 12 characters with the lab's code), its
// namespaces and its directory.
func CheckStudent(id string) error {
	if !studentRE.MatchString(id) {
		return fmt.Errorf("student %q: want 1 to 7 lower-case letters or digits (it names the student's lab, at most 12 characters)", id)
	}
	return nil
}

// LabName is the name of a student's lab on a real backend: the student's ID and the
// lab's code ("alice-qe"; the code alone without a student). check names the lab the
// checker's runs bring up ("alice-qe-c"), apart from the one the student brought up
// with reef lab start, so that both may be up at once.
func LabName(l *Lab, student string, check bool) string {
	n := l.Short
	if student != "" {
		n = student + "-" + n
	}
	if check {
		n += "-c"
	}
	return n
}
