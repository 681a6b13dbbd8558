package switchd

import (
	"reef/internal/hist"
	"reef/units"
)

// egress is one port's output side: a byte-counted FIFO with tail drop feeding a line
// whose schedule is computed, never slept, followed by the link's delay line.
//
// The ring q holds the delay line and the queue back to back: q[0:ndep] have departed
// and wait for their Due (dep + delay, so the line stays in order); q[ndep:] are queued.
// The head of the queue is scheduled (start and dep computed) only once the line is
// free for it, which is when earlier events (PFC pauses, rate changes) can no longer
// change its start: departures are computed lazily but always from computed times.
//
// Serialisation uses cumulative bytes per busy period (style anchor 2):
// dep = busyStart + rate.TxTime(busyBytes), so rounding never accumulates.
type egress struct {
	// The schedule's state, read on every event, comes first (see port).
	q       ring
	ndep    int  // q[0:ndep] departed, in the delay line
	sched   bool // q[ndep] is scheduled
	newBusy bool // the rate changed: the next packet starts a new period
	ctl     ring // pause frames to send upstream: not queued, only delayed
	delay   units.Time
	last    units.Time // departure of the last scheduled packet

	pauseUntil units.Time // the end of the PFC pause in force, or of the last one

	busyStart units.Time  // start of the current busy period
	busyBytes units.Bytes // bytes scheduled in it so far
	rate      units.Rate
	qbytes    units.Bytes // bytes in q[ndep:]
	cap       units.Bytes
	mtu       int // largest frame the port sends
	mark      marker

	pauseFrom units.Time // the start of the PFC pause in force, or of the last one
	pauseDone units.Time // total length of earlier pauses

	txPackets, txBytes uint64
	waited             units.Time // total queueing delay (start − arrival) of the departed
	idle               units.Time // total of the closed gaps with nothing queued (see idleTime)
	marks              uint64
	maxQ               units.Bytes
	// late and skew are out of line (8 KB would spread the hot fields of the ports),
	// and nil until a value that is not 0 comes (histOf) or Prefault allocates them:
	// the sim records nothing else, and 10,000 ports would hold 80 MB of empty buckets.
	late, skew *hist.Durations
	// late0 and skew0 count the zeros not yet handed to late and skew (lateness):
	// every value on the sim, most on time elsewhere, so the histograms' lines are
	// touched only for the values that are not 0.
	late0, skew0 uint64
	lastArr      units.Time // the latest arrival enqueued
	// maxBehind is the most any frame's arrival has been earlier than lastArr when it
	// was enqueued (0 unless a driver read frames late and out of order): every frame
	// queued after one that arrived at t arrived at t − maxBehind or later.
	maxBehind units.Time
}

// displaced returns how much later than its arrival at allows a frame arriving at is
// scheduled because it is enqueued only now, behind the frames that arrived after it:
// their serialisation at the port's rate. Only frames still in the ring count (those
// released already are not seen), and at most 64 are looked at.
func (e *egress) displaced(at units.Time) units.Time {
	var b units.Bytes
	for i, n := e.q.len()-1, 0; i >= 0 && n < 64; i, n = i-1, n+1 {
		p := e.q.at(i)
		if p.t <= at {
			break
		}
		b += units.Bytes(p.n)
	}
	return e.rate.TxTime(b)
}

// next computes, without changing anything, when the queue's head would start and
// depart if no pause or rate change intervened. ok is false when the queue is empty.
func (e *egress) next(h *pkt) (start, dep units.Time) {
	start = max(h.t, e.last, e.pauseUntil)
	bs, bb := e.busyStart, e.busyBytes
	if start > e.last || e.newBusy {
		bs, bb = start, 0
	}
	return start, bs + e.rate.TxTime(bb+units.Bytes(h.n))
}

