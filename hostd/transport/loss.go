package transport

import (
	"slices"

	"reef/units"
)

// reorderWindow is how much later than expected a packet may be acknowledged before it
// is declared lost: max(MinReorderWindow, mult × ReorderFraction × srtt), at most srtt
// (or MinReorderWindow when that is larger).
func (s *Sender) reorderWindow() units.Time {
	tn := s.cfg.Tuning
	w := units.Time(float64(s.reoMult) * tn.ReorderFraction * float64(s.srtt))
	if s.srtt > 0 {
		w = min(w, s.srtt)
	}
	return max(w, tn.MinReorderWindow)
}

// detectLoss applies the RACK rule (RFC 8985 §6.2): a packet in flight that was sent
// before the most recently sent acknowledged packet is lost once now ≥ its send time +
// the RTT of that packet + the reorder window. Packets not lost yet arm the RACK timer.
// It returns the payload bytes newly declared lost.
func (s *Sender) detectLoss(now units.Time) units.Bytes {
	var lost units.Bytes
	next := units.Never
	reo := s.reorderWindow()
	for q := s.una; q < s.nxt; q++ {
		p := s.pkt(q)
		if p.state != stInflight {
			continue
		}
		if p.sent >= s.rackXmit {
			if p.retx == 0 {
				break // later first transmissions were sent later still
			}
			continue
		}
		at := p.sent + s.rackRTT + reo
		if now >= at {
			p.state = stLost
			s.inflight -= units.Bytes(p.size)
			s.retxQ = append(s.retxQ, q)
			lost += units.Bytes(p.size)
			s.stats.Lost++
		} else {
			next = min(next, at)
		}
	}
	s.timers[timerRACK] = next
	if d := s.cfg.Tuning.DupThresh; d > 0 {
		lost += s.detectHoles(d)
	}
	return lost
}

// detectHoles declares lost every first-transmission packet in flight with at least d
// acknowledged packets numbered above it (mswift.md §3.4 "sender hole detection").
func (s *Sender) detectHoles(d int) units.Bytes {
	var lost units.Bytes
	above := 0
	first := len(s.retxQ)
	for q := s.high; q > s.una; q-- {
		p := s.pkt(q - 1)
		switch {
		case p.state == stAcked:
			above++
		case p.state == stInflight && p.retx == 0 && above >= d:
			p.state = stLost
			s.inflight -= units.Bytes(p.size)
			s.retxQ = append(s.retxQ, q-1)
			lost += units.Bytes(p.size)
			s.stats.Lost++
		}
	}
	slices.Reverse(s.retxQ[first:]) // retransmit in packet order
	return lost
}

// onRTO handles the retransmission timeout: back off, declare the oldest packet in
// flight lost and let it (or the oldest lost one) go out past the window as a probe.
func (s *Sender) onRTO(now units.Time) {
	s.timers[timerRTO] = units.Never
	outstanding := s.inflight > 0 || s.hasLost()
	if !outstanding {
		return
	}
	s.stats.Timeouts++
	s.backoff++
	for q := s.una; q < s.nxt; q++ {
		if p := s.pkt(q); p.state == stInflight {
			p.state = stLost
			s.inflight -= units.Bytes(p.size)
			// The probe goes first.
			if s.retxHead > 0 {
				s.retxHead--
				s.retxQ[s.retxHead] = q
			} else {
				s.retxQ = append(s.retxQ, 0)
				copy(s.retxQ[1:], s.retxQ)
				s.retxQ[0] = q
			}
			break
		}
	}
	s.probe = true
	s.timers[timerRTO] = now + s.rtoNow()
	s.alg.OnTimeout(now)
}
