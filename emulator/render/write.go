// Package render draws what emulator/analysis computed: per run the plots (PNG and
// SVG) and a self-contained report.html beside the run's data files, and per sweep the
// sweep plots and a report.html linking every run's own. The runner calls WriteRun after
// each run and WriteSweep after the last; `reef report` re-renders a run or sweep
// directory from its raw results (RenderDir).
package render

import (
	"fmt"
	"os"
	"path/filepath"

	"reef/emulator/analysis"
	"reef/emulator/results"
)

// WriteRun writes a run directory: summary.json, the raw results (results.json, and the
// time series as flows.csv and queues.csv), input.json (so `reef report` can recompute),
// plots/*.png and *.svg, and report.html. run may be nil when the summary already holds
// it (it always does when it came from Summarize).
func WriteRun(dir string, s *analysis.Summary, run *results.Run) error {
	if err := analysis.WriteRunData(dir, s, run); err != nil {
		return err
	}
	figs, err := runFigures(s)
	if err != nil {
		return err
	}
	if err := writeFigures(dir, figs); err != nil {
		return err
	}
	page, err := runHTML(s, figs)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, analysis.HTMLFile), page, 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Rerender recomputes a run directory's summary, plots and report.html from its raw
// results (LoadRun, SummarizeInput, WriteRun).
func Rerender(dir string) (*analysis.Summary, error) {
	in, err := analysis.LoadRun(dir)
	if err != nil {
		return nil, err
	}
	s, err := analysis.SummarizeInput(in)
	if err != nil {
		return nil, err
	}
	return s, WriteRun(dir, s, nil)
}

// WriteSweep writes a sweep's combined report in dir: sweep.json (analysis.WriteSweepData),
// the sweep plots under plots/ and report.html linking every run's own report. Each run
// should already be written (WriteRun) in its Dir.
func WriteSweep(dir string, runs []analysis.RunEntry) (*analysis.Sweep, error) {
	w, err := analysis.WriteSweepData(dir, runs)
	if err != nil {
		return nil, err
	}
	sums := make([]*analysis.Summary, len(runs))
	for i, r := range runs {
		sums[i] = r.Summary
	}
	figs, tables, err := sweepFigures(sums)
	if err != nil {
		return nil, err
	}
	if err := writeFigures(dir, figs); err != nil {
		return nil, err
	}
	page, err := sweepHTML(w, figs, tables)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, analysis.HTMLFile), page, 0o644); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return w, nil
}

// RerenderSweep re-renders every run of the sweep in dir (listed in its sweep.json) and
// then the sweep's own report.
func RerenderSweep(dir string) (*analysis.Sweep, error) {
	old, err := analysis.ReadSweep(dir)
	if err != nil {
		return nil, err
	}
	var runs []analysis.RunEntry
	for _, r := range old.Runs {
		rd := filepath.Join(dir, filepath.FromSlash(r.Dir))
		s, err := Rerender(rd)
		if err != nil {
			return nil, err
		}
		runs = append(runs, analysis.RunEntry{Dir: rd, Summary: s})
	}
	return WriteSweep(dir, runs)
}

// RenderDir re-renders whatever dir holds: one run (it has results.json), or a sweep
// (it has sweep.json, or sub-directories that hold runs, which are then rendered in name
// order and combined). pass says whether every expectation held.
func RenderDir(dir string) (pass bool, err error) {
	if _, err := os.Stat(filepath.Join(dir, analysis.ResultsFile)); err == nil {
		s, err := Rerender(dir)
		if err != nil {
			return false, err
		}
		return s.Pass, nil
	}
	if _, err := os.Stat(filepath.Join(dir, analysis.SweepFile)); err == nil {
		w, err := RerenderSweep(dir)
		if err != nil {
			return false, err
		}
		return w.Pass, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("report: %w", err)
	}
	var runs []analysis.RunEntry
	for _, e := range ents {
		sub := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(sub, analysis.ResultsFile)); err != nil {
			continue
		}
		s, err := Rerender(sub)
		if err != nil {
			return false, err
		}
		runs = append(runs, analysis.RunEntry{Dir: sub, Summary: s})
	}
	if len(runs) == 0 {
		return false, fmt.Errorf("report: %s holds no run (no %s in it or its sub-directories)", dir, analysis.ResultsFile)
	}
	w, err := WriteSweep(dir, runs)
	if err != nil {
		return false, err
	}
	return w.Pass, nil
}
