package emulator

import "sync"

// UpProgress is how far bringing a lab up has come in one of its stages.
type UpProgress struct {
	// Stage is what is being made: "nodes" (namespaces or containers), "links" (veth
	// pairs), "hosts" (addresses, routes, shaping) or "switch daemons" (ready).
	Stage string
	// Done of Total are made.
	Done, Total int
}

// An UpCounter reports the steps of bringing a lab up to a callback, from whichever
// goroutine makes them, one call at a time. With a nil callback it reports nothing.
type UpCounter struct {
	mu sync.Mutex
	fn func(UpProgress)
}

// NewUpCounter reports to fn (nil: nowhere).
func NewUpCounter(fn func(UpProgress)) *UpCounter { return &UpCounter{fn: fn} }

// Count returns step, the i-th of total steps of stage, reporting each step that
// succeeds; the stage is reported at 0 of total at once.
func (c *UpCounter) Count(stage string, total int, step func(i int) error) func(i int) error {
	if c == nil || c.fn == nil {
		return step
	}
	c.report(UpProgress{Stage: stage, Total: total})
	done := 0
	return func(i int) error {
		if err := step(i); err != nil {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		done++
		c.fn(UpProgress{Stage: stage, Done: done, Total: total})
		return nil
	}
}

func (c *UpCounter) report(p UpProgress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fn(p)
}
