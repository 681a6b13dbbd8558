package sim

import (
	"context"
	"fmt"

	"reef/emulator"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/units"
)

// Name is the backend's registered name.
const Name = "sim"

// Backend runs scenarios in virtual time. Package reef/emulator/sim/simbackend registers
// one, with a wall clock, as "sim"; this package itself never reads a clock.
type Backend struct {
	// Wall, when set, reads a monotonic wall clock; Run uses it only to fill
	// results.Run.WallTime, never inside the simulation.
	Wall func() units.Time
}

// Name returns "sim".
func (Backend) Name() string { return Name }

// Run wires the plan, runs the scenario to its end in chunks of simulated time (checking
// ctx and reporting progress between chunks) and returns what was measured. On cancellation it returns the results
// up to the time reached, with ctx.Err().
func (b Backend) Run(ctx context.Context, p *plan.Plan, sc *scenario.Scenario, opts emulator.RunOptions) (*results.Run, error) {
	if sc.Duration <= 0 {
		return nil, fmt.Errorf("sim: scenario %s: duration must be > 0, got %v", sc.Name, sc.Duration)
	}
	var start units.Time
	if b.Wall != nil {
		start = b.Wall()
	}
	s, err := New(p, sc)
	if err != nil {
		return nil, err
	}
	// Chunks of 1/200 of the run keep cancellation and progress responsive without
	// costing anything measurable.
	chunk := max(sc.Duration/200, units.Microsecond)
	var runErr error
	for s.Now() < sc.Duration {
		if err := ctx.Err(); err != nil {
			runErr = err
			break
		}
		s.RunUntil(s.Now() + chunk)
		if opts.Progress != nil {
			opts.Progress(s.Now(), sc.Duration)
		}
		if opts.Observe != nil {
			opts.Observe(s.Now(), s.Results())
		}
	}
	run := s.Results()
	if b.Wall != nil {
		run.WallTime = b.Wall() - start
	}
	return run, runErr
}
