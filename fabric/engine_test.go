package fabric

import (
	"math/rand/v2"
	"slices"
	"testing"

	"reef/units"
)

type rec struct {
	id  int
	log *[]int
	at  *[]units.Time
}

func (r rec) Fire(now units.Time) { *r.log = append(*r.log, r.id); *r.at = append(*r.at, now) }

func TestEngineOrdersByTimeThenInsertion(t *testing.T) {
	var e Engine
	var log []int
	var at []units.Time
	times := []units.Time{30, 10, 20, 10, 30, 0}
	for i, tt := range times {
		e.At(tt, rec{i, &log, &at})
	}
	if n := e.Run(units.Never); n != uint64(len(times)) {
		t.Fatalf("fired %d, want %d", n, len(times))
	}
	// ties (10: events 1 and 3; 30: events 0 and 4) fire in insertion order
	if want := []int{5, 1, 3, 2, 0, 4}; !slices.Equal(log, want) {
		t.Fatalf("order %v, want %v", log, want)
	}
	if !slices.IsSorted(at) {
		t.Fatalf("times not monotone: %v", at)
	}
}

func TestEngineCancelReschedule(t *testing.T) {
	var e Engine
	var log []int
	var at []units.Time
	a := e.At(10, rec{1, &log, &at})
	b := e.At(20, rec{2, &log, &at})
	e.At(30, rec{3, &log, &at})
	if !e.Cancel(a) || e.Cancel(a) {
		t.Fatal("cancel should succeed once")
	}
	if !e.Reschedule(b, 40) {
		t.Fatal("reschedule of a pending event failed")
	}
	e.Run(35)
	if !slices.Equal(log, []int{3}) || e.Now() != 35 {
		t.Fatalf("after Run(35): log %v now %v", log, e.Now())
	}
	e.Run(units.Never)
	if !slices.Equal(log, []int{3, 2}) || at[1] != 40 {
		t.Fatalf("log %v at %v", log, at)
	}
	if e.Reschedule(b, 50) {
		t.Fatal("reschedule of a fired event should fail")
	}
}

func TestEngineRandomMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var e Engine
	var log []int
	var at []units.Time
	type ev struct {
		t  units.Time
		id int
	}
	var want []ev
	toks := map[int]Token{}
	for i := range 2000 {
		tt := units.Time(r.IntN(500))
		toks[i] = e.At(tt, rec{i, &log, &at})
		want = append(want, ev{tt, i})
	}
	for i := 0; i < 2000; i += 7 {
		e.Cancel(toks[i])
	}
	want = slices.DeleteFunc(want, func(v ev) bool { return v.id%7 == 0 })
	slices.SortStableFunc(want, func(a, b ev) int { return int(a.t - b.t) })
	e.Run(units.Never)
	if len(log) != len(want) {
		t.Fatalf("fired %d want %d", len(log), len(want))
	}
	for i := range want {
		if log[i] != want[i].id {
			t.Fatalf("event %d: got id %d want %d", i, log[i], want[i].id)
		}
	}
}

// self reschedules itself at now+dt (dt 0: at now, through the now-queue) n times.
type self struct {
	e   *Engine
	s   Slot
	id  int
	dt  units.Time
	n   int
	log *[]int
}

func (x *self) Fire(now units.Time) {
	*x.log = append(*x.log, x.id)
	if x.n--; x.n > 0 {
		x.e.Set(&x.s, now+x.dt)
	}
}

// Events scheduled for now (the now-queue) fire after the heap's events at now, which
// were scheduled earlier, and in their own insertion order; moving or cancelling one
// takes it out of the queue.
func TestEngineNowQueueKeepsInsertionOrder(t *testing.T) {
	var e Engine
	var log []int
	a := &self{e: &e, id: 1, dt: 0, n: 3, log: &log}
	b := &self{e: &e, id: 2, dt: 10, n: 2, log: &log}
	c := &self{e: &e, id: 3, dt: 0, n: 1, log: &log}
	d := &self{e: &e, id: 4, dt: 0, n: 1, log: &log}
	for _, x := range []*self{a, b, c, d} {
		x.s.H = x
	}
	e.Set(&b.s, 10) // heap, fires at 10 and again at 20
	e.Set(&a.s, 0)  // now-queue: fires at 0 three times, re-queued behind c each time
	e.Set(&c.s, 0)
	e.Set(&d.s, 0)
	e.Set(&d.s, 10) // moved out of the now-queue: after b at 10
	if e.Len() != 4 || e.Next() != 0 {
		t.Fatalf("len %d next %v, want 4 and 0", e.Len(), e.Next())
	}
	e.Run(units.Never)
	if want := []int{1, 3, 1, 1, 2, 4, 2}; !slices.Equal(log, want) {
		t.Fatalf("order %v, want %v", log, want)
	}
	// A cancelled now-queue entry never fires.
	log = nil
	c.n = 1
	e.Set(&c.s, e.Now())
	e.Set(&a.s, e.Now())
	if !e.Cancel(&c.s) || c.s.Pending() {
		t.Fatal("cancel of a now-queue entry failed")
	}
	a.n = 1
	e.Run(units.Never)
	if want := []int{1}; !slices.Equal(log, want) {
		t.Fatalf("after cancel: %v, want %v", log, want)
	}
}

