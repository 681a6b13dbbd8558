package fabric

import (
	"math/bits"

	"reef/units"
)

// Handler is a component the engine wakes at the time it asked for (htsim's
// EventSource.doNextEvent).
type Handler interface {
	Fire(now units.Time)
}

// Slot is one schedulable event: a component that is woken repeatedly (a node) keeps
// one Slot for its whole life and moves it with Set, so the hot path allocates nothing.
// The zero Slot is idle; fill H before the first Set.
type Slot struct {
	// H is woken when the slot's time comes.
	H Handler
	// Late makes the slot an observer of its instant (the sim's sampler): it fires
	// after every other event due at the same time, those scheduled while they fire
	// included, so what it reads is the state the instant ends in, whatever the order
	// of the events in it. Set it before the first Set.
	Late bool
	at   units.Time
	seq  uint64
	hi   int // position in the heap + 1 (0: no heap entry)
	qi   int // position in the now-queue + 1 (0: not in it)
	// parked marks a heap entry that is not the slot's pending event: the slot is
	// firing from it (at the top) or has moved to the now-queue. The entry stays, with
	// its old key, so that the slot's next Set moves it with one sift instead of a
	// removal and an insertion; Run drops a parked entry that reaches the top.
	parked bool
}

// Pending reports whether the slot is scheduled, and At its time.
func (s *Slot) Pending() bool { return s.qi != 0 || (s.hi != 0 && !s.parked) }

// At is the time the slot is scheduled for (meaningful while Pending).
func (s *Slot) At() units.Time { return s.at }

// Token identifies one event scheduled with Engine.At, for Cancel.
type Token = *Slot

// Engine is htsim's EventList as a value: a heap of events ordered by (time, insertion
// sequence), so ties fire in the order they were scheduled and a run is reproducible.
// Late slots come last among the events at their time (their sequence has lateBit
// set). The zero value is ready to use. Not safe for concurrent use.
//
// Events scheduled for the current time (a node woken by a frame that reaches it now)
// skip the heap: they go to a FIFO, the now-queue, which fires after the heap's events
// at now. That is exactly (time, sequence) order, because every heap event at now was
// scheduled before now was reached, so its sequence is lower.
//
// The heap is binary. The sim keeps one entry per node (about 40 on a k = 4 fat tree),
// and most re-arms sift a few levels down from the top; a 4-ary heap, tried on that
// mix, ran more instructions per packet-hop (3,639 against 3,599) and fewer hops per
// CPU-second (BenchmarkEngine, BenchmarkFatTreePermutation, 2026-11-25).
type Engine struct {
	now    units.Time
	seq    uint64
	q      []hent  // the heap, parked entries included
	parked int     // parked entries in q
	cur    []*Slot // the now-queue; nil entries were cancelled or moved
	head   int     // first entry of cur not yet fired
	ncur   int     // live entries in cur
}

// hent is a heap entry: the ordering key inline, so sifting compares without chasing
// the slot pointers.
type hent struct {
	at  units.Time
	seq uint64
	s   *Slot
}

// Now is the time of the event being fired (or of the last one).
func (e *Engine) Now() units.Time { return e.now }

// Len is the number of pending events.
func (e *Engine) Len() int { return len(e.q) - e.parked + e.ncur }

// At schedules h to fire once at t (at Now if t is in the past). It returns a token for
// Cancel.
func (e *Engine) At(t units.Time, h Handler) Token {
	s := &Slot{H: h}
	e.Set(s, t)
	return s
}

// Set schedules slot at t (at Now if t is in the past), moving it if it is pending.
// A moved slot gets a fresh sequence number: among events at the same time it fires
// after those scheduled before the move.
func (e *Engine) Set(s *Slot, t units.Time) {
	if t < e.now {
		t = e.now
	}
	e.seq++
	s.at, s.seq = t, e.seq
	if s.Late {
		s.seq |= lateBit
	}
	if s.qi != 0 {
		e.unqueue(s)
	}
	if t == e.now && !s.Late {
		if s.hi != 0 && !s.parked {
			s.parked = true
			e.parked++
		}
		e.cur = append(e.cur, s)
		e.ncur++
		s.qi = len(e.cur)
		return
	}
	if s.hi == 0 {
		e.q = append(e.q, hent{t, s.seq, s})
		s.hi = len(e.q)
		e.up(s.hi - 1)
		return
	}
	if s.parked {
		s.parked = false
		e.parked--
	}
	i := s.hi - 1
	e.q[i].at, e.q[i].seq = t, s.seq
	if !e.down(i) {
		e.up(i)
	}
}

// Cancel removes a pending event; it reports whether the event was still pending.
func (e *Engine) Cancel(s *Slot) bool {
	if s == nil || !s.Pending() {
		return false
	}
	if s.qi != 0 {
		e.unqueue(s) // a heap entry it has stays parked
	} else {
		e.remove(s.hi - 1)
	}
	return true
}

// unqueue takes s out of the now-queue.
func (e *Engine) unqueue(s *Slot) {
	e.cur[s.qi-1] = nil
	e.unqueue0(s)
}

