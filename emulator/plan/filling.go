package plan

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"reef/units"
)

// Filling is the water-filling of a set of placed flows (MaxMinOf), kept so that the
// share one more flow would get among them (With) costs a look at the links it
// crosses instead of a filling of the set again: a run's analysis asks that of every
// short message against the bulk flows active at its start.
//
// The filling runs as events in order of the level every unfrozen flow has reached: a
// link saturates at the level where its frozen flows' load plus its unfrozen flows'
// weight times the level reaches its rate, a flow with a demand stops there. Each
// event freezes flows and moves the levels of the links they cross, so a filling
// costs O(u log l) for u link crossings over l links, not a round over every link
// and flow per distinct level.
type Filling struct {
	p     *Plan
	rate  []float64 // per flow
	dense []int32   // directed link → 1 + its index into links (0: no flow crosses it)
	links []fillLink
	// users holds every link's users, link by link (see fillLink).
	users []linkUser
	// Refill's workspace, kept for the next.
	frozen           []bool
	heap             []int32 // links by level, a binary min-heap (fillLink.pos)
	demands, touched []int32
}

// fillLink is one directed link the filled flows cross.
type fillLink struct {
	link     int32 // its directed link index
	capacity float64
	// users are the flows crossing it and their weight on it: Filling.users[from:to].
	from, to int32
	// During the filling: loaded is the frozen flows' load, weight the unfrozen
	// flows' total weight, level where the link saturates if nothing else freezes
	// first, pos its place in the heap (−1: out), touched a change the current event
	// made.
	loaded, weight, level float64
	pos                   int32
	touched               bool
	// byRate is set once With asks about the link (see prefixes).
	byRate *ratePrefix
}

// ratePrefix is a link's users by rate, with prefix sums of weight·rate and weight:
// sumWR[k] and sumW[k] over the k slowest.
type ratePrefix struct {
	rate        []float64
	sumWR, sumW []float64
}

// linkUser is one flow crossing a link.
type linkUser struct {
	flow int32
	w    float64
}

// fillEps is the weight below which a link has no unfrozen flow left (weights are
// sums and differences of traffic shares).
const fillEps = 1e-9

// Fill water-fills flows placed on p.
func Fill(p *Plan, flows []*Placed) *Filling { return new(Filling).Refill(p, flows) }

// Refill water-fills flows placed on p into f, reusing the storage of f's last
// filling (which it replaces), and returns f: a caller filling many sets in turn
// allocates next to nothing.
func (f *Filling) Refill(p *Plan, flows []*Placed) *Filling {
	if f.p != p || len(f.dense) != 2*len(p.Links) {
		f.dense = make([]int32, 2*len(p.Links))
	} else {
		for _, l := range f.links {
			f.dense[l.link] = 0
		}
	}
	f.p = p
	f.rate = resize(f.rate, len(flows))
	f.frozen = resize(f.frozen, len(flows))
	// The links the flows cross, each once, then every link's users in one block.
	f.links = f.links[:0]
	n := 0
	for _, fl := range flows {
		for _, u := range fl.uses {
			if f.dense[u.link] == 0 {
				f.links = append(f.links, fillLink{link: int32(u.link), capacity: float64(p.Links[u.link/2].Rate)})
				f.dense[u.link] = int32(len(f.links))
			}
			f.links[f.dense[u.link]-1].to++ // counted here, placed below
			n++
		}
	}
	at := int32(0)
	for j := range f.links {
		l := &f.links[j]
		l.from, l.to, at = at, at, at+l.to
	}
	f.users = resize(f.users, n)
	for i, fl := range flows {
		for _, u := range fl.uses {
			l := &f.links[f.dense[u.link]-1]
			f.users[l.to] = linkUser{int32(i), u.w}
			l.to++
			l.weight += u.w
		}
	}
	f.demands = f.demands[:0]
	for i, fl := range flows {
		f.rate[i], f.frozen[i] = 0, false
		switch {
		case fl.demand > 0:
			f.demands = append(f.demands, int32(i))
		case len(fl.uses) == 0:
			f.frozen[i] = true // cannot happen for a routed flow: nothing would stop it
		}
	}
	slices.SortFunc(f.demands, func(a, b int32) int { return cmp.Compare(flows[a].demand, flows[b].demand) })
	f.heap = f.heap[:0]
	for j := range f.links {
		l := &f.links[j]
		l.pos = -1
		if l.weight > fillEps {
			l.level, l.pos = l.capacity/l.weight, int32(len(f.heap))
			f.heap = append(f.heap, int32(j))
		}
	}
	for i := len(f.heap)/2 - 1; i >= 0; i-- {
		f.down(i)
	}
	// Each event, the lowest of the next demand and the heap's lowest link, freezes
	// flows at its level; the links they cross then get their new levels.
	freeze := func(i int, level float64) {
		f.frozen[i], f.rate[i] = true, level
		for _, u := range flows[i].uses {
			j := f.dense[u.link] - 1
			l := &f.links[j]
			l.loaded += u.w * level
			l.weight -= u.w
			if !l.touched {
				l.touched = true
				f.touched = append(f.touched, j)
			}
		}
	}
	next := 0 // into demands
	for {
		for next < len(f.demands) && f.frozen[f.demands[next]] {
			next++
		}
		var level float64
		switch {
		case next < len(f.demands) && (len(f.heap) == 0 || float64(flows[f.demands[next]].demand) < f.links[f.heap[0]].level):
			i := int(f.demands[next])
			level = float64(flows[i].demand)
			freeze(i, level)
		case len(f.heap) > 0:
			l := &f.links[f.heap[0]]
			level = l.level
			f.remove(0)
			for _, u := range f.users[l.from:l.to] {
				if !f.frozen[u.flow] {
					freeze(int(u.flow), level)
				}
			}
		default:
			return f
		}
		for _, j := range f.touched {
			l := &f.links[j]
			l.touched = false
			switch {
			case l.weight > fillEps && l.pos >= 0:
				l.level = max(level, (l.capacity-l.loaded)/l.weight)
				f.down(f.up(int(l.pos)))
			case l.pos >= 0:
				f.remove(int(l.pos))
			}
		}
		f.touched = f.touched[:0]
	}
}

