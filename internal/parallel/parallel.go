// Package parallel runs independent pieces of work on several goroutines: the
// executor the sim's core is handed to run a split lab's partitions at once (the core
// itself starts no goroutines; see internal/purity).
package parallel

import "sync"

// Each calls fn(i) for every i in [0, n), on up to workers goroutines (the caller's
// among them), and returns when every call has returned. Goroutine k of w runs i = k,
// k+w, k+2w, … in order, so a piece always runs on the same goroutine of a call with
// the same n and workers. workers ≤ 1 runs them in order on the caller's goroutine.
func Each(n, workers int, fn func(i int)) {
	w := min(workers, n)
	if w <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	wg.Add(w - 1)
	for k := 1; k < w; k++ {
		go func() {
			defer wg.Done()
			for i := k; i < n; i += w {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i += w {
		fn(i)
	}
	wg.Wait()
}
