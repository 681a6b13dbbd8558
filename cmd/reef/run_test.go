package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"reef/emulator/analysis"
	"reef/units"
)

// timeScaled is a one-point experiment on the sim with τ = 100 in the file (and, where
// the test adds it, its own τ on the sim backend).
const timeScaled = `name: scaled
topology:
  name: scaled
  defaults: {rate: 100Gbps, delay: 1us, buffer: 4MB, mtu: 1500}
  generator: {kind: dumbbell, hosts: 1}
time_scale: 100
duration: 200us
warmup: 50us
sample_interval: 5us
seed: 1
defaults: {cc: swift}
flows:
  - {name: bulk, src: h1, dst: h2}
expectations:
  - {name: moves, check: "bulk.goodput > 0bps"}
`

// TestRunTimeScaleFlags runs reef run on the sim through the CLI: --time-scale replaces
// the file's time_scale and --backend-time-scale the backend's τ, the run is scaled by
// the new τ (its duration and its links' rates) and the summary records the flag and the
// file's value; a flag the file's backend_time_scale would override, or a τ ≤ 0, is an
// error that runs nothing.
func TestRunTimeScaleFlags(t *testing.T) {
	perSim := strings.Replace(timeScaled, "time_scale: 100\n", "time_scale: 100\nbackend_time_scale: {sim: 20}\n", 1)
	for _, tc := range []struct {
		name      string
		file      string
		flags     []string
		exit      int
		tau       float64
		flag      string
		fileScale float64
	}{
		{"file", timeScaled, nil, 0, 100, "", 0},
		{"time scale", timeScaled, []string{"--time-scale", "50"}, 0, 50, "--time-scale", 100},
		{"backend time scale", timeScaled, []string{"--backend-time-scale", "10"}, 0, 10, "--backend-time-scale", 100},
		{"backend time scale over the file's", perSim, []string{"--backend-time-scale", "10"}, 0, 10, "--backend-time-scale", 20},
		{"time scale under the file's backend_time_scale", perSim, []string{"--time-scale", "50"}, 2, 0, "", 0},
		{"zero", timeScaled, []string{"--backend-time-scale", "-1"}, 2, 0, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.yaml")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			args := append([]string{"run", "--backend", "sim", "--no-figures", "--out", out, path}, tc.flags...)
			if got := run(context.Background(), args); got != tc.exit {
				t.Fatalf("reef %v: exit %d, want %d", args, got, tc.exit)
			}
			if tc.exit != 0 {
				if _, err := os.Stat(out); err == nil {
					t.Errorf("a run that failed to compile wrote %s", out)
				}
				return
			}
			s, err := analysis.ReadSummary(filepath.Join(out, "run"))
			if err != nil {
				t.Fatal(err)
			}
			if s.TimeScale != tc.tau || s.TimeScaleFlag != tc.flag || s.FileTimeScale != tc.fileScale {
				t.Errorf("summary: time_scale %g, time_scale_flag %q, file_time_scale %g; want %g, %q, %g",
					s.TimeScale, s.TimeScaleFlag, s.FileTimeScale, tc.tau, tc.flag, tc.fileScale)
			}
			in, err := analysis.LoadRun(filepath.Join(out, "run"))
			if err != nil {
				t.Fatal(err)
			}
			if want := (200 * units.Microsecond).Scale(tc.tau); in.Scenario.Duration != want {
				t.Errorf("scenario duration %v, want 200us × %g = %v", in.Scenario.Duration, tc.tau, want)
			}
			if want := units.Rate(100e9 / tc.tau); in.Plan.Links[0].Rate != want {
				t.Errorf("host link rate %v, want 100Gbps ÷ %g = %v", in.Plan.Links[0].Rate, tc.tau, want)
			}
		})
	}
}

// With several runs under way (reef run -j) the status line shows each run's bar, each
// moved by its own updates, and a line per run as it finishes, after which the bars of
// the others are drawn again; without a terminal, a line per run started and finished.
func TestProgressShowsEveryRunUnderWay(t *testing.T) {
	const total = 100 * units.Millisecond
	bar := func(n int) string { return strings.Repeat("█", n) + strings.Repeat("·", 30-n) }
	for _, tty := range []bool{true, false} {
		var b bytes.Buffer
		c := &clock{t: time.Unix(0, 0)}
		p := newProgress(&b, tty, c.now)
		var got []string
		step := func(f func()) {
			c.advance(time.Second)
			f()
			if tty {
				got = append(got, lastDraw(b.String()))
			}
		}
		p.Start(0, 3, "a")
		p.Start(1, 3, "b")
		step(func() { p.UpdatePoint(1, 20*units.Millisecond, total) })
		step(func() { p.UpdatePoint(0, 50*units.Millisecond, total) })
		step(func() { p.Done(0, &analysis.Summary{Pass: false}, nil) })
		step(func() { p.UpdatePoint(1, total, total) })
		step(func() { p.Done(1, &analysis.Summary{Pass: true}, nil) })
		p.finish()
		if !tty {
			want := "[1/3] a …\n[2/3] b …\n[1/3] a: FAIL in 3s (fidelity )\n[2/3] b: pass in 5s (fidelity )\n"
			if b.String() != want {
				t.Errorf("not a terminal: printed %q, want %q", b.String(), want)
			}
			continue
		}
		want := []string{
			"[2/3] b " + bar(6) + " 20ms/100ms 0.02× real time",
			"[1/3] a " + bar(15) + " 50ms/100ms 0.025× real time │ [2/3] b " + bar(6) + " 20ms/100ms 0.02× real time",
			"[2/3] b " + bar(6) + " 20ms/100ms 0.02× real time",
			"[2/3] b " + bar(30) + " 100ms/100ms 0.025× real time",
			"[2/3] b: pass in 5s (fidelity )\n", // cleared, and nothing left under way
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("drawn:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if !strings.Contains(b.String(), "[1/3] a: FAIL in 3s") || !strings.Contains(b.String(), "[2/3] b: pass in 5s") {
			t.Errorf("a finished run's line is missing: %q", b.String())
		}
		if len(p.runs) != 0 {
			t.Errorf("%d runs left under way after every run finished", len(p.runs))
		}
	}
}
