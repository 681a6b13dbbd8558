// Package sim is reef's discrete-event backend: the whole lab runs in one goroutine on
// a virtual clock, driving exactly the same switchd.Switch pipelines, hostd.Host
// transports and cc algorithms as the real daemons. Links are not separate objects: a
// switch's egress schedule already computes serialisation and propagation, so a frame
// polled from a node at its Due time is handed to the peer node at that same instant.
//
// The core (Engine and the wiring in Sim) never reads a clock and never starts a
// goroutine: a run with the same plan, scenario and seed gives byte-identical results.
// Only the Backend.Run wrapper reads the wall clock, for progress reporting.
//
// # Usage
//
//	s, err := sim.New(p, sc)        // wire the plan, add the scenario's flows
//	s.RunUntil(sc.Duration)         // or Step in chunks for progress
//	run := s.Results()
//
// # Limitations
//
// One pending event per node (htsim's rule): a node's event is re-armed at its
// NextDeadline after every Receive and Poll, so the heap grows with the number of nodes,
// not packets.
package sim

import "reef/units"

// Handler is a component the engine wakes at the time it asked for (htsim's
// EventSource.doNextEvent).
type Handler interface {
	Fire(now units.Time)
}

// Token identifies one scheduled event, for Cancel.
type Token struct {
	seq uint64
	idx *int // where the event sits in the heap; -1 once fired or cancelled
}

type event struct {
	at  units.Time
	seq uint64
	h   Handler
	idx *int
}

// Engine is htsim's EventList as a value: a heap of events ordered by (time, insertion
// sequence), so ties fire in the order they were scheduled and a run is reproducible.
// The zero value is ready to use. Not safe for concurrent use.
type Engine struct {
	now units.Time
	seq uint64
	q   []event
}

// Now is the time of the event being fired (or of the last one).
func (e *Engine) Now() units.Time { return e.now }

// Len is the number of pending events.
func (e *Engine) Len() int { return len(e.q) }

// At schedules h to fire at t (at Now if t is in the past). It returns a token for
// Cancel.
func (e *Engine) At(t units.Time, h Handler) Token {
	if t < e.now {
		t = e.now
	}
	e.seq++
	idx := new(int)
	*idx = len(e.q)
	e.q = append(e.q, event{at: t, seq: e.seq, h: h, idx: idx})
	e.up(*idx)
	return Token{seq: e.seq, idx: idx}
}

// Cancel removes a pending event; it reports whether the event was still pending.
func (e *Engine) Cancel(tok Token) bool {
	if tok.idx == nil || *tok.idx < 0 {
		return false
	}
	i := *tok.idx
	e.remove(i)
	return true
}

// Reschedule moves a pending event to t (keeping its place among ties is not
// guaranteed: it gets a fresh sequence number). It returns false if tok is not pending.
func (e *Engine) Reschedule(tok *Token, t units.Time) bool {
	if tok.idx == nil || *tok.idx < 0 {
		return false
	}
	if t < e.now {
		t = e.now
	}
	i := *tok.idx
	e.seq++
	e.q[i].at, e.q[i].seq = t, e.seq
	tok.seq = e.seq
	if !e.down(i) {
		e.up(i)
	}
	return true
}

// Next is the time of the earliest pending event (units.Never when none).
func (e *Engine) Next() units.Time {
	if len(e.q) == 0 {
		return units.Never
	}
	return e.q[0].at
}

// Run fires events in order until the next one is after until or none is left, and
// returns how many it fired. Now is until afterwards (if until is not Never).
func (e *Engine) Run(until units.Time) (fired uint64) {
	for len(e.q) > 0 && e.q[0].at <= until {
		ev := e.q[0]
		e.remove(0)
		e.now = ev.at
		ev.h.Fire(ev.at)
		fired++
	}
	if until != units.Never && until > e.now {
		e.now = until
	}
	return fired
}

func (e *Engine) less(i, j int) bool {
	a, b := &e.q[i], &e.q[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (e *Engine) swap(i, j int) {
	e.q[i], e.q[j] = e.q[j], e.q[i]
	*e.q[i].idx = i
	*e.q[j].idx = j
}

func (e *Engine) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !e.less(j, i) {
			break
		}
		e.swap(i, j)
		j = i
	}
}

func (e *Engine) down(i0 int) bool {
	i, n := i0, len(e.q)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && e.less(r, l) {
			j = r
		}
		if !e.less(j, i) {
			break
		}
		e.swap(i, j)
		i = j
	}
	return i > i0
}

func (e *Engine) remove(i int) {
	n := len(e.q) - 1
	*e.q[i].idx = -1
	if i != n {
		e.q[i] = e.q[n]
		*e.q[i].idx = i
	}
	e.q[n] = event{}
	e.q = e.q[:n]
	if i != n {
		if !e.down(i) {
			e.up(i)
		}
	}
}
