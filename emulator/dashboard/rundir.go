package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"reef/emulator/expect"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/units"
)

// RunDir is a finished run read from its results directory. It never changes.
type RunDir struct {
	snap Snapshot
}

// Snapshot implements Source.
func (r *RunDir) Snapshot() *Snapshot { s := r.snap; return &s }

// Changed implements Source: a finished run never changes.
func (r *RunDir) Changed() <-chan struct{} { return nil }

// summaryFile is the part of summary.json the dashboard shows.
type summaryFile struct {
	Experiment   string          `json:"experiment"`
	Run          string          `json:"run"`
	Expectations []expect.Result `json:"expectations"`
	// WindowUS is the measurement window in µs.
	WindowUS [2]float64 `json:"window_us"`
}

// RunDirs lists the run directories under dir: dir itself when it holds a results.json,
// else its sub-directories that do (an experiment's sweep), sorted.
func RunDirs(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, results.RunFile)); err == nil {
		return []string{dir}, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(sub, results.RunFile)); err == nil {
			out = append(out, sub)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("dashboard: %s: no results.json in it or its sub-directories; want a reef run results directory", dir)
	}
	return out, nil
}

// OpenRunDir reads one run's directory: results.json and its series (required,
// results.ReadDir), the plan from input.json (as reef run writes it) or plan.json, and
// summary.json (optional: without a plan there is no graph, without a summary no
// verdicts). When the run is part of an
// experiment, the verdicts are the sweep's (sweep.json next to the run's directory). An experiment directory holding a single run is accepted too.
func OpenRunDir(dir string) (*RunDir, error) {
	dirs, err := RunDirs(dir)
	if err != nil {
		return nil, err
	}
	if len(dirs) > 1 {
		return nil, fmt.Errorf("dashboard: %s holds %d runs; pick one of them", dir, len(dirs))
	}
	dir = dirs[0]
	run, err := results.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	rd := &RunDir{snap: Snapshot{Title: filepath.Base(dir), Run: run, Now: run.Duration}}
	p, err := runPlan(dir)
	switch {
	case err == nil:
		rd.snap.Plan = p
	case errors.Is(err, os.ErrNotExist):
		rd.snap.Note = "no input.json or plan.json: topology unavailable"
	default:
		return nil, err
	}
	var sum summaryFile
	switch err := readJSON(filepath.Join(dir, "summary.json"), &sum); {
	case err == nil:
		rd.snap.Verdicts = sum.Expectations
		rd.snap.Window = [2]units.Time{units.Time(sum.WindowUS[0] * 1e3), units.Time(sum.WindowUS[1] * 1e3)}
		if sum.Run != "" {
			rd.snap.Title = sum.Run
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, err
	}
	// an experiment's sweep.json holds every verdict, those comparing runs included
	var sweep struct {
		Expectations []expect.Result `json:"expectations"`
	}
	if err := readJSON(filepath.Join(filepath.Dir(dir), "sweep.json"), &sweep); err == nil && len(sweep.Expectations) > 0 {
		rd.snap.Verdicts = sweep.Expectations
	}
	return rd, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("dashboard: %s: %w", path, err)
	}
	return nil
}

// runPlan reads the run's plan from input.json, else plan.json.
func runPlan(dir string) (*plan.Plan, error) {
	var in struct {
		Plan *plan.Plan `json:"plan"`
	}
	err := readJSON(filepath.Join(dir, "input.json"), &in)
	if err == nil && in.Plan != nil {
		return in.Plan, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var p plan.Plan
	if err := readJSON(filepath.Join(dir, "plan.json"), &p); err != nil {
		return nil, err
	}
	return &p, nil
}
