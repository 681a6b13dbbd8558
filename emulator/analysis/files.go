package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"reef/emulator/expect"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/internal/jsonfile"
)

// Files in a run directory.
const (
	SummaryFile = "summary.json"
	ResultsFile = results.RunFile // the raw results.Run, its samples aside (results.WriteDir)
	InputFile   = "input.json"    // plan, scenario, expectations: what `reef report` re-renders from
	HTMLFile    = "report.html"
	SweepFile   = "sweep.json"
	FlowsCSV    = results.FlowsCSV  // per-flow time series
	QueuesCSV   = results.QueuesCSV // per-port time series
)

// inputFile is input.json.
type inputFile struct {
	Experiment   string             `json:"experiment"`
	Vars         map[string]string  `json:"vars,omitempty"`
	Paper        *Paper             `json:"paper,omitempty"`
	Plan         *plan.Plan         `json:"plan"`
	Scenario     *scenario.Scenario `json:"scenario"`
	Expectations []expect.Spec      `json:"expectations"`
}

// writeJSON writes v to path as indented JSON, for people to read.
func writeJSON(path string, v any) error {
	return writeJSONAs(path, v, true)
}

// writeJSONAs writes v to path as JSON, indented or compact. input.json is compact: it
// is for reef report to read back, and a large fabric's routes would make it several
// times larger indented (a k = 16 fat tree's: 85 MB against 21 MB).
func writeJSONAs(path string, v any, indent bool) error {
	if err := jsonfile.Write(path, v, indent); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// WriteRunData writes a run's data to dir: summary.json, the raw results (results.json,
// and the time series as flows.csv and queues.csv: results.WriteDir) and input.json,
// so that `reef report` can recompute the summary and draw it later (emulator/render).
// run may be nil when the summary already holds it (it always does when it came from
// Summarize).
func WriteRunData(dir string, s *Summary, run *results.Run) error {
	if s == nil || s.in == nil {
		return errors.New("report: WriteRun needs a summary made by Summarize")
	}
	if run == nil {
		run = s.in.Run
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	specs := make([]expect.Spec, len(s.in.Expectations))
	for i, x := range s.in.Expectations {
		specs[i] = x.Spec
	}
	in := inputFile{s.in.Experiment, s.in.Vars, s.in.Paper, s.in.Plan, s.in.Scenario, specs}
	if err := writeJSONAs(filepath.Join(dir, InputFile), in, false); err != nil {
		return err
	}
	if err := results.WriteDir(dir, run); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return writeJSON(filepath.Join(dir, SummaryFile), s)
}

// LoadRun reads a run directory back into an Input, with the expectations parsed again:
// from input.json and results.json as WriteRun leaves them, or, in a directory written
// by other means, from plan.json, scenario.json and results.json, taking the experiment,
// the sweep variables and the checks from its summary.json.
func LoadRun(dir string) (*Input, error) {
	var in inputFile
	if _, err := os.Stat(filepath.Join(dir, InputFile)); err == nil {
		if err := readJSON(filepath.Join(dir, InputFile), &in); err != nil {
			return nil, err
		}
	} else {
		in.Plan, in.Scenario = &plan.Plan{}, &scenario.Scenario{}
		if err := readJSON(filepath.Join(dir, "plan.json"), in.Plan); err != nil {
			return nil, err
		}
		if err := readJSON(filepath.Join(dir, "scenario.json"), in.Scenario); err != nil {
			return nil, err
		}
		var old Summary
		if err := readJSON(filepath.Join(dir, SummaryFile), &old); err == nil {
			in.Experiment, in.Vars, in.Paper, in.Expectations = old.Experiment, old.Vars, old.Paper, old.Checks
			if old.Checks == nil { // an older summary: keep the checks it evaluated
				for _, r := range old.Expectations {
					in.Expectations = append(in.Expectations, expect.Spec{Name: r.Name, Check: r.Check, Claim: r.Claim})
				}
			}
		} else {
			in.Experiment, in.Vars = ParseRunName(in.Scenario.Name)
		}
	}
	run, err := results.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if in.Plan == nil || in.Scenario == nil {
		return nil, fmt.Errorf("report: %s: missing plan or scenario", filepath.Join(dir, InputFile))
	}
	exps, err := expect.ParseAll(in.Expectations)
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", dir, err)
	}
	return &Input{Experiment: in.Experiment, Vars: in.Vars, Paper: in.Paper, Plan: in.Plan, Scenario: in.Scenario, Run: run, Expectations: exps}, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	return nil
}

// ReadSummary reads summary.json from a run directory (or the file itself).
func ReadSummary(path string) (*Summary, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, SummaryFile)
	}
	s := &Summary{}
	if err := readJSON(path, s); err != nil {
		return nil, err
	}
	return s, nil
}