// selfCheck re-arms its own slot from inside Fire and records what the engine reports
// about the slot while it fires.
type selfCheck struct {
	e       *Engine
	slot    Slot
	next    units.Time // re-arm here (Never: do not)
	pending []bool
	lens    []int
	nexts   []units.Time
	cancels []bool
}

func (c *selfCheck) Fire(now units.Time) {
	c.pending = append(c.pending, c.slot.Pending())
	c.lens = append(c.lens, c.e.Len())
	c.nexts = append(c.nexts, c.e.Next())
	c.cancels = append(c.cancels, c.e.Cancel(&c.slot) || c.e.Reschedule(&c.slot, now+1))
	if c.next != units.Never {
		c.e.Set(&c.slot, c.next)
		c.next = units.Never
	}
}

// A slot firing from the top of the heap is not pending while it fires (Len, Next,
// Cancel and Reschedule see it as fired), and re-arming it from its own handler orders
// it exactly like a fresh insertion.
func TestEngineFiringSlotIsNotPending(t *testing.T) {
	var e Engine
	var log []int
	var at []units.Time
	c := &selfCheck{e: &e, next: 25}
	c.slot.H = c
	e.Set(&c.slot, 10)
	e.At(20, rec{1, &log, &at})
	e.At(25, rec{2, &log, &at}) // before the re-arm at 25: fires first
	e.At(30, rec{3, &log, &at})
	e.Run(units.Never)
	if !slices.Equal(c.pending, []bool{false, false}) || !slices.Equal(c.cancels, []bool{false, false}) {
		t.Fatalf("while firing: pending %v, cancel/reschedule %v; want all false", c.pending, c.cancels)
	}
	if !slices.Equal(c.lens, []int{3, 1}) || !slices.Equal(c.nexts, []units.Time{20, 30}) {
		t.Fatalf("while firing: Len %v, Next %v; want [3 1], [20 30]", c.lens, c.nexts)
	}
	if !slices.Equal(log, []int{1, 2, 3}) || !slices.Equal(at, []units.Time{20, 25, 30}) || e.Len() != 0 {
		t.Fatalf("log %v at %v len %d", log, at, e.Len())
	}
}

// chaos is a handler that, each time it fires, moves, cancels or re-arms random slots
// (its own included) at random times, now among them; model is the reference: the
// pending events by (time, sequence), the order the engine promises.
type chaos struct {
	id    int
	slot  Slot
	all   []*chaos
	e     *Engine
	r     *rand.Rand
	model map[int][2]uint64 // id → (time, sequence) of pending events
	seq   *uint64
	log   *[]int
	t     *testing.T
}

func (c *chaos) set(o *chaos, at units.Time) {
	c.e.Set(&o.slot, at)
	*c.seq++
	c.model[o.id] = [2]uint64{uint64(max(at, c.e.Now())), *c.seq}
}

func (c *chaos) Fire(now units.Time) {
	// the event that fires is the model's least (time, sequence)
	best, bk := -1, [2]uint64{^uint64(0), ^uint64(0)}
	for id, k := range c.model {
		if k[0] < bk[0] || (k[0] == bk[0] && k[1] < bk[1]) {
			best, bk = id, k
		}
	}
	if best != c.id || units.Time(bk[0]) != now {
		c.t.Fatalf("fired %d at %v, model wants %d at %v", c.id, now, best, units.Time(bk[0]))
	}
	delete(c.model, c.id)
	*c.log = append(*c.log, c.id)
	if len(*c.log) > 5000 {
		return
	}
	if c.r.IntN(4) != 0 {
		c.set(c, now+units.Time(c.r.IntN(3))) // re-arm itself, as a node does
	}
	for range c.r.IntN(4) {
		o := c.all[c.r.IntN(len(c.all))]
		switch c.r.IntN(6) {
		case 0:
			if c.e.Cancel(&o.slot) {
				delete(c.model, o.id)
			}
		case 1, 2:
			c.set(o, now) // now-queue
		default:
			c.set(o, now+units.Time(c.r.IntN(5))) // ties with pending events likely
		}
		if o.slot.Pending() != (c.model[o.id] != [2]uint64{}) {
			c.t.Fatalf("slot %d: pending %v, model %v", o.id, o.slot.Pending(), c.model[o.id])
		}
	}
	if n := len(c.model); c.e.Len() != n {
		c.t.Fatalf("Len %d, model %d", c.e.Len(), n)
	}
}

