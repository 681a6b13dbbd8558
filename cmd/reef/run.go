package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	_ "reef/cc/all"
	"reef/emulator"
	"reef/emulator/analysis"
	"reef/emulator/calibrate"
	"reef/emulator/dashboard"
	"reef/emulator/runner"
	_ "reef/emulator/sim/simbackend"
	"reef/units"
)

func init() { commands = append(commands, runCmd) }

// runOptions are reef run's flags.
type runOptions struct {
	*options
	backend string
	out     string
	seed    uint64
	// timeScale and backendTimeScale replace the file's time_scale and its τ on the
	// backend (0: the file's)
	timeScale, backendTimeScale float64
	capture                     []string
	// noFigures skips the plots and report.html (reef report draws them later)
	noFigures bool
	// retryDegraded is how many more times a degraded run is run again
	retryDegraded int
	// only narrows the sweep to the points matching every VAR=VALUE
	only []string
	// shards is how many switch daemons carry the switches (netns; 0: default)
	shards int
	// unplaced leaves the daemons where the scheduler puts them (netns)
	unplaced bool
	// limits is the machine's calibration file ("": none)
	limits string
	// swArgs are extra arguments for every switchd
	swArgs []string
	// jobs is how many sweep points run at once (sim only)
	jobs int
	// dashboard serves the live view on dashAddr
	dashboard bool
	dashAddr  string
	// place and offsets are the swarm backend's placement flags
	place, offsets []string
}

func runCmd(o *options) *cobra.Command {
	ro := &runOptions{options: o}
	c := &cobra.Command{
		Use:   "run EXPERIMENT",
		Short: "run an experiment file: bring the lab up, run every sweep point, check the expectations",
		Long: `run loads an experiment (experiments/*.yaml), checks it completely before creating
anything, runs every point of its sweep on the chosen backend and writes the results
directory (default results/<name>-<UTC timestamp>/): per run the raw results, the summary
and plots, and the expectations' verdicts.

Exit status: 0 when every expectation holds, 1 when one fails, 2 on an error or an
interruption (Ctrl-C stops the run, tears the lab down and keeps what was measured).`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE:         func(cmd *cobra.Command, args []string) error { return runRun(cmd.Context(), ro, args[0]) },
	}
	f := c.Flags()
	f.StringVar(&ro.backend, "backend", "netns", "backend: sim, netns, docker or swarm (across machines)")
	f.StringVar(&ro.out, "out", "", "results directory (default results/<name>-<UTC timestamp>)")
	f.Uint64Var(&ro.seed, "seed", 0, "replace the experiment's seed")
	f.Float64Var(&ro.timeScale, "time-scale", 0, "replace the experiment's time_scale τ (paper rates ÷ τ, times × τ); recorded in each summary")
	f.Float64Var(&ro.backendTimeScale, "backend-time-scale", 0, "replace τ on the chosen backend, whatever time_scale and backend_time_scale say; recorded in each summary")
	f.StringSliceVar(&ro.capture, "capture", nil, "capture NODE or NODE:PORT to pcapng in the run directory")
	f.BoolVar(&ro.noFigures, "no-figures", false, "write the results without plots or report.html (draw them later with reef report DIR)")
	f.StringSliceVar(&ro.only, "only", nil, "run only the sweep points with VAR=VALUE (repeat or separate with commas; checks comparing with points left out are not evaluated)")
	f.IntVar(&ro.shards, "shards", 0, "netns, docker: how many switch daemons carry the switches, links inside one in memory (default: one per two CPUs)")
	f.StringArrayVar(&ro.swArgs, "switchd-arg", nil, "netns, docker: extra argument for every switchd (repeatable)")
	f.BoolVar(&ro.unplaced, "unplaced", false, unplacedUsage)
	f.StringVar(&ro.limits, "limits", calibrate.DefaultPath, "the machine's calibrated limits (reef calibrate); a point asking for faster links is flagged before it starts (\"\": no check)")
	f.IntVarP(&ro.jobs, "jobs", "j", runtime.NumCPU(), "sweep points run at once on the sim backend (the results do not depend on it; other backends run one at a time)")
	f.IntVar(&ro.retryDegraded, "retry-degraded", 0, "run a point whose fidelity is degraded again, up to this many more times (a busy machine)")
	f.BoolVar(&ro.dashboard, "dashboard", false, "serve the live view (see reef dashboard) while the runs go")
	f.StringVar(&ro.dashAddr, "dashboard-addr", dashboard.DefaultAddr, "the live view's address (loopback only)")
	addSwarmFlags(c, &ro.place, &ro.offsets)
	return c
}

