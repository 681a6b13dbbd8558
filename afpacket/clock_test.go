package afpacket

import "testing"

// TestClockIsMonotonic: Now is CLOCK_MONOTONIC minus the epoch to the nanosecond,
// bracketed by clock_gettime readings taken around it, every time (a clock made from a
// paired reading was off by what separated the pair, milliseconds under load).
func TestClockIsMonotonic(t *testing.T) {
	const epoch = 1_000_000
	c, err := NewClock(epoch)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100000 {
		m1 := MonotonicNow()
		now := int64(c.Now()) + epoch
		m2 := MonotonicNow()
		if now < m1 || now > m2 {
			t.Fatalf("reading %d: Now + epoch = %d, outside [%d, %d] read around it", i, now, m1, m2)
		}
	}
}
