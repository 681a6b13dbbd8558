package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"reef/cc"
	"reef/emulator"
	"reef/emulator/analysis"
	"reef/emulator/expect"
	"reef/emulator/runner"
	"reef/internal/jsonfile"
)

// Statuses of a graded check.
const (
	StatusPass = "pass"
	StatusFail = "fail"
	// StatusDegraded is a check that failed on a run whose fidelity verdict was
	// degraded: the emulator could not vouch for the numbers, so the failure is not
	// held against the student (run the check again on a quieter machine).
	StatusDegraded = "degraded"
)

// GradeFile and GradeHTML are the grade's files in CheckOptions.Out.
const (
	GradeFile = "grade.json"
	GradeHTML = "grade.html"
)

// CheckOptions adjust Check.
type CheckOptions struct {
	// Answers is the student's directory: the files they changed (laid over the lab's
	// starting files) and answers.yaml. Empty grades the lab's starting files as they are.
	Answers string
	// Backend is sim (the default) or netns.
	Backend string
	// Student names the student in the grade and in the lab a real backend brings up.
	Student string
	// Out is where the grade, the copy graded and the runs go (required).
	Out string
	// Jobs is how many sweep points run at once on the sim (0: one at a time).
	Jobs int
	// Shards is how many switch daemons a real backend's lab gets (0: 1, so that
	// several students' labs share a machine).
	Shards int
	// RetryDegraded is how many more times a degraded run is run again (default: 1 on
	// a real backend).
	RetryDegraded *int
	// Now gives the grade's time (time.Now when nil).
	Now func() time.Time
}

// Grade is grade.json: every check's verdict on a student's answers.
type Grade struct {
	Lab     string `json:"lab"`
	Title   string `json:"title"`
	Student string `json:"student,omitempty"`
	Backend string `json:"backend"`
	Answers string `json:"answers,omitempty"`
	// Graded are the files taken from the answers (the lab's files a student hands in;
	// any other is the lab's own).
	Graded []string `json:"graded,omitempty"`
	Time   string   `json:"time"`
	// Pass is true when no check failed (a degraded one does not count against it).
	Pass bool `json:"pass"`
	// Passed, Failed and Degraded count the checks by status.
	Passed   int        `json:"passed"`
	Failed   int        `json:"failed"`
	Degraded int        `json:"degraded"`
	Checks   []Result   `json:"checks"`
	Runs     []RunGrade `json:"runs,omitempty"`
}

// Result is one graded check or question.
type Result struct {
	Name string `json:"name"`
	// Kind is "run" (a check over an experiment's runs) or "question" (answers.yaml).
	Kind string `json:"kind"`
	// Experiment is the file a run check was evaluated on.
	Experiment string `json:"experiment,omitempty"`
	// Check is the expectation, or the question's text.
	Check string            `json:"check"`
	Vars  map[string]string `json:"vars,omitempty"`
	// Value and Bound are for people: the measured (or answered) value and the bound.
	Value  string `json:"value"`
	Bound  string `json:"bound"`
	Status string `json:"status"`
	// Hint says what to look at; set when the check did not pass.
	Hint string `json:"hint,omitempty"`
	// Detail says why a check could not be evaluated, or why it is degraded.
	Detail string `json:"detail,omitempty"`
	// Report is the run's report.html, relative to the grade's directory.
	Report string `json:"report,omitempty"`
}

// RunGrade is one run the checker made, with its fidelity verdict.
type RunGrade struct {
	Experiment string            `json:"experiment"`
	Vars       map[string]string `json:"vars,omitempty"`
	Fidelity   string            `json:"fidelity"`
	Why        string            `json:"why,omitempty"`
	Report     string            `json:"report"`
}

