package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"reef/emulator"
	"reef/emulator/analysis"
	"reef/emulator/experiment"
	"reef/emulator/results"
	"reef/units"
)

// sweep runs the points of one experiment, up to jobs at a time.
type sweep struct {
	ctx      context.Context
	x        *experiment.Experiment
	be       emulator.Backend
	opts     Options
	dir      string
	runs     []*experiment.Run
	writeRun func(string, *analysis.Summary, *results.Run) error
	// mu serialises the calls to opts.Progress and guards next and done.
	mu   sync.Mutex
	next int           // the first point not handed out yet
	done []pointResult // by sweep index
}

// pointResult is what running one point left: its directory and summary (nil if it
// never finished), runErr when it was interrupted or failed part-way (its partial
// results are written), err when it has no results.
type pointResult struct {
	sub    string
	s      *analysis.Summary
	runErr error
	err    error
}

// runAll runs every point, in sweep order, jobs at a time. After a point fails or is
// interrupted no further point starts (those under way finish, or stop early when ctx
// is cancelled).
func (w *sweep) runAll(jobs int) {
	var wg sync.WaitGroup
	for range min(jobs, len(w.runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := w.take()
				if !ok {
					return
				}
				w.point(i) // stores its result in w.done[i]
			}
		}()
	}
	wg.Wait()
}

// take hands out the next point to run, unless none is left or the sweep stops: ctx is
// cancelled or a point failed or was interrupted.
func (w *sweep) take() (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next >= len(w.runs) || w.ctx.Err() != nil {
		return 0, false
	}
	for _, d := range w.done[:w.next] {
		if d.err != nil || d.runErr != nil {
			return 0, false
		}
	}
	w.next++
	return w.next - 1, true
}

// progress calls f on opts.Progress, if any, one call at a time.
func (w *sweep) progress(f func(Progress)) {
	if w.opts.Progress == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w.opts.Progress)
}

// point runs sweep point i, again while its fidelity is degraded (Options.RetryDegraded),
// writes its directory and stores its result in done[i].
func (w *sweep) point(i int) (d pointResult) {
	r := w.runs[i]
	n := len(w.runs)
	d.sub = filepath.Join(w.dir, runDirName(r))
	defer func() {
		w.mu.Lock()
		w.done[i] = d
		w.mu.Unlock()
	}()
	if err := os.MkdirAll(d.sub, 0o755); err != nil {
		d.err = fmt.Errorf("runner: %w", err)
		return d
	}
	w.progress(func(p Progress) { p.Start(i, n, r.Scenario.Name) })
	ro := emulator.RunOptions{OutDir: d.sub, Capture: w.opts.Capture, Shards: w.opts.Shards, SwitchdArgs: w.opts.SwitchdArgs,
		Place: w.opts.Place, ClockOffsets: w.opts.ClockOffsets, Unplaced: w.opts.Unplaced}
	if w.opts.Progress != nil {
		ro.Progress = func(reached, total units.Time) {
			w.progress(func(p Progress) {
				if pp, ok := p.(PointProgress); ok {
					pp.UpdatePoint(i, reached, total)
				} else {
					p.Update(reached, total)
				}
			})
		}
	}
	if _, ok := w.opts.Progress.(SetupProgress); ok {
		ro.Setup = func(u emulator.UpProgress) {
			w.progress(func(p Progress) { p.(SetupProgress).Setup(u) })
		}
	}
	if ob, ok := w.opts.Progress.(Observer); ok {
		ob.Plan(i, r.Plan)
		ro.Observe = ob.Observe
	}
	var res *results.Run
	for attempt := 1; ; attempt++ {
		res, d.runErr = w.be.Run(w.ctx, r.Plan, r.Scenario, ro)
		// What the backend built to run the point is garbage now: on the sim, the whole
		// lab (frame pools, queues, hosts, flows), most of the heap on a large one.
		// Collected at once, its memory goes to the analysis; left to the collector's
		// pacing, the heap first grew to twice what the sim held (a k = 16 fat tree's
		// 10 ms WebSearch run: 2.0 GB peak RSS before this and the lazy lateness
		// histograms, 1.1 GB after).
		runtime.GC()
		if res == nil {
			if d.runErr == nil {
				d.runErr = errors.New("backend returned no results")
			}
			runErr := d.runErr
			w.progress(func(p Progress) { p.Done(i, nil, runErr) })
			d.err = fmt.Errorf("runner: %s: %w", r.Scenario.Name, d.runErr)
			return d
		}
		res.Attempts = attempt
		var err error
		if d.s, err = summarize(w.x, r, res); err != nil {
			d.s, d.err = nil, fmt.Errorf("runner: %s: %w", r.Scenario.Name, err)
			return d
		}
		// runErr here means Ctrl-C, or a run that failed part-way (a daemon died):
		// keep what this attempt measured.
		if d.runErr != nil || d.s.Fidelity.Verdict != "degraded" || attempt > w.opts.RetryDegraded {
			break
		}
		slog.Info("run degraded, running it again", "run", r.Scenario.Name, "attempt", attempt,
			"why", analysis.DegradedWhy(d.s.Fidelity))
		// The next attempt writes its own captures and series; none of this one's stay.
		if err := os.RemoveAll(d.sub); err != nil {
			d.s, d.err = nil, fmt.Errorf("runner: %w", err)
			return d
		}
		if err := os.MkdirAll(d.sub, 0o755); err != nil {
			d.s, d.err = nil, fmt.Errorf("runner: %w", err)
			return d
		}
		w.progress(func(p Progress) { p.Start(i, n, fmt.Sprintf("%s (attempt %d)", r.Scenario.Name, attempt+1)) })
	}
	// summary.json, results.json, input.json, time series, plots and report.html
	if err := w.writeRun(d.sub, d.s, res); err != nil {
		d.s, d.err = nil, fmt.Errorf("runner: %s: %w", r.Scenario.Name, err)
		return d
	}
	s, runErr := d.s, d.runErr
	w.progress(func(p Progress) { p.Done(i, s, runErr) })
	return d
}