func runRun(ctx context.Context, ro *runOptions, path string) error {
	if ro.jobs < 1 {
		return &exitError{code: 2, err: fmt.Errorf("-j %d: want 1 or more", ro.jobs)}
	}
	if ro.retryDegraded < 0 {
		return &exitError{code: 2, err: fmt.Errorf("--retry-degraded %d: want 0 or more", ro.retryDegraded)}
	}
	place, offsets, err := swarmFlags(ro.place, ro.offsets)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	prog := newProgress(os.Stderr, terminal(os.Stderr), nil)
	var steps runner.Progress = prog
	var live *liveView
	if ro.dashboard {
		var err error
		if live, err = startLiveView(ctx, ro.dashAddr, path, prog); err != nil {
			return &exitError{code: 2, err: err}
		}
		steps = live.progress
	}
	out, err := runner.Run(ctx, path, runner.Options{Backend: ro.backend, OutDir: ro.out, Seed: ro.seed,
		TimeScale: ro.timeScale, BackendTimeScale: ro.backendTimeScale, Capture: ro.capture, Progress: steps, NoFigures: ro.noFigures,
		RetryDegraded: ro.retryDegraded, Only: ro.only, Shards: ro.shards, SwitchdArgs: ro.swArgs, Unplaced: ro.unplaced, Limits: loadLimits(ro.limits), Jobs: ro.jobs,
		Place: place, ClockOffsets: offsets})
	prog.finish()
	if live != nil {
		defer live.wait(ctx, out)
	}
	if out != nil {
		printOutcome(os.Stdout, out)
	}
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if !out.Pass {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d expectations failed; results in %s", len(out.Failed()), len(out.Results), out.Dir)}
	}
	return nil
}

func printOutcome(w io.Writer, out *runner.Outcome) {
	for _, r := range out.Results {
		mark := "PASS"
		if !r.Pass {
			mark = "FAIL"
		}
		line := fmt.Sprintf("%s  %-44s %s = %s, bound %s", mark, r.Label(), r.Check, r.ValueText, r.BoundText)
		if r.Error != "" {
			line += " (" + r.Error + ")"
		}
		fmt.Fprintln(w, line)
	}
	if len(out.NotEvaluated) > 0 {
		fmt.Fprintf(w, "not evaluated on the points run: %s\n", strings.Join(out.NotEvaluated, ", "))
	}
	fmt.Fprintf(w, "results: %s\n", out.Dir)
}

// progress draws a bar on a terminal (emulated time against the run's, the speed and
// an estimate of the time left; before that, the lab being set up) and a plain line per
// run otherwise. With several runs under way (reef run -j) the status line shows each
// one's bar, side by side.
type progress struct {
	w    io.Writer
	line statusLine
	n    int
	runs []*runProgress // under way, in the order they started
}

// runProgress is one run under way.
type runProgress struct {
	i     int
	label string
	start time.Time
	// since and from are when and at what emulated time the run was first seen
	// moving: the estimate of the time left counts from there, not from the set-up.
	since  time.Time
	from   units.Time
	stages upStages
	text   string // its part of the status line
}

// newProgress reports to w, drawing a bar when tty; now is the clock (nil: time.Now).
func newProgress(w io.Writer, tty bool, now func() time.Time) *progress {
	return &progress{w: w, line: newStatusLine(w, tty, now)}
}

