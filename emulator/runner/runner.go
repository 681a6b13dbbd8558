// Package runner executes an experiment file end to end: load and compile every sweep
// point (so a bad file fails before anything is created), run each point on a backend,
// and write the results directory through emulator/analysis and emulator/render: per
// run a sub-directory named after its sweep point with summary.json, results.json and
// the time series as CSV (the raw results.Run: results.WriteDir), input.json, plots
// and report.html; at the top sweep.json with every expectation's verdict, the sweep
// plots and a combined report.html. It is what `reef run` calls.
//
// # Usage
//
//	out, err := runner.Run(ctx, "experiments/poseidon-multihop.yaml", runner.Options{Backend: "sim"})
//	// out.Dir holds the results; out.Pass says whether every expectation held
//
// # Concurrency
//
// On a Concurrent backend (the sim), Options.Jobs sweep points run at once, each on
// its own goroutine with its own lab; every point's directory and summary are what a
// serial run writes, and the sweep is evaluated once all are done, in sweep order.
//
// # Limitations
//
// Runs on the netns and docker backends execute one after another (one lab at a time).
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
	"reef/emulator/analysis"
	"reef/emulator/calibrate"
	"reef/emulator/expect"
	"reef/emulator/experiment"
	"reef/emulator/plan"
	"reef/emulator/render"
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
	// Unplaced leaves a real backend's daemons wherever the scheduler puts them (see
	// emulator.UpOptions).
	Unplaced bool
	// Place and ClockOffsets go to a backend across machines (swarm; see
	// emulator.RunOptions).
	Place        map[string]string
	ClockOffsets map[string]time.Duration
	// Limits, when set, are the machine's calibrated limits (reef calibrate): a point
	// of a real backend whose links are faster is flagged before anything runs.
	Limits *calibrate.Limits
	// Jobs is how many sweep points run at once (reef run -j), on a backend that is
	// Concurrent and without a live view (an Observer); 0 or 1 runs them one after
	// another. The results do not depend on it: every point is the same run either way.
	Jobs int
	// Expectations, when set, replace the experiment file's expectations at every
	// point (experiment.SetExpectations): reef lab check grades a student's file on the
	// lab's checks.
	Expectations []expect.Spec
	// Lab, when set, names the lab each run brings up on a real backend instead of the
	// topology's name, so that runs of the same experiment by several people on one
	// machine (reef lab check --student) do not collide.
	Lab string
}

// Concurrent is implemented by a backend whose runs are independent computations that
// may go side by side in one process (the sim); Options.Jobs applies only to those.
type Concurrent interface {
	Concurrent() bool
}

// PointProgress is a Progress that can follow several runs at once (Options.Jobs > 1):
// the runner calls UpdatePoint, naming the run, instead of Update.
type PointProgress interface {
	Progress
	UpdatePoint(i int, reached, total units.Time)
}

// Progress is told what the runner is doing.
type Progress interface {
	// Start is called before run i (0-based) of n, labelled label.
	Start(i, n int, label string)
	// Update reports the emulated time reached in the current run.
	Update(reached, total units.Time)
	// Done is called after each run with its summary (nil on error) and error.
	Done(i int, s *analysis.Summary, err error)
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
	Summaries []*analysis.Summary
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
	if opts.Expectations != nil {
		if err := x.SetExpectations(opts.Expectations); err != nil {
			return nil, err
		}
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
	if opts.Lab != "" {
		for _, r := range runs {
			r.Plan.Lab = opts.Lab
		}
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
	writeRun, writeSweep := render.WriteRun, render.WriteSweep
	if opts.NoFigures {
		writeRun, writeSweep = analysis.WriteRunData, analysis.WriteSweepData
	}
	jobs := opts.Jobs
	if c, ok := be.(Concurrent); !ok || !c.Concurrent() {
		jobs = 1 // a lab of real namespaces or containers at a time
	}
	if _, ok := opts.Progress.(Observer); ok {
		jobs = 1 // the live view watches one run at a time
	}
	sw := &sweep{ctx: ctx, x: x, be: be, opts: opts, dir: dir, runs: runs, writeRun: writeRun,
		done: make([]pointResult, len(runs))}
	sw.runAll(max(jobs, 1))
	out := &Outcome{Dir: dir, Pass: true, Warnings: warnings}
	var entries []analysis.RunEntry
	stopped := -1 // the first point interrupted or failed part-way
	for i, d := range sw.done {
		if d.err != nil {
			// A point without results stops the sweep, as it would have run alone;
			// what the others measured is written in their directories.
			return out, d.err
		}
		if d.s == nil {
			continue // never started: an earlier point stopped the sweep
		}
		out.Summaries = append(out.Summaries, d.s)
		entries = append(entries, analysis.RunEntry{Dir: d.sub, Summary: d.s})
		if d.runErr != nil && stopped < 0 {
			stopped = i
		}
	}
	if stopped >= 0 {
		d, name := sw.done[stopped], runs[stopped].Scenario.Name
		out.Interrupted = true
		out.Pass = false
		for _, s := range out.Summaries {
			out.Results = append(out.Results, s.Expectations...)
		}
		if _, err := writeSweep(dir, entries); err != nil {
			return out, errors.Join(d.runErr, err)
		}
		if ctx.Err() == nil {
			return out, fmt.Errorf("runner: %s failed; what was measured is in %s: %w", name, d.sub, d.runErr)
		}
		return out, fmt.Errorf("runner: interrupted during %s; what was measured is in %s: %w", name, dir, d.runErr)
	}
	// The combined report evaluates every check over the sweep, including those that
	// compare runs (convergence_time(poseidon) * 3 <= convergence_time(swift)).
	res, err := writeSweep(dir, entries)
	if err != nil {
		return out, fmt.Errorf("runner: %w", err)
	}
	out.Results, out.Pass, out.NotEvaluated = res.Expectations, res.Pass, res.NotEvaluated
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
func summarize(x *experiment.Experiment, r *experiment.Run, res *results.Run) (*analysis.Summary, error) {
	vars := map[string]string{}
	for _, v := range r.Point.Vars {
		vars[v.Name] = fmt.Sprint(v.Value)
	}
	if len(vars) == 0 {
		vars = nil
	}
	pp := r.Point.File.Paper
	var paper *analysis.Paper
	if pp != (experiment.Paper{}) {
		paper = &analysis.Paper{Ref: pp.Ref, Claim: pp.Claim, Notes: pp.Notes}
	}
	return analysis.SummarizeInput(&analysis.Input{Experiment: r.Experiment, Vars: vars, Paper: paper, Plan: r.Plan,
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