// Check grades a student's answers to l: it copies the lab's starting files into
// Out/work, lays over them the files of Answers the lab says a student hands in (Files
// and the Code module), runs every experiment on the backend with the
// lab's checks, checks the answers to the questions, and writes Out/grade.json and
// Out/grade.html. An error means the grading itself could not go on (a run that
// could not start is a failed check, not an error).
func Check(ctx context.Context, l *Lab, o CheckOptions) (*Grade, error) {
	if o.Out == "" {
		return nil, errors.New("lab: check needs an output directory")
	}
	if o.Backend == "" {
		o.Backend = "sim"
	}
	if _, err := emulator.Lookup(o.Backend); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if o.Student != "" {
		if err := CheckStudent(o.Student); err != nil {
			return nil, err
		}
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	g := &Grade{Lab: l.Name, Title: l.Title, Student: o.Student, Backend: o.Backend, Answers: o.Answers,
		Time: now().UTC().Format(time.RFC3339)}
	work := filepath.Join(o.Out, "work")
	if err := os.RemoveAll(work); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if err := CopyStart(l, work); err != nil {
		return nil, err
	}
	if o.Answers != "" {
		took, err := overlay(l, o.Answers, work)
		if err != nil {
			return nil, err
		}
		g.Graded = took
	}
	for _, x := range l.Experiments {
		rs, runs := checkExperiment(ctx, l, x, work, o)
		g.Checks = append(g.Checks, rs...)
		g.Runs = append(g.Runs, runs...)
		if ctx.Err() != nil {
			return g, ctx.Err()
		}
	}
	g.Checks = append(g.Checks, checkQuestions(l, filepath.Join(work, AnswersFile))...)
	g.Pass = true
	for _, r := range g.Checks {
		switch r.Status {
		case StatusPass:
			g.Passed++
		case StatusDegraded:
			g.Degraded++
		default:
			g.Failed++
			g.Pass = false
		}
	}
	if err := g.Write(o.Out); err != nil {
		return g, err
	}
	return g, nil
}

// checkExperiment runs one experiment of the lab from the work copy and grades its
// checks.
func checkExperiment(ctx context.Context, l *Lab, x Experiment, work string, o CheckOptions) ([]Result, []RunGrade) {
	path := filepath.Join(work, x.File)
	base := strings.TrimSuffix(filepath.Base(x.File), filepath.Ext(x.File))
	failAll := func(detail, hint string) []Result {
		var out []Result
		for _, c := range x.Checks {
			out = append(out, Result{Name: c.Name, Kind: "run", Experiment: x.File, Check: c.Check, Value: "–", Bound: "–",
				Status: StatusFail, Hint: hint, Detail: detail})
		}
		return out
	}
	if missing := missingAlgorithms(l, path); len(missing) > 0 {
		hint := fmt.Sprintf("%s uses %s, which this reef does not have.", x.File, strings.Join(missing, ", "))
		if l.Code != nil && slices.Contains(missing, l.Code.Algorithm) {
			hint += fmt.Sprintf(" Build a reef with your algorithm and check with it: reef build --with ./%s --src REEF_CHECKOUT -o bin/reef-mine; bin/reef-mine lab check %s --answers .",
				l.Code.Dir, l.Name)
		} else {
			hint += " See reef algorithms for the names this reef knows."
		}
		return failAll("algorithm missing: "+strings.Join(missing, ", "), hint), nil
	}
	specs := make([]expect.Spec, len(x.Checks))
	hints := map[string]LabCheck{}
	for i, c := range x.Checks {
		specs[i] = c.spec()
		hints[c.Name] = c
	}
	shards := o.Shards
	if shards == 0 {
		shards = 1
	}
	retry := 0
	if o.Backend != "sim" {
		retry = 1
	}
	if o.RetryDegraded != nil {
		retry = *o.RetryDegraded
	}
	ro := runner.Options{Backend: o.Backend, OutDir: filepath.Join(o.Out, "runs", base), Expectations: specs,
		Jobs: o.Jobs, Shards: shards, RetryDegraded: retry}
	if o.Backend != "sim" {
		ro.Lab = LabName(l, o.Student, true)
	}
	out, err := runner.Run(ctx, path, ro)
	if out == nil || (err != nil && len(out.Summaries) == 0) {
		return failAll(fmt.Sprint(err), fmt.Sprintf("%s did not run: reef validate %s shows what is wrong with it.", x.File, x.File)), nil
	}
	rel := func(p string) string {
		r, err := filepath.Rel(o.Out, p)
		if err != nil {
			return p
		}
		return filepath.ToSlash(r)
	}
	var runs []RunGrade
	for _, s := range out.Summaries {
		dir := filepath.Join(out.Dir, runDir(s))
		runs = append(runs, RunGrade{Experiment: x.File, Vars: s.Vars, Fidelity: s.Fidelity.Verdict,
			Why: analysis.DegradedWhy(s.Fidelity), Report: rel(filepath.Join(dir, analysis.HTMLFile))})
	}
	var rs []Result
	for _, r := range out.Results {
		c := hints[r.Name]
		res := Result{Name: r.Name, Kind: "run", Experiment: x.File, Check: r.Check, Vars: r.Vars,
			Value: r.ValueText, Bound: r.BoundText, Status: StatusPass, Detail: r.Error}
		if len(out.Summaries) == 1 {
			res.Report = runs[0].Report
		} else {
			res.Report = rel(filepath.Join(out.Dir, analysis.HTMLFile))
		}
		if !r.Pass {
			res.Status, res.Hint = StatusFail, c.Hint
			if why := degradedRuns(out.Summaries, r.Vars); why != "" {
				res.Status = StatusDegraded
				res.Detail = "degraded, not graded against you: the emulator could not keep this run's schedule (" + why + "); run the check again on a quieter machine"
			}
		}
		rs = append(rs, res)
	}
	for _, c := range x.Checks {
		if !slices.ContainsFunc(rs, func(r Result) bool { return r.Name == c.Name }) {
			d := "not evaluated: no run of your file is one this check applies to"
			if err != nil {
				d = "not evaluated: " + err.Error()
			}
			rs = append(rs, Result{Name: c.Name, Kind: "run", Experiment: x.File, Check: c.Check, Value: "–", Bound: "–",
				Status: StatusFail, Hint: c.Hint, Detail: d})
		}
	}
	return rs, runs
}

// runDir is a run's sub-directory in a runner's results (see runner.runDirName).
func runDir(s *analysis.Summary) string {
	_, label, ok := strings.Cut(s.Run, "/")
	if !ok || label == "" {
		return "run"
	}
	return strings.NewReplacer("/", "_", " ", "_", "\\", "_").Replace(label)
}

// degradedRuns says why the runs a result concerns (those whose variables include
// vars) were degraded, or "" when none was.
func degradedRuns(sums []*analysis.Summary, vars map[string]string) string {
	var why []string
	for _, s := range sums {
		match := true
		for k, v := range vars {
			if s.Vars[k] != v {
				match = false
			}
		}
		if match && s.Fidelity.Verdict == "degraded" {
			why = append(why, analysis.DegradedWhy(s.Fidelity))
		}
	}
	return strings.Join(why, "; ")
}

// missingAlgorithms lists the lab's own algorithm (Code) when this reef has not
// registered it and the experiment at path names it: the student checks with a reef
// built with it.
func missingAlgorithms(l *Lab, path string) []string {
	if l.Code == nil {
		return nil
	}
	if _, err := cc.Lookup(l.Code.Algorithm); err == nil {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte(l.Code.Algorithm)) {
		return nil
	}
	return []string{l.Code.Algorithm}
}

// checkQuestions grades the answers in path.
func checkQuestions(l *Lab, path string) []Result {
	if len(l.Questions) == 0 {
		return nil
	}
	answers, err := ReadAnswers(path)
	var out []Result
	for _, q := range l.Questions {
		r := Result{Name: q.Name, Kind: "question", Check: q.Text, Value: "–", Bound: bounds(q), Status: StatusFail, Hint: q.Hint}
		if r.Check == "" {
			r.Check = q.Answer
		}
		a, ok := answers[q.Answer]
		switch {
		case err != nil:
			r.Detail = err.Error()
		case !ok || strings.TrimSpace(a) == "":
			r.Detail = fmt.Sprintf("no answer: write %s: VALUE in %s", q.Answer, AnswersFile)
		default:
			r.Value = a
			v, perr := ParseValue(q.Unit, a)
			if perr != nil {
				r.Detail = fmt.Sprintf("%s: %v", q.Answer, perr)
				break
			}
			in := true
			if q.Min != "" {
				lo, _ := ParseValue(q.Unit, q.Min)
				in = in && v >= lo
			}
			if q.Max != "" {
				hi, _ := ParseValue(q.Unit, q.Max)
				in = in && v <= hi
			}
			if in {
				r.Status, r.Hint = StatusPass, ""
			}
		}
		out = append(out, r)
	}
	return out
}

func bounds(q Question) string {
	switch {
	case q.Min != "" && q.Max != "":
		return q.Min + " – " + q.Max
	case q.Min != "":
		return "≥ " + q.Min
	}
	return "≤ " + q.Max
}

// ReadAnswers reads answers.yaml: a flat map of keys to values (numbers, or strings
// with units). A missing file is no answers.
func ReadAnswers(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	return ParseAnswers(path, b)
}

// ParseAnswers reads answers.yaml's text (path is for errors).
func ParseAnswers(path string, b []byte) (map[string]string, error) {
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("lab: %s: %w", path, err)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			out[k] = ""
		case map[string]any, []any:
			return nil, fmt.Errorf("lab: %s: %s: want a single value (a number, or a number with a unit)", path, k)
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out, nil
}

// Write writes grade.json and grade.html in dir.
func (g *Grade) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if err := jsonfile.Write(filepath.Join(dir, GradeFile), g, true); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	page, err := g.HTML()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, GradeHTML), page, 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

// ReadGrade reads grade.json from dir.
func ReadGrade(dir string) (*Grade, error) {
	b, err := os.ReadFile(filepath.Join(dir, GradeFile))
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	g := &Grade{}
	if err := json.Unmarshal(b, g); err != nil {
		return nil, fmt.Errorf("lab: %s: %w", filepath.Join(dir, GradeFile), err)
	}
	return g, nil
}

// Failed lists the checks that failed.
func (g *Grade) FailedChecks() []Result {
	var out []Result
	for _, r := range g.Checks {
		if r.Status == StatusFail {
			out = append(out, r)
		}
	}
	return out
}

// sortedVars is "k=v k=v".
func sortedVars(v map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(v)) {
		parts = append(parts, k+"="+v[k])
	}
	return strings.Join(parts, " ")
}
