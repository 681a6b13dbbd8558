package emulator

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// Steps made by many goroutines are each reported once, in order of completion, by one
// call at a time; failed steps are not counted.
func TestUpCounter(t *testing.T) {
	var got []UpProgress
	inCall := false
	c := NewUpCounter(func(p UpProgress) {
		if inCall {
			t.Error("two reports at once")
		}
		inCall = true
		got = append(got, p)
		inCall = false
	})
	fail := errors.New("step 3 fails")
	step := c.Count("links", 10, func(i int) error {
		if i == 3 {
			return fail
		}
		return nil
	})
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range 10 {
		wg.Go(func() { errs[i] = step(i) })
	}
	wg.Wait()
	if !errors.Is(errs[3], fail) {
		t.Errorf("step 3 returned %v, want its error", errs[3])
	}
	if len(got) != 10 || got[0] != (UpProgress{Stage: "links", Total: 10}) {
		t.Fatalf("reports %v, want 0 of 10 then one per successful step (9)", got)
	}
	for k, p := range got[1:] {
		if p != (UpProgress{Stage: "links", Done: k + 1, Total: 10}) {
			t.Errorf("report %d = %+v, want %d of 10", k+1, p, k+1)
		}
	}
	// without a callback the step is returned as is
	var nilc *UpCounter
	for _, c := range []*UpCounter{nilc, NewUpCounter(nil)} {
		if err := c.Count("nodes", 1, func(int) error { return context.Canceled })(0); err != context.Canceled {
			t.Errorf("uncounted step returned %v", err)
		}
	}
}
