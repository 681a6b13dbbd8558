package switchd

import (
	"fmt"

	"reef/units"
)

// Every test of the package checks the cached event times (recomputed only for the
// ports touched since the last time) against a scan of every port.
func init() {
	checkNext = func(s *Switch) {
		if f := scanNext(s); f != s.nx {
			panic(fmt.Sprintf("switch %s: cached next %+v, scan of every port %+v", s.name, s.nx, f))
		}
	}
}

// scanNext computes next from scratch, port by port.
func scanNext(s *Switch) next {
	work, egwork, dl, out, due, ctl := units.Never, units.Never, units.Never, -1, units.Never, false
	for i := range s.ports {
		p := &s.ports[i]
		if p.in.n > 0 {
			t := p.in.at(0).t
			work, dl = min(work, t), min(dl, t)
		}
		dl = min(dl, p.pfc.refreshAt)
		if s.pfc {
			work = min(work, p.pfc.refreshAt)
		}
		e := &p.eg
		if e.ctl.n > 0 {
			d := e.ctl.at(0).due
			dl = min(dl, d)
			if d < due {
				out, due, ctl = i, d, true
			}
		}
		if e.ndep > 0 {
			d := e.q.at(0).due
			dl = min(dl, d)
			if d < due {
				out, due, ctl = i, d, false
			}
		}
		if e.ndep < e.q.n {
			h := e.q.at(e.ndep)
			start, dep := h.dep, h.dep
			if !e.sched {
				start, dep = e.next(h)
			}
			egwork = min(egwork, start)
			if s.pfc {
				dl = min(dl, dep)
			} else {
				dl = min(dl, dep+e.delay)
			}
		}
	}
	return next{ok: true, work: min(work, egwork), egwork: egwork, deadline: dl, out: out, due: due, ctl: ctl}
}
