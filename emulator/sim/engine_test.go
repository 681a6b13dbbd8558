package sim

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
