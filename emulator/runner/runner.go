// Package runner executes an experiment file end to end: load and compile every sweep
// point (so a bad file fails before anything is created), run each point on a backend,
// and write the results directory through emulator/report: per run a sub-directory named
// after its sweep point with summary.json, results.json (the raw results.Run),
// input.json, the time series as CSV, plots and report.html; at the top sweep.json with
// every expectation's verdict, the sweep plots and a combined report.html. It is what
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
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"reef/emulator"
	"reef/emulator/calibrate"
	"reef/emulator/expect"
	"reef/emulator/experiment"
	"reef/emulator/plan"
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
	// TimeScale and BackendTimeScale, when non-zero, replace the experiment's
	// time_scale and its τ on this backend (experiment.CompileOptions; reef run
	// --time-scale and --backend-time-scale); the summaries record which did.
	TimeScale, BackendTimeScale float64
	// Capture lists NODE or NODE:PORT to capture (passed to the backend).
	Capture []string
	// Progress receives progress; nil for none.
	Progress Progress
	// Now gives the time for the default directory name (time.Now when nil).
	Now func() time.Time
	// NoFigures writes each run's data (summaries, raw results, time series) but no
	// plots or report.html; `reef report DIR` draws them later.
	NoFigures bool
	// RetryDegraded is how many more times a run whose fidelity verdict is degraded is
	// run again (the same point and seed) before its results are kept as they are; the
	// machine may have been busy with other work. The results of the last attempt are
	// kept and say how many attempts there were.
	RetryDegraded int
	// Only narrows the sweep to the points matching every "VAR=VALUE" selector
	// (experiment.Select; reef run --only); empty runs every point.
	Only []string
	// Shards is how many switch daemons carry a real backend's switches (0: the
	// backend's default; see emulator.RunOptions), with SwitchdArgs.
	Shards      int
	SwitchdArgs []string
	// Limits, when set, are the machine's calibrated limits (reef calibrate): a point
	// of a real backend whose links are faster is flagged before anything runs.
	Limits *calibrate.Limits
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

// A SetupProgress is a Progress that is also told how far each run's lab is brought
// up (emulator.RunOptions.Setup).
type SetupProgress interface {
	Setup(emulator.UpProgress)
}

// Observer is a Progress that also watches each run live (reef run --dashboard):
// Plan is called before run i starts, Observe while it runs, with what it measured so
// far (see emulator.RunOptions.Observe).
type Observer interface {
	Plan(i int, p *plan.Plan)
	Observe(reached units.Time, run *results.Run)
}