// resize returns s with length n, reallocated only when its capacity is short.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// up moves the heap's entry at i towards the root while it is lower than its parent,
// and returns where it ends.
func (f *Filling) up(i int) int {
	for i > 0 {
		parent := (i - 1) / 2
		if f.links[f.heap[parent]].level <= f.links[f.heap[i]].level {
			break
		}
		f.swap(i, parent)
		i = parent
	}
	return i
}

// down moves the heap's entry at i towards the leaves while a child is lower.
func (f *Filling) down(i int) {
	for n := len(f.heap); ; {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && f.links[f.heap[c+1]].level < f.links[f.heap[c]].level {
			c++
		}
		if f.links[f.heap[i]].level <= f.links[f.heap[c]].level {
			return
		}
		f.swap(i, c)
		i = c
	}
}

// swap exchanges the heap's entries at i and k.
func (f *Filling) swap(i, k int) {
	h := f.heap
	h[i], h[k] = h[k], h[i]
	f.links[h[i]].pos, f.links[h[k]].pos = int32(i), int32(k)
}

// remove takes the heap's entry at i out.
func (f *Filling) remove(i int) {
	last := len(f.heap) - 1
	f.links[f.heap[i]].pos = -1
	if i != last {
		f.heap[i] = f.heap[last]
		f.links[f.heap[i]].pos = int32(i)
	}
	f.heap = f.heap[:last]
	if i != last {
		f.down(f.up(i))
	}
}

// Rates is every flow's max-min fair rate, in Fill's order, rounded to the nearest
// bit/s.
func (f *Filling) Rates() []units.Rate {
	out := make([]units.Rate, len(f.rate))
	for i, r := range f.rate {
		out[i] = units.Rate(math.Round(r))
	}
	return out
}

// With is the rate flow m would get filled together with the filling's flows (as
// MaxMinOf of them and m would give m), rounded to the nearest bit/s.
//
// Until m freezes, the joint filling is the filling's own: only a link m crosses
// could part them, and such a link saturating freezes m. So m freezes at the lowest
// level at which one of its links, loaded by the filling's flows as they were at that
// level (each flow at the lesser of its rate and the level) plus m's share of the
// level, reaches its rate; or at its demand.
func (f *Filling) With(m *Placed) units.Rate {
	if len(m.uses) == 0 && m.demand == 0 {
		return 0 // as Fill: nothing would stop it
	}
	level := math.Inf(1)
	if m.demand > 0 {
		level = float64(m.demand)
	}
	for _, u := range m.uses {
		if u.w <= fillEps {
			continue
		}
		if j := f.dense[u.link]; j > 0 {
			level = min(level, f.saturation(&f.links[j-1], u.w))
		} else {
			level = min(level, float64(f.p.Links[u.link/2].Rate)/u.w)
		}
	}
	return units.Rate(math.Round(level))
}

// saturation is the level at which link l saturates when a flow of weight w on it
// joins the filling (see With).
func (f *Filling) saturation(l *fillLink, w float64) float64 {
	if l.byRate == nil {
		l.byRate = f.prefixes(l)
	}
	r := l.byRate
	// At the level of the k-th slowest user (the k slowest frozen by then) the link
	// carries sumWR[k] + (total − sumW[k] + w)·level, increasing in k: it saturates
	// between the last such level within its rate and the next.
	n := len(r.rate)
	total := r.sumW[n]
	loadAt := func(k int) float64 {
		level := 0.0
		if k > 0 {
			level = r.rate[k-1]
		}
		return r.sumWR[k] + (total-r.sumW[k]+w)*level
	}
	k := sort.Search(n+1, func(k int) bool { return loadAt(k) > l.capacity }) - 1
	return max(0, (l.capacity-r.sumWR[k])/(total-r.sumW[k]+w))
}

// prefixes sorts l's users by rate and sums them, for saturation.
func (f *Filling) prefixes(l *fillLink) *ratePrefix {
	type user struct{ rate, w float64 }
	us := make([]user, 0, l.to-l.from)
	for _, u := range f.users[l.from:l.to] {
		us = append(us, user{f.rate[u.flow], u.w})
	}
	slices.SortFunc(us, func(a, b user) int { return cmp.Compare(a.rate, b.rate) })
	r := &ratePrefix{rate: make([]float64, len(us)), sumWR: make([]float64, len(us)+1), sumW: make([]float64, len(us)+1)}
	for k, u := range us {
		r.rate[k] = u.rate
		r.sumWR[k+1] = r.sumWR[k] + u.w*u.rate
		r.sumW[k+1] = r.sumW[k] + u.w
	}
	return r
}