// Reschedule moves a pending event to t; it returns false if it is not pending.
func (e *Engine) Reschedule(s *Slot, t units.Time) bool {
	if s == nil || !s.Pending() {
		return false
	}
	e.Set(s, t)
	return true
}

// Next is the time of the earliest pending event (units.Never when none). It drops the
// parked entries it finds at the top of the heap, as Step would.
func (e *Engine) Next() units.Time {
	if e.ncur > 0 {
		return e.now
	}
	for len(e.q) > 0 && e.q[0].s.parked {
		e.remove(0)
	}
	if len(e.q) == 0 {
		return units.Never
	}
	return e.q[0].at
}

// NextLate is Next, and whether the event due then is a Late slot's (only Late ones
// are left at that time then).
func (e *Engine) NextLate() (units.Time, bool) {
	t := e.Next()
	if e.ncur > 0 || len(e.q) == 0 {
		return t, false
	}
	return t, e.q[0].seq&lateBit != 0
}

// Run fires events in order until the next one is after until or none is left, and
// returns how many it fired. Now is until afterwards (if until is not Never).
func (e *Engine) Run(until units.Time) (fired uint64) {
	for e.Step(until) {
		fired++
	}
	if until != units.Never && until > e.now {
		e.now = until
	}
	return fired
}

// Step fires the earliest pending event if it is due at or before until, and reports
// whether it fired one. A driver that must stop between two events (a shard handing a
// frame to its I/O driver) steps; the sim runs.
func (e *Engine) Step(until units.Time) bool {
	for {
		var s *Slot
		switch {
		case len(e.q) > 0 && (e.ncur == 0 || e.q[0].at == e.now && e.q[0].seq < lateBit) && e.q[0].at <= until:
			s = e.q[0].s
			if s.parked { // the slot moved to the now-queue or was cancelled there
				e.remove(0)
				continue
			}
			// The top fires where it is, parked: nothing scheduled while it fires can
			// order before it (it is the least (time, sequence) pending), so it stays
			// at the top, and a handler that re-arms its own slot (every node does)
			// moves it with one sift-down instead of a removal and an insertion.
			s.parked = true
			e.parked++
			e.now = s.at
			s.H.Fire(s.at)
			if s.parked { // not re-armed past now: drop the entry (the top, unless moved)
				e.remove(s.hi - 1)
			}
			return true
		case e.ncur > 0 && e.now <= until:
			for e.cur[e.head] == nil {
				e.head++
			}
			s = e.cur[e.head]
			e.cur[e.head] = nil
			e.head++
			e.unqueue0(s)
			e.now = s.at
			s.H.Fire(s.at)
			return true
		default:
			return false
		}
	}
}

// unqueue0 finishes taking s, already cleared from its entry, off the now-queue.
func (e *Engine) unqueue0(s *Slot) {
	e.ncur--
	s.qi = 0
	if e.ncur == 0 {
		e.cur, e.head = e.cur[:0], 0
	}
}

// lateBit is set in the sequence of a Late slot's event: it orders after every other
// event at its time (sequences stay far below 2⁶³).
const lateBit = 1 << 63

// before reports whether a orders before b: earlier, or as early and scheduled first.
func before(a, b *hent) bool { return beforeBit(a, b) != 0 }

// beforeBit is before as 1 or 0, without a branch: the borrow of (at, seq) − (at, seq)
// as one 128-bit number (times are never negative). The sifts' comparisons are coin
// flips, so a mispredicted branch would cost more than the comparison.
func beforeBit(a, b *hent) uint64 {
	_, borrow := bits.Sub64(a.seq, b.seq, 0)
	_, borrow = bits.Sub64(uint64(a.at), uint64(b.at), borrow)
	return borrow
}

// up moves e.q[j] towards the root to its place. The sifts move a hole rather than
// swapping, so every entry passed over is written (and its slot's index) once.
func (e *Engine) up(j int) {
	x := e.q[j]
	for j > 0 {
		i := (j - 1) / 2
		p := &e.q[i]
		if !before(&x, p) {
			break
		}
		e.q[j] = *p
		p.s.hi = j + 1
		j = i
	}
	e.q[j] = x
	x.s.hi = j + 1
}

// down moves e.q[i0] towards the leaves to its place and reports whether it moved.
func (e *Engine) down(i0 int) bool {
	q := e.q
	n := len(q)
	x := q[i0]
	i := i0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n {
			j += int(beforeBit(&q[r], &q[l]))
		}
		c := &q[j]
		if !before(c, &x) {
			break
		}
		q[i] = *c
		c.s.hi = i + 1
		i = j
	}
	if i == i0 {
		return false
	}
	q[i] = x
	x.s.hi = i + 1
	return true
}

// remove takes entry i out of the heap (a parked one included).
func (e *Engine) remove(i int) {
	n := len(e.q) - 1
	if s := e.q[i].s; s.parked {
		s.parked = false
		e.parked--
	}
	e.q[i].s.hi = 0
	if i != n {
		e.q[i] = e.q[n]
		e.q[i].s.hi = i + 1
	}
	e.q[n] = hent{}
	e.q = e.q[:n]
	if i != n {
		if !e.down(i) {
			e.up(i)
		}
	}
}
