package plan

import (
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
// costs O(u log u) for u link crossings, not a round over every link and flow per
// distinct level.
type Filling struct {
	p     *Plan
	rate  []float64 // per flow
	dense []int32   // directed link → 1 + its index into links (0: no flow crosses it)
	links []fillLink
	// users holds every link's users, link by link (fillLink.users indexes it).
	users []linkUser
}

// fillLink is one directed link the filled flows cross.
type fillLink struct {
	capacity float64
	// users are the flows crossing it and their weight on it: Filling.users[from:to].
	from, to int32
	// During the filling: loaded is the frozen flows' load, weight the unfrozen
	// flows' total weight, version counts changes (stale events are skipped), touched
	// marks a change the current event made.
	loaded, weight float64
	version        int32
	touched        bool
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

// fillEvent is a level at which a link may saturate (link ≥ 0, at the link's
// version) or flow −1−link reaches its demand.
type fillEvent struct {
	level   float64
	link    int32
	version int32
}

// fillQueue is a binary min-heap of events by level.
type fillQueue []fillEvent

func (q *fillQueue) push(e fillEvent) {
	*q = append(*q, e)
	q.up(len(*q) - 1)
}

func (q fillQueue) up(i int) {
	for i > 0 {
		up := (i - 1) / 2
		if q[up].level <= q[i].level {
			return
		}
		q[up], q[i] = q[i], q[up]
		i = up
	}
}

func (q fillQueue) down(i int) {
	for n := len(q); ; {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && q[c+1].level < q[c].level {
			c++
		}
		if q[i].level <= q[c].level {
			return
		}
		q[i], q[c] = q[c], q[i]
		i = c
	}
}

func (q *fillQueue) pop() fillEvent {
	h := *q
	e, n := h[0], len(h)-1
	h[0] = h[n]
	*q = h[:n]
	q.down(0)
	return e
}

// fillEps is the weight below which a link has no unfrozen flow left (weights are
// sums and differences of traffic shares).
const fillEps = 1e-9

// Fill water-fills flows placed on p.
func Fill(p *Plan, flows []*Placed) *Filling {
	f := &Filling{p: p, rate: make([]float64, len(flows)), dense: make([]int32, 2*len(p.Links))}
	// The links the flows cross, each once, then every link's users in one block.
	n := 0
	for _, fl := range flows {
		for _, u := range fl.uses {
			if f.dense[u.link] == 0 {
				f.links = append(f.links, fillLink{capacity: float64(p.Links[u.link/2].Rate)})
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
	f.users = make([]linkUser, n)
	for i, fl := range flows {
		for _, u := range fl.uses {
			l := &f.links[f.dense[u.link]-1]
			f.users[l.to] = linkUser{int32(i), u.w}
			l.to++
			l.weight += u.w
		}
	}
	frozen := make([]bool, len(flows))
	q := make(fillQueue, 0, len(f.links)+len(flows))
	for i, fl := range flows {
		switch {
		case fl.demand > 0:
			q = append(q, fillEvent{level: float64(fl.demand), link: int32(-1 - i)})
		case len(fl.uses) == 0:
			frozen[i] = true // cannot happen for a routed flow: nothing would stop it
		}
	}
	for j := range f.links {
		if l := &f.links[j]; l.weight > fillEps {
			q = append(q, fillEvent{level: l.capacity / l.weight, link: int32(j)})
		}
	}
	for i := len(q)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
	// An event freezes flows at its level; the links they cross get their new level
	// once the event is through.
	var touched []int32
	freeze := func(i int, level float64) {
		frozen[i], f.rate[i] = true, level
		for _, u := range flows[i].uses {
			j := f.dense[u.link] - 1
			l := &f.links[j]
			l.loaded += u.w * level
			l.weight -= u.w
			if !l.touched {
				l.touched = true
				touched = append(touched, j)
			}
		}
	}
	for len(q) > 0 {
		e := q.pop()
		if e.link < 0 {
			if i := int(-1 - e.link); !frozen[i] {
				freeze(i, e.level)
			}
		} else if l := &f.links[e.link]; e.version == l.version {
			for _, u := range f.users[l.from:l.to] {
				if !frozen[u.flow] {
					freeze(int(u.flow), e.level)
				}
			}
		} // else the link's level moved since
		for _, j := range touched {
			l := &f.links[j]
			l.touched = false
			l.version++
			if l.weight > fillEps {
				q.push(fillEvent{level: max(e.level, (l.capacity-l.loaded)/l.weight), link: j, version: l.version})
			}
		}
		touched = touched[:0]
	}
	return f
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
	slices.SortFunc(us, func(a, b user) int {
		switch {
		case a.rate < b.rate:
			return -1
		case a.rate > b.rate:
			return 1
		}
		return 0
	})
	r := &ratePrefix{rate: make([]float64, len(us)), sumWR: make([]float64, len(us)+1), sumW: make([]float64, len(us)+1)}
	for k, u := range us {
		r.rate[k] = u.rate
		r.sumWR[k+1] = r.sumWR[k] + u.w*u.rate
		r.sumW[k+1] = r.sumW[k] + u.w
	}
	return r
}