// Random moves, cancels and re-arms from inside handlers (the sim's pattern: a node
// re-arms itself and wakes its peers now or later) fire in (time, sequence) order.
func TestEngineChaosMatchesModel(t *testing.T) {
	for seed := range uint64(20) {
		var e Engine
		var log []int
		var seq uint64
		model := map[int][2]uint64{}
		r := rand.New(rand.NewPCG(seed, 7))
		all := make([]*chaos, 12)
		for i := range all {
			all[i] = &chaos{id: i + 1, all: all, e: &e, r: r, model: model, seq: &seq, log: &log, t: t}
			all[i].slot.H = all[i]
		}
		for _, c := range all {
			c.set(c, units.Time(r.IntN(3)))
		}
		e.Run(units.Never)
		if len(model) != 0 || e.Len() != 0 || len(log) < 100 {
			t.Fatalf("seed %d: %d fired, %d left in the model, Len %d", seed, len(log), len(model), e.Len())
		}
	}
}

// chain fires, then schedules next at the same instant (a node waking its peer).
type chain struct {
	e    *Engine
	id   int
	next Handler
	log  *[]int
}

func (c *chain) Fire(now units.Time) {
	*c.log = append(*c.log, c.id)
	if c.next != nil {
		c.e.At(now, c.next)
	}
}

// A Late slot fires after every other event at its time, those scheduled at that time
// while the instant runs (the now-queue) included, and before the next instant; late
// slots at one time keep their insertion order.
func TestEngineLateSlotEndsItsInstant(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   units.Time // when the late slots are set: before the run, or from an event at 10
	}{
		{"set before the run", 0},
		{"set during the instant", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e Engine
			var log []int
			var at []units.Time
			late1 := &Slot{H: rec{100, &log, &at}, Late: true}
			late2 := &Slot{H: rec{101, &log, &at}, Late: true}
			setLate := func() { e.Set(late1, 10); e.Set(late2, 10) }
			if tc.at == 0 {
				setLate()
			}
			third := &chain{e: &e, id: 3, log: &log}
			second := &chain{e: &e, id: 2, next: third, log: &log}
			e.At(10, &chain{e: &e, id: 1, next: second, log: &log})
			if tc.at != 0 {
				e.At(10, fireFunc(func(units.Time) { setLate() }))
			}
			e.At(11, rec{4, &log, &at})
			e.Run(units.Never)
			want := []int{1, 2, 3, 100, 101, 4}
			if !slices.Equal(log, want) {
				t.Fatalf("order %v, want %v", log, want)
			}
		})
	}
}

type fireFunc func(units.Time)

func (f fireFunc) Fire(now units.Time) { f(now) }

// rearm is a benchmark node: every time it fires it re-arms its one slot, at now with
// probability 1/2 (a frame handed on at its Due wakes the peer at once) and otherwise
// up to 100 µs later (its next departure), as the sim's nodes do.
type rearm struct {
	e    *Engine
	slot Slot
	r    *rand.Rand
	left *int
}

func (x *rearm) Fire(now units.Time) {
	if *x.left <= 0 {
		return
	}
	*x.left--
	d := units.Time(0)
	if x.r.Uint32()&1 == 0 {
		d = 1 + units.Time(x.r.IntN(int(100*units.Microsecond)))
	}
	x.e.Set(&x.slot, now+d)
}

// BenchmarkEngine is the engine alone on the sim's mix: 40 nodes (a k = 4 fat tree's
// switches and hosts) each keeping one slot armed, half of the re-arms at now.
func BenchmarkEngine(b *testing.B) {
	var e Engine
	r := rand.New(rand.NewPCG(1, 2))
	left := b.N
	nodes := make([]rearm, 40)
	for i := range nodes {
		x := &nodes[i]
		x.e, x.r, x.left = &e, r, &left
		x.slot.H = x
		e.Set(&x.slot, units.Time(r.IntN(int(100*units.Microsecond))))
	}
	b.ResetTimer()
	e.Run(units.Never)
}
