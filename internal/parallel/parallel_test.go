package parallel

import (
	"sync/atomic"
	"testing"
)

// Each calls every piece exactly once and returns after the last, for any number of
// workers, more workers than pieces and none included.
func TestEach(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 2}, {1, 1}, {5, 1}, {5, 2}, {5, 3}, {3, 8}, {16, 0}} {
		calls := make([]atomic.Int32, tc.n)
		Each(tc.n, tc.workers, func(i int) { calls[i].Add(1) })
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Errorf("n %d, %d workers: piece %d called %d times; want once", tc.n, tc.workers, i, c)
			}
		}
	}
}