// RunEntry is one run of a sweep: its directory and its summary (from Summarize).
type RunEntry struct {
	Dir     string
	Summary *Summary
}

// Sweep is sweep.json: the runs of a sweep and every expectation over them.
type Sweep struct {
	Experiment string     `json:"experiment"`
	Paper      *Paper     `json:"paper,omitempty"`
	TimeScale  float64    `json:"time_scale"`
	Runs       []SweepRun `json:"runs"`
	// Expectations are each per-run check on every run it selects and each check that
	// compares runs once per group of runs (see expect.Evaluate).
	Expectations []expect.Result `json:"expectations"`
	Pass         bool            `json:"pass"`
	// NotEvaluated names the experiment's expectations these runs did not evaluate: a
	// sweep narrowed by reef run --only leaves out the checks on the points not run and
	// those comparing with them.
	NotEvaluated []string `json:"not_evaluated,omitempty"`
}

// SweepRun is one run's line in sweep.json.
type SweepRun struct {
	// Dir is the run directory relative to the sweep directory.
	Dir           string            `json:"dir"`
	Run           string            `json:"run"`
	Vars          map[string]string `json:"vars"`
	Backend       string            `json:"backend"`
	Pass          bool              `json:"pass"`
	Fidelity      string            `json:"fidelity"`
	LatenessP99US float64           `json:"lateness_p99_us"`
}

// WriteSweepData evaluates a sweep's checks over its runs and writes sweep.json in dir.
// Each run should already be written in its Dir. Checks that compare runs are evaluated
// here; the returned Sweep says whether every check held.
func WriteSweepData(dir string, runs []RunEntry) (*Sweep, error) {
	if len(runs) == 0 {
		return nil, errors.New("report: a sweep needs at least one run")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	w := &Sweep{Pass: true}
	var envs []*expect.Env
	for i, r := range runs {
		s := r.Summary
		if s == nil || s.env == nil || s.in == nil {
			return nil, fmt.Errorf("report: sweep run %d (%s): want a summary made by Summarize", i, r.Dir)
		}
		if w.Experiment == "" {
			w.Experiment, w.TimeScale, w.Paper = s.Experiment, s.TimeScale, s.Paper
		}
		rel := r.Dir
		if ad, err := filepath.Abs(dir); err == nil {
			if ar, err := filepath.Abs(r.Dir); err == nil {
				if x, err := filepath.Rel(ad, ar); err == nil {
					rel = x
				}
			}
		}
		w.Runs = append(w.Runs, SweepRun{Dir: filepath.ToSlash(rel), Run: s.Run, Vars: s.Vars, Backend: s.Backend,
			Pass: s.Pass, Fidelity: s.Fidelity.Verdict, LatenessP99US: s.Fidelity.LatenessP99US})
		envs = append(envs, s.env)
	}
	w.Expectations = expect.Evaluate(runs[0].Summary.in.Expectations, envs)
	for _, r := range w.Expectations {
		w.Pass = w.Pass && r.Pass
	}
	for _, x := range runs[0].Summary.in.Expectations {
		if !slices.ContainsFunc(w.Expectations, func(r expect.Result) bool { return r.Name == x.Name }) {
			w.NotEvaluated = append(w.NotEvaluated, x.Name)
		}
	}
	if err := writeJSON(filepath.Join(dir, SweepFile), w); err != nil {
		return nil, err
	}
	return w, nil
}

// ReadSweep reads sweep.json from a sweep directory.
func ReadSweep(dir string) (*Sweep, error) {
	var w Sweep
	if err := readJSON(filepath.Join(dir, SweepFile), &w); err != nil {
		return nil, err
	}
	return &w, nil
}