// schedule schedules the queue's head if the line is free for it by x, and returns its
// departure (units.Never when there is nothing to send by x).
func (e *egress) schedule(x units.Time) units.Time {
	if e.sched {
		return e.q.at(e.ndep).dep
	}
	if e.ndep == e.q.len() {
		return units.Never
	}
	h := e.q.at(e.ndep)
	start := max(h.t, e.last, e.pauseUntil)
	if start > x {
		return units.Never
	}
	if start > e.last || e.newBusy {
		e.busyStart, e.busyBytes, e.newBusy = start, 0, false
		// The line was free since the last departure and nothing was queued until h
		// arrived (a pause after that is not idle: the port had something to send).
		e.idle += max(0, h.t-e.last)
	}
	e.busyBytes += units.Bytes(h.n)
	h.start = start
	h.dep = e.busyStart + e.rate.TxTime(e.busyBytes)
	e.last, e.sched = h.dep, true
	return h.dep
}

// idleTime is how long, up to now, the line has had nothing to send on the computed
// schedule: every gap from a departure that left the queue empty to the next arrival
// (since time 0), the gap still open at now included. A frame read late, arriving
// earlier than a now already reported, shortens the open gap it closes: idleTime may
// then go back by as much as the frame was late.
func (e *egress) idleTime(now units.Time) units.Time {
	if e.sched {
		return e.idle // the head's gap is counted
	}
	end := now
	if e.ndep < e.q.len() {
		end = min(end, e.q.at(e.ndep).t) // the head waits (paused): idle until it came
	}
	return e.idle + max(0, end-e.last)
}

// pause applies a PFC frame received at t: quanta × 512 bit times at the port's rate,
// replacing any pause in force; 0 resumes.
func (e *egress) pause(t units.Time, quanta uint16) {
	active := e.pauseUntil > t
	if quanta == 0 {
		if active {
			e.pauseUntil = t
		}
		return
	}
	until := t + e.rate.TxTime(units.Bytes(quanta)*64)
	if !active {
		e.pauseDone += e.pauseUntil - e.pauseFrom
		e.pauseFrom = t
	}
	e.pauseUntil = until
}

// pauseTime is the total time the port has been paused up to now.
func (e *egress) pauseTime(now units.Time) units.Time {
	return e.pauseDone + max(0, min(now, e.pauseUntil)-e.pauseFrom)
}

// nextOut is the Due of the port's next frame out among those that have left the
// switch (Never: none), and whether it is a pause frame: a port's pause frames go
// before its data at equal times.
func (e *egress) nextOut() (due units.Time, ctl bool) {
	due = units.Never
	if e.ctl.n > 0 {
		due, ctl = e.ctl.at(0).due, true
	}
	if e.ndep > 0 {
		if d := e.q.at(0).due; d < due {
			due, ctl = d, false
		}
	}
	return due, ctl
}

// queueDelay is how long a frame arriving at now would wait before its serialisation
// starts, if no pause or rate change intervened. now may be in the past (a frame read
// late): the frames that have departed since then count as far as the line's last
// departure tells.
func (e *egress) queueDelay(now units.Time) units.Time {
	if e.ndep == e.q.len() {
		// Nothing queued; a now in the past may still fall before the last departure.
		return max(0, max(e.last, e.pauseUntil)-now)
	}
	free := max(e.last, e.pauseUntil) // the line is free for the unscheduled rest
	rest := e.qbytes
	if e.sched {
		rest -= units.Bytes(e.q.at(e.ndep).n)
	} else {
		free = max(free, e.q.at(e.ndep).t)
	}
	return max(0, free+e.rate.TxTime(rest)-now)
}

// histOf is *h, allocated if it is nil.
func histOf(h **hist.Durations) *hist.Durations {
	if *h == nil {
		*h = new(hist.Durations)
	}
	return *h
}

// lateness summarises the release lateness and the schedule skew of the frames so far.
// A histogram never allocated holds only the zeros counted in late0 or skew0; the
// others get their zeros first.
func (e *egress) lateness() (late, skew hist.Summary) {
	return summaryOf(e.late, &e.late0), summaryOf(e.skew, &e.skew0)
}

// summaryOf summarises h after handing it the zeros counted in *zeros (h nil: those
// zeros are all there is, and stay counted there).
func summaryOf(h *hist.Durations, zeros *uint64) hist.Summary {
	if h == nil {
		return hist.Summary{Count: *zeros}
	}
	h.AddZeros(*zeros)
	*zeros = 0
	return h.Summary()
}