// Outcome is what Run produced.
type Outcome struct {
	// Dir is the results directory.
	Dir string
	// Summaries are the runs' summaries, in sweep order (fewer when interrupted).
	Summaries []*report.Summary
	// Results are every expectation's verdict over the sweep (expect.Evaluate): each
	// per-run check on every run it selects, each check comparing runs once per group.
	Results []expect.Result
	// Pass is true when every expectation evaluated held.
	Pass bool
	// Interrupted is true when ctx was cancelled before every run finished.
	Interrupted bool
	// NotEvaluated names the experiment's expectations that no run selected: with
	// Options.Only, the checks on points left out and those comparing with them.
	NotEvaluated []string
	// Warnings are what was flagged before the runs started: points asking for
	// faster links than the machine's calibrated limits.
	Warnings []string
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
	if err := x.Select(opts.Only); err != nil {
		return nil, fmt.Errorf("--only %w", err)
	}
	name := opts.Backend
	if name == "" {
		name = "netns"
	}
	runs, err := x.CompileAll(experiment.CompileOptions{Seed: opts.Seed, Backend: name,
		TimeScale: opts.TimeScale, BackendTimeScale: opts.BackendTimeScale})
	if err != nil {
		return nil, err
	}
	be, err := emulator.Lookup(name)
	if err != nil {
		return nil, err
	}
	warnings := checkLimits(opts.Limits, name, runs)
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
	writeRun, writeSweep := report.WriteRun, report.WriteSweep
	if opts.NoFigures {
		writeRun, writeSweep = report.WriteRunData, report.WriteSweepData
	}
	out := &Outcome{Dir: dir, Pass: true, Warnings: warnings}
	var entries []report.RunEntry
	for i, r := range runs {
		sub := filepath.Join(dir, runDirName(r))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return out, fmt.Errorf("runner: %w", err)
		}
		if opts.Progress != nil {
			opts.Progress.Start(i, len(runs), r.Scenario.Name)
		}
		ro := emulator.RunOptions{OutDir: sub, Capture: opts.Capture, Shards: opts.Shards, SwitchdArgs: opts.SwitchdArgs}
		if opts.Progress != nil {
			ro.Progress = opts.Progress.Update
		}
		if sp, ok := opts.Progress.(SetupProgress); ok {
			ro.Setup = sp.Setup
		}
		if ob, ok := opts.Progress.(Observer); ok {
			ob.Plan(i, r.Plan)
			ro.Observe = ob.Observe
		}
		var (
			res    *results.Run
			s      *report.Summary
			runErr error
		)
		for attempt := 1; ; attempt++ {
			res, runErr = be.Run(ctx, r.Plan, r.Scenario, ro)
			if res == nil {
				if runErr == nil {
					runErr = errors.New("backend returned no results")
				}
				if opts.Progress != nil {
					opts.Progress.Done(i, nil, runErr)
				}
				return out, fmt.Errorf("runner: %s: %w", r.Scenario.Name, runErr)
			}
			res.Attempts = attempt
			var err error
			if s, err = summarize(x, r, res); err != nil {
				return out, fmt.Errorf("runner: %s: %w", r.Scenario.Name, err)
			}
			// runErr here means Ctrl-C, or a run that failed part-way (a daemon died):
			// keep what this attempt measured.
			if runErr != nil || s.Fidelity.Verdict != "degraded" || attempt > opts.RetryDegraded {
				break
			}
			slog.Info("run degraded, running it again", "run", r.Scenario.Name, "attempt", attempt,
				"why", report.DegradedWhy(s.Fidelity))
			// The next attempt writes its own captures and series; none of this one's stay.
			if err := os.RemoveAll(sub); err != nil {
				return out, fmt.Errorf("runner: %w", err)
			}
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return out, fmt.Errorf("runner: %w", err)
			}
			if opts.Progress != nil {
				opts.Progress.Start(i, len(runs), fmt.Sprintf("%s (attempt %d)", r.Scenario.Name, attempt+1))
			}
		}
		interrupted := runErr != nil
		// summary.json, results.json, input.json, time series, plots and report.html
		if err := writeRun(sub, s, res); err != nil {
			return out, fmt.Errorf("runner: %s: %w", r.Scenario.Name, err)
		}
		out.Summaries = append(out.Summaries, s)
		entries = append(entries, report.RunEntry{Dir: sub, Summary: s})
		if opts.Progress != nil {
			opts.Progress.Done(i, s, runErr)
		}
		if interrupted {
			out.Interrupted = true
			out.Pass = false
			for _, s := range out.Summaries {
				out.Results = append(out.Results, s.Expectations...)
			}
			if _, err := writeSweep(dir, entries); err != nil {
				return out, errors.Join(runErr, err)
			}
			if ctx.Err() == nil {
				return out, fmt.Errorf("runner: %s failed; what was measured is in %s: %w", r.Scenario.Name, sub, runErr)
			}
			return out, fmt.Errorf("runner: interrupted during %s; what was measured is in %s: %w", r.Scenario.Name, dir, runErr)
		}
	}
	// The combined report evaluates every check over the sweep, including those that
	// compare runs (convergence_time(poseidon) * 3 <= convergence_time(swift)).
	sw, err := writeSweep(dir, entries)
	if err != nil {
		return out, fmt.Errorf("runner: %w", err)
	}
	out.Results, out.Pass, out.NotEvaluated = sw.Expectations, sw.Pass, sw.NotEvaluated
	return out, nil
}

// checkLimits flags, before anything runs, the points of a real backend whose links
// are faster than the machine's calibrated limits (each warning once), and logs them.
func checkLimits(l *calibrate.Limits, backend string, runs []*experiment.Run) []string {
	if l == nil || backend == "sim" {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, r := range runs {
		w, err := l.Check(r.Plan)
		if err != nil || w == "" || seen[w] {
			continue
		}
		seen[w] = true
		w = r.Experiment + ": " + w
		slog.Warn(w)
		out = append(out, w)
	}
	return out
}

// summarize asks the report for the run's summary with the run's sweep variables and
// the paper's claim.
func summarize(x *experiment.Experiment, r *experiment.Run, res *results.Run) (*report.Summary, error) {
	vars := map[string]string{}
	for _, v := range r.Point.Vars {
		vars[v.Name] = fmt.Sprint(v.Value)
	}
	if len(vars) == 0 {
		vars = nil
	}
	pp := r.Point.File.Paper
	var paper *report.Paper
	if pp != (experiment.Paper{}) {
		paper = &report.Paper{Ref: pp.Ref, Claim: pp.Claim, Notes: pp.Notes}
	}
	return report.SummarizeInput(&report.Input{Experiment: r.Experiment, Vars: vars, Paper: paper, Plan: r.Plan,
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
