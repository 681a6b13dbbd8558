package afpacket

import (
	"fmt"
	_ "unsafe" // for go:linkname

	"golang.org/x/sys/unix"

	"reef/units"
)

// Clock reads the lab's time: CLOCK_MONOTONIC nanoseconds minus the lab's epoch. Every
// daemon of a lab gets the same epoch, so their clocks agree to the nanosecond. Now goes
// through the vDSO (the Go runtime's monotonic clock), not a system call.
type Clock struct {
	epoch int64 // CLOCK_MONOTONIC ns at lab time 0
	// realOff is CLOCK_REALTIME − CLOCK_MONOTONIC in ns, to read the kernel's receive
	// timestamps (which are CLOCK_REALTIME) as lab time; Resync refreshes it.
	realOff int64
	// wire is lab time 0 on the clock release trailers carry (SetWireEpoch).
	wire int64
	// wireSet is whether SetWireEpoch was called (else the wire clock is CLOCK_MONOTONIC).
	wireSet bool
}

// nanotime is the Go runtime's monotonic clock: CLOCK_MONOTONIC in ns, read through the
// vDSO. It is the clock time.Now's monotonic reading comes from, without the process's
// start offset. (The runtime keeps it for linkname, go.dev/issue/67401.) Pairing a
// time.Now with a clock_gettime instead puts whatever separated the two reads into
// every later reading: under load that was up to 4 ms either way, which moved every
// arrival a daemon clamps to its clock (see Driver.drain) and every release.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// NewClock returns a clock whose zero is the CLOCK_MONOTONIC instant epoch (ns).
func NewClock(epoch int64) (*Clock, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return nil, fmt.Errorf("afpacket: clock_gettime: %w", err)
	}
	c := &Clock{epoch: epoch}
	c.Resync()
	return c, nil
}

// Resync re-measures the offset between CLOCK_REALTIME and CLOCK_MONOTONIC (it moves
// when NTP steps or slews the real-time clock). It takes the tightest of a few paired
// readings.
func (c *Clock) Resync() {
	best, bestGap := int64(0), int64(1<<62)
	for range 5 {
		var m1, r, m2 unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &m1)
		_ = unix.ClockGettime(unix.CLOCK_REALTIME, &r)
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &m2)
		if gap := m2.Nano() - m1.Nano(); gap < bestGap {
			best, bestGap = r.Nano()-(m1.Nano()+gap/2), gap
		}
	}
	c.realOff = best
}

// FromRealtime converts a CLOCK_REALTIME instant (seconds and nanoseconds, as the
// kernel stamps received frames) to lab time.
func (c *Clock) FromRealtime(sec, nsec uint32) units.Time {
	return units.Time(int64(sec)*1e9 + int64(nsec) - c.realOff - c.epoch)
}

// MonotonicNow returns CLOCK_MONOTONIC in ns (a system call; use it to pick an epoch).
func MonotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for CLOCK_MONOTONIC
	return ts.Nano()
}

// Now returns the lab time.
func (c *Clock) Now() units.Time {
	return units.Time(nanotime() - c.epoch)
}

// Epoch returns the CLOCK_MONOTONIC instant (ns) of lab time 0.
func (c *Clock) Epoch() int64 { return c.epoch }

// SetWireEpoch sets lab time 0 on the clock the release trailers carry. By default that
// clock is CLOCK_MONOTONIC, which every daemon of a one-machine lab shares whatever its
// epoch (a switch's is its lab's, a host's its run's). Machines' monotonic clocks do
// not agree, so the daemons of a lab spread over machines carry the lab's shared start
// time instead (emulator/swarm): a frame's Due on the wire is then the same instant on
// both sides of a tunnel, up to the machines' clock offset.
func (c *Clock) SetWireEpoch(w int64) { c.wire, c.wireSet = w, true }

// WireEpoch returns lab time 0 on the trailers' clock (Epoch unless SetWireEpoch).
func (c *Clock) WireEpoch() int64 {
	if c.wireSet {
		return c.wire
	}
	return c.epoch
}