func (p *progress) Start(i, n int, label string) {
	p.n = n
	r := &runProgress{i: i, label: label, start: p.line.now()}
	if k := p.find(i); k >= 0 {
		p.runs[k] = r // started again (--retry-degraded)
	} else {
		p.runs = append(p.runs, r)
	}
	if !p.line.tty {
		fmt.Fprintf(p.w, "[%d/%d] %s …\n", i+1, n, label)
	}
}

// find is the index in runs of run i (-1: not under way).
func (p *progress) find(i int) int {
	return slices.IndexFunc(p.runs, func(r *runProgress) bool { return r.i == i })
}

// last is the run started last (nil: none): the one runs one at a time report on.
func (p *progress) last() *runProgress {
	if len(p.runs) == 0 {
		return nil
	}
	return p.runs[len(p.runs)-1]
}

// Setup implements runner.SetupProgress: the run's lab is being brought up.
func (p *progress) Setup(u emulator.UpProgress) {
	r := p.last()
	if r == nil {
		return
	}
	complete := r.stages.add(u)
	r.text = fmt.Sprintf("[%d/%d] %s: setting up the lab: %s", r.i+1, p.n, r.label, r.stages)
	p.draw(complete)
}

// Update moves the bar of the run started last (runs one at a time).
func (p *progress) Update(reached, total units.Time) {
	if r := p.last(); r != nil {
		p.UpdatePoint(r.i, reached, total)
	}
}

// UpdatePoint moves run i's bar (runner.PointProgress).
func (p *progress) UpdatePoint(i int, reached, total units.Time) {
	k := p.find(i)
	if !p.line.tty || total <= 0 || k < 0 {
		return
	}
	r := p.runs[k]
	now := p.line.now()
	if reached > 0 && r.since.IsZero() {
		r.since, r.from = now, reached
	}
	const width = 30
	frac := min(float64(reached)/float64(total), 1)
	bar := strings.Repeat("█", int(frac*width)) + strings.Repeat("·", width-int(frac*width))
	speed := ""
	if wall := now.Sub(r.start); wall > 0 {
		speed = fmt.Sprintf(" %.3g× real time", reached.Seconds()/wall.Seconds())
	}
	left := ""
	if ran := now.Sub(r.since); !r.since.IsZero() && ran > 0 && reached > r.from && reached < total {
		// a second or more: a shorter wait needs no estimate
		if rest := time.Duration(float64(ran) * float64(total-reached) / float64(reached-r.from)); rest >= time.Second {
			left = " · about " + roundLeft(rest).String() + " left"
		}
	}
	r.text = fmt.Sprintf("[%d/%d] %s %s %v/%v%s%s", r.i+1, p.n, r.label, bar, reached, total, speed, left)
	p.draw(reached >= total)
}

// draw shows every run under way on the status line.
func (p *progress) draw(force bool) {
	texts := make([]string, 0, len(p.runs))
	for _, r := range p.runs {
		if r.text != "" {
			texts = append(texts, r.text)
		}
	}
	if len(texts) > 0 {
		p.line.draw(strings.Join(texts, " │ "), force)
	}
}

// roundLeft rounds an estimate of the time left to what it can tell: seconds, or
// tenths under ten seconds.
func roundLeft(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

func (p *progress) Done(i int, s *analysis.Summary, err error) {
	p.line.clear()
	k := p.find(i)
	if k < 0 {
		return
	}
	r := p.runs[k]
	p.runs = slices.Delete(p.runs, k, k+1)
	wall := p.line.now().Sub(r.start).Round(time.Millisecond)
	switch {
	case err != nil && s == nil:
		fmt.Fprintf(p.w, "[%d/%d] %s: %v\n", i+1, p.n, r.label, err)
	default:
		verdict := "pass"
		if !s.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(p.w, "[%d/%d] %s: %s in %v (fidelity %s)\n", i+1, p.n, r.label, verdict, wall, s.Fidelity.Verdict)
		for _, w := range s.Warnings {
			fmt.Fprintf(p.w, "  warning: %s\n", w)
		}
	}
	p.draw(true) // the runs still under way
}

func (p *progress) finish() { p.line.clear() }
