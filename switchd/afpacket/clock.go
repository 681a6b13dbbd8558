package afpacket

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"reef/units"
)

// Clock reads the lab's time: CLOCK_MONOTONIC nanoseconds minus the lab's epoch. Every
// daemon of a lab gets the same epoch, so their clocks agree. Now goes through the vDSO
// (Go's monotonic clock), not a system call.
type Clock struct {
	epoch int64     // CLOCK_MONOTONIC ns at lab time 0
	mono0 int64     // CLOCK_MONOTONIC ns read when the clock was made
	t0    time.Time // Go's reading taken at the same moment
}

// NewClock returns a clock whose zero is the CLOCK_MONOTONIC instant epoch (ns).
func NewClock(epoch int64) (*Clock, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return nil, fmt.Errorf("afpacket: clock_gettime: %w", err)
	}
	return &Clock{epoch: epoch, mono0: ts.Nano(), t0: time.Now()}, nil
}

// MonotonicNow returns CLOCK_MONOTONIC in ns (a system call; use it to pick an epoch).
func MonotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for CLOCK_MONOTONIC
	return ts.Nano()
}

// Now returns the lab time.
func (c *Clock) Now() units.Time {
	return units.Time(c.mono0 + int64(time.Since(c.t0)) - c.epoch)
}

// Epoch returns the CLOCK_MONOTONIC instant (ns) of lab time 0.
func (c *Clock) Epoch() int64 { return c.epoch }
