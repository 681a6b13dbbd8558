package switchd

import (
	"reef/units"
	"reef/wire"
)

// pfcIngress is priority flow control on one port's ingress, a component of its own
// that pauses the upstream's egress (and, through egress.pause, is paused by the peer's
// frames): it counts the bytes that arrived on the port and still wait in the switch,
// asks for a pause above XOff, a refresh at half the pause's length while it lasts,
// and a resume at XOn.
type pfcIngress struct {
	refreshAt units.Time // when to repeat the pause while pausing (Never otherwise)
	cfg       PFCConfig
	held      units.Bytes // bytes that arrived here and wait in the switch
	pausing   bool        // the upstream has been told to pause
	sent      uint64      // pause and resume frames sent
}

// add counts n bytes admitted to an egress queue and reports whether the upstream must
// be paused now.
func (p *pfcIngress) add(n units.Bytes) bool {
	if !p.cfg.Enabled {
		return false
	}
	p.held += n
	if !p.pausing && p.held > p.cfg.XOff {
		p.pausing = true
		return true
	}
	return false
}

// remove releases n bytes (departed or dropped) and reports whether the upstream must be
// resumed now.
func (p *pfcIngress) remove(n units.Bytes) bool {
	if !p.cfg.Enabled {
		return false
	}
	p.held -= n
	if p.pausing && p.held <= p.cfg.XOn {
		p.pausing, p.refreshAt = false, units.Never
		return true
	}
	return false
}

// reset forgets a pause in force (the port went down).
func (p *pfcIngress) reset() { p.pausing, p.refreshAt = false, units.Never }

// unhold releases n bytes held for ingress port in at t, resuming its upstream once
// they fall to XOn.
func (s *Switch) unhold(in int, n units.Bytes, t units.Time) {
	if s.ports[in].pfc.remove(n) {
		s.sendPause(in, t, 0)
	}
}

// hold counts n bytes from ingress port in admitted at t, pausing its upstream above
// XOff.
func (s *Switch) hold(in int, n units.Bytes, t units.Time) {
	if p := &s.ports[in]; p.pfc.add(n) && p.up {
		s.sendPause(in, t, pauseQuanta)
	}
}

// sendPause emits a PFC frame with quanta out of port i at t. It bypasses the egress
// queue but takes the link's delay. While pausing, it is repeated at half its length.
func (s *Switch) sendPause(i int, t units.Time, quanta uint16) {
	p := &s.ports[i]
	s.touch(i)
	if quanta != 0 {
		p.pfc.refreshAt = t + max(1, p.eg.rate.TxTime(units.Bytes(quanta)*64)/2)
	}
	if !p.up {
		return
	}
	b, ok := s.pool.get()
	if !ok {
		return
	}
	n := wire.BuildPause(s.pool.buf(b), p.cfg.MAC, quanta)
	p.pfc.sent++
	p.eg.ctl.push(pkt{buf: b, n: int32(n), in: int16(i), t: t, dep: t, due: t + p.eg.delay})
}
