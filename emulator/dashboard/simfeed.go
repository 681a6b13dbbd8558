package dashboard

import (
	"context"
	"time"

	"reef/emulator/sim"
	"reef/units"
)

// PushEvery is the least wall time between two pushes of RunSim: a page shows at most a
// few updates a second, so pushing more often would only cost the data plane.
const PushEvery = 40 * time.Millisecond

// RunSim drives s up to until in chunks of simulated time, pushing its results into f
// after a chunk when PushEvery has passed since the last push, and after the last
// chunk; then it marks f finished. pace, when positive, is the least wall time a chunk
// takes (RunSim sleeps the rest), so a fast simulation can be watched; zero runs flat
// out. It stops early, returning ctx.Err(), when ctx is cancelled. A push costs
// O(flows + ports): sim.(*Sim).Results copies the records and counters, not the samples.
func RunSim(ctx context.Context, s *sim.Sim, f *Feed, until, chunk units.Time, pace time.Duration) error {
	if chunk <= 0 {
		chunk = units.Millisecond
	}
	defer f.Finish()
	var last time.Time
	pushed := units.Time(-1)
	defer func() {
		if s.Now() != pushed {
			f.Push(s.Now(), s.Results())
		}
	}()
	for s.Now() < until {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		prev := s.Now()
		s.RunUntil(min(prev+chunk, until))
		if s.Now() == prev {
			break // the scenario ended before until
		}
		if time.Since(last) >= PushEvery {
			f.Push(s.Now(), s.Results())
			pushed, last = s.Now(), time.Now()
		}
		if rest := pace - time.Since(start); pace > 0 && rest > 0 {
			t := time.NewTimer(rest)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
	return nil
}
