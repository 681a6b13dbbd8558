// Package runner executes an experiment file end to end: load and compile every sweep
// point (so a bad file fails before anything is created), run each point on a backend,
// and write the results directory: per run the raw results, the scenario and plan, and
// the report's summary; for the experiment the expectations' verdicts. It is what
// `reef run` calls.
//
// # Usage
//
//	out, err := runner.Run(ctx, "experiments/poseidon-multihop.yaml", runner.Options{Backend: "sim"})
//	// out.Dir holds the results; out.Pass says whether every expectation held
//
// # Limitations
//
// Runs of a sweep execute one after another.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"reef/emulator"
	"reef/emulator/expect"
	"reef/emulator/experiment"
	"reef/emulator/report"
	"reef/emulator/results"
	"reef/units"
)

// Options adjust a run.
type Options struct {
	// Backend is the backend's registered name ("netns" when empty).
	Backend string
	// OutDir is the results directory; empty means results/<name>-<UTC timestamp>.
	OutDir string
	// Seed, when non-zero, replaces the experiment's seed.
	Seed uint64
	// Capture lists NODE or NODE:PORT to capture (passed to the backend).
	Capture []string
	// Progress receives progress; nil for none.
	Progress Progress
	// Now gives the time for the default directory name (time.Now when nil).
	Now func() time.Time
}

// Progress is told what the runner is doing.
type Progress interface {
	// Start is called before run i (0-based) of n, labelled label.
	Start(i, n int, label string)
	// Update reports the emulated time reached in the current run.
	Update(reached, total units.Time)
	// Done is called after each run with its summary (nil on error) and error.
	Done(i int, s *report.Summary, err error)
}

// Outcome is what Run produced.
type Outcome struct {
	// Dir is the results directory.
	Dir string
	// Summaries are the runs' summaries, in sweep order (fewer when interrupted).
	Summaries []*report.Summary
	// Results are every expectation's verdict: per run, then across runs.
	Results []expect.Result
	// Pass is true when every expectation evaluated held.
	Pass bool
	// Interrupted is true when ctx was cancelled before every run finished.
	Interrupted bool
}

// Failed lists the expectations that did not hold.
func (o *Outcome) Failed() []expect.Result {
	var out []expect.Result
	for _, r := range o.Results {
		if !r.Pass {
			out = append(out, r)
		}
	}
	return out
}

// Run loads, compiles and executes the experiment at path.
func Run(ctx context.Context, path string, opts Options) (*Outcome, error) {
	x, err := experiment.Load(path)
	if err != nil {
		return nil, err
	}
	runs, err := x.CompileAll(experiment.CompileOptions{Seed: opts.Seed})
	if err != nil {
		return nil, err
	}
	name := opts.Backend
	if name == "" {
		name = "netns"
	}
	be, err := emulator.Lookup(name)
	if err != nil {
		return nil, err
	}
	dir := opts.OutDir
	if dir == "" {
		now := time.Now
		if opts.Now != nil {
			now = opts.Now
		}
		dir = filepath.Join("results", x.Name+"-"+now().UTC().Format("20060102T150405Z"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	out := &Outcome{Dir: dir, Pass: true}
	var envs []*expect.Env
	for i, r := range runs {
		sub := filepath.Join(dir, runDirName(r))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return out, fmt.Errorf("runner: %w", err)
		}
		if opts.Progress != nil {
			opts.Progress.Start(i, len(runs), r.Scenario.Name)
		}
		ro := emulator.RunOptions{OutDir: sub, Capture: opts.Capture}
		if opts.Progress != nil {
			ro.Progress = opts.Progress.Update
		}
		if err := writeJSON(filepath.Join(sub, "scenario.json"), r.Scenario); err != nil {
			return out, err
		}
		if err := writeJSON(filepath.Join(sub, "plan.json"), r.Plan); err != nil {
			return out, err
		}
		res, runErr := be.Run(ctx, r.Plan, r.Scenario, ro)
		interrupted := runErr != nil && ctx.Err() != nil
		if runErr != nil && !interrupted {
			if opts.Progress != nil {
				opts.Progress.Done(i, nil, runErr)
			}
			return out, fmt.Errorf("runner: %s: %w", r.Scenario.Name, runErr)
		}
		if res != nil {
			if err := writeJSON(filepath.Join(sub, "results.json"), res); err != nil {
				return out, err
			}
			s, err := summarize(r, res)
			if err != nil {
				return out, fmt.Errorf("runner: %s: %w", r.Scenario.Name, err)
			}
			if err := writeJSON(filepath.Join(sub, "summary.json"), s); err != nil {
				return out, err
			}
			out.Summaries = append(out.Summaries, s)
			out.Results = append(out.Results, s.Expectations...)
			if env := s.Env(); env != nil {
				envs = append(envs, env)
			}
			if opts.Progress != nil {
				opts.Progress.Done(i, s, runErr)
			}
		}
		if interrupted {
			out.Interrupted = true
			out.Pass = false
			_ = writeJSON(filepath.Join(dir, "expectations.json"), out.Results)
			return out, fmt.Errorf("runner: interrupted during %s; results so far are in %s: %w", r.Scenario.Name, dir, runErr)
		}
	}
	// Checks that compare runs (convergence_time(poseidon) * 3 <= …) need the whole sweep.
	if len(runs) > 0 {
		var cross []*expect.Expectation
		for _, e := range runs[0].Expectations {
			if e.CrossRun() {
				cross = append(cross, e)
			}
		}
		out.Results = append(out.Results, expect.Evaluate(cross, envs)...)
	}
	for _, r := range out.Results {
		out.Pass = out.Pass && r.Pass
	}
	if err := writeJSON(filepath.Join(dir, "expectations.json"), out.Results); err != nil {
		return out, err
	}
	return out, nil
}

// summarize asks the report for the run's summary with the run's sweep variables.
func summarize(r *experiment.Run, res *results.Run) (*report.Summary, error) {
	vars := map[string]string{}
	for _, v := range r.Point.Vars {
		vars[v.Name] = fmt.Sprint(v.Value)
	}
	if len(vars) == 0 {
		vars = nil
	}
	return report.SummarizeInput(&report.Input{Experiment: r.Experiment, Vars: vars, Plan: r.Plan,
		Scenario: r.Scenario, Run: res, Expectations: r.Expectations})
}

// runDirName names a run's sub-directory after its sweep point ("cc=swift,M=4"), or
// "run" without a sweep.
func runDirName(r *experiment.Run) string {
	if r.Point.Label == "" {
		return "run"
	}
	return strings.NewReplacer("/", "_", " ", "_", "\\", "_").Replace(r.Point.Label)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("runner: %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	return nil
}

// ErrExpectations is returned (wrapped) by callers that turn a failed expectation into
// an error; reef run exits 1 on it.
var ErrExpectations = errors.New("expectations failed")
