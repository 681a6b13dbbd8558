package dashboard

import (
	"context"
	"time"

	"reef/emulator/sim"
	"reef/units"
)

// RunSim drives s up to until in chunks of simulated time, pushing its results into f
// after each chunk, then marks f finished. pace, when positive, is the least wall time a
// chunk takes (RunSim sleeps the rest), so a fast simulation can be watched; zero runs
// flat out. It stops early, returning ctx.Err(), when ctx is cancelled. A push costs
// O(flows + ports): sim.(*Sim).Results copies the records, not their samples.
func RunSim(ctx context.Context, s *sim.Sim, f *Feed, until, chunk units.Time, pace time.Duration) error {
	if chunk <= 0 {
		chunk = units.Millisecond
	}
	defer f.Finish()
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
		f.Push(s.Now(), s.Results())
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
