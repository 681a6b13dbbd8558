package dashboard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"reef/emulator/analysis"
	"reef/emulator/runner"
	_ "reef/emulator/sim/simbackend"
	"reef/units"
)

// tinyExperiment is a two-point sweep on a 2+1 dumbbell, 2 ms long.
const tinyExperiment = `name: tiny
topology:
  name: tiny
  defaults: {rate: 1Gbps, delay: 5us, buffer: 1MB, mtu: 1500}
  generator: {kind: dumbbell, hosts_left: 2, hosts_right: 1}
duration: 2ms
sample_interval: 100us
seed: 1
defaults:
  cc: "${cc}"
flows:
  - {name: a, src: h1, dst: h3}
  - {name: b, src: h2, dst: h3, start: 1ms}
sweep:
  cc: [dctcp, swift]
expectations:
  - name: delivers
    check: "goodput(a) > 0"
`

// recorder counts what reef run's terminal display would be told.
type recorder struct{ starts, updates, dones int }

func (r *recorder) Start(int, int, string)             { r.starts++ }
func (r *recorder) Update(units.Time, units.Time)      { r.updates++ }
func (r *recorder) Done(int, *analysis.Summary, error) { r.dones++ }

// reef run --dashboard: the runner feeds each run's plan and live samples through
// Progress, verdicts as runs finish, and still drives the terminal's display.
func TestProgressFromRunner(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(path, []byte(tinyExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	f := NewFeed("tiny")
	rec := &recorder{}
	pr := &Progress{Feed: f, Next: rec}
	var _ runner.Observer = pr
	var pushes int
	seen := map[string]bool{}
	done := make(chan struct{})
	go func() { // watch the feed as a page would
		defer close(done)
		for {
			ch := f.Changed()
			s := f.Snapshot()
			if s.Run != nil && len(s.Run.Flows) > 0 && s.Plan != nil {
				pushes++
				seen[s.Title] = true
			}
			if !s.Live {
				return
			}
			<-ch
		}
	}()
	out, err := runner.Run(context.Background(), path, runner.Options{Backend: "sim", OutDir: filepath.Join(dir, "out"), Progress: pr})
	if err != nil {
		t.Fatal(err)
	}
	f.Settle(out.Results)
	<-done
	if rec.starts != 2 || rec.dones != 2 || rec.updates == 0 {
		t.Fatalf("terminal display: %+v, want 2 starts, 2 dones, updates", rec)
	}
	if len(seen) != 2 || pushes < 2 {
		t.Fatalf("live samples seen for runs %v (%d snapshots), want both runs", seen, pushes)
	}
	s := f.Snapshot()
	if len(s.Verdicts) != len(out.Results) || len(s.Verdicts) == 0 {
		t.Fatalf("%d verdicts shown, runner decided %d", len(s.Verdicts), len(out.Results))
	}
	if s.Run == nil || s.Run.Flows[0].Samples == nil || s.Now != 2*units.Millisecond {
		t.Fatalf("last run not shown to its end: now %v", s.Now)
	}
}
