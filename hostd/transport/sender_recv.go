package transport

import (
	"reef/cc"
	"reef/units"
	"reef/wire"
)

// ackTally accumulates what one ACK newly acknowledged.
type ackTally struct {
	bytes units.Bytes
	pkts  int
}

// ackPkt marks packet q acknowledged if it was not already.
func (s *Sender) ackPkt(now units.Time, q uint64, t *ackTally) {
	p := s.pkt(q)
	switch p.state {
	case stInflight:
		s.inflight -= units.Bytes(p.size)
	case stLost:
		// Declared lost but the original arrived before it was re-sent: the reorder
		// window was too small.
		s.reoMult = min(s.reoMult+1, 16)
	default:
		return
	}
	p.state = stAcked
	s.high = max(s.high, q+1)
	t.bytes += units.Bytes(p.size)
	t.pkts++
	if p.retx == 0 && p.sent > s.rackXmit {
		s.rackXmit, s.rackRTT = p.sent, now-p.sent
	}
}

func (s *Sender) onAck(now units.Time, h *wire.Header, ackLen int) {
	if h.Ack > s.nxt || h.Seq >= s.nxt {
		s.stats.Malformed++
		return
	}
	s.stats.AcksReceived++
	echo := units.Time(h.EchoTS)
	validEcho := echo >= 0 && echo <= now
	var t ackTally
	// The triggering packet first: its echoed timestamp says which transmission arrived.
	if h.Seq >= s.una {
		p := s.pkt(h.Seq)
		if p.retx > 0 && p.state != stAcked && validEcho && echo < p.sent {
			s.stats.Spurious++
			s.reoMult = min(s.reoMult+1, 16)
		}
		s.ackPkt(now, h.Seq, &t)
	}
	for q := s.una; q < h.Ack; q++ {
		s.ackPkt(now, q, &t)
	}
	for _, b := range h.Sacks {
		lo, hi := max(b.Start, s.una), min(b.End, s.nxt)
		for q := lo; q < hi; q++ {
			s.ackPkt(now, q, &t)
		}
	}
	if validEcho && echo > s.rackXmit {
		s.rackXmit, s.rackRTT = echo, now-echo
	}
	for s.una < s.nxt && s.pkt(s.una).state == stAcked {
		s.una++
	}
	s.stats.BytesAcked += t.bytes

	var rtt units.Time
	if validEcho {
		rtt = now - echo
		s.sampleRTT(rtt)
	}
	if t.pkts > 0 {
		s.backoff = 0
		if s.inflight > 0 || s.hasLost() {
			s.timers[timerRTO] = now + s.rtoNow()
		} else {
			s.timers[timerRTO] = units.Never
		}
	}
	lost := s.detectLoss(now)

	fb := &s.sc.fb
	*fb = cc.Feedback{
		Kind:         cc.Ack,
		AckedBytes:   t.bytes,
		AckedPackets: t.pkts,
		AckSeq:       h.Seq,
		NextSeq:      s.nxt,
		Inflight:     s.inflight,
		ECE:          h.Flags&wire.FlagECE != 0,
		Hops:         h.Hops,
		PathHops:     int(h.PathHops),
		InflightEcho: units.Bytes(h.Inflight),
		Turnaround:   units.Time(h.Turnaround),
	}
	if validEcho {
		fb.SendTime, fb.RTT = echo, rtt
		ser := s.cfg.LineRate.TxTime(units.Bytes(DataFrameLen(s.payloadOf(h.Seq), s.cfg.HopCap))) +
			s.cfg.LineRate.TxTime(units.Bytes(ackLen))
		fb.FabricDelay = max(rtt-fb.Turnaround-ser, 0)
		s.stats.FabricDelay = fb.FabricDelay
	}
	if s.cfg.MPDUnit > 0 {
		// Only an INT switch on the data's own path sets the bit: a path without
		// one reports no MPD even when the lab stamps it elsewhere.
		fb.HasMPD = h.Flags&wire.FlagEchoMPDSeen != 0
		fb.MPD = units.Time(h.EchoMPD) * s.cfg.MPDUnit
		fb.ReverseMPD = units.Time(h.MPD) * s.cfg.MPDUnit
		s.stats.MPD = fb.MPD
	}
	s.alg.OnFeedback(now, fb)
	if lost > 0 {
		s.alg.OnLoss(now, lost)
	}
	s.maybeRepath()
	if s.totalPkts > 0 && s.una >= s.totalPkts && !s.done {
		s.done, s.doneAt = true, now
		s.timers = [nTimers]units.Time{units.Never, units.Never}
		// Every packet is acknowledged (una = nxt = totalPkts): nothing reads the ring
		// or the retransmission queue again (their readers walk [una, nxt) or skip
		// packets below una), so a finished flow gives them up. A run of many short
		// flows then holds rings only for the flows in progress.
		s.ring, s.mask, s.retxQ, s.retxHead = nil, 0, nil, 0
	}
}

func (s *Sender) hasLost() bool {
	_, ok := s.peek()
	return ok && s.retxHead < len(s.retxQ)
}

// sampleRTT updates the RTT estimator and the timeout. srtt and rttvar follow RFC 6298;
// the timeout follows Linux (tcp_rtt_estimator, tcp_set_rto): srtt plus a margin that is
// the largest 4·rttvar of the last RTT, decaying by a quarter per RTT toward the newer
// largest, and never below rtoFloor. A deviation seen once so keeps the timeout up for
// several RTTs, and a falling RTT (a queue draining) raises rttvar at 1/32 instead of
// 1/4. Plain RFC 6298 (RTO = max(MinRTO, srtt + 4·rttvar)) fires without loss behind a
// standing queue: rttvar shrinks to a few percent of srtt there, srtt passes MinRTO, and
// the next burst of other flows' packets delays an ACK by more than that (issue 21).
func (s *Sender) sampleRTT(r units.Time) {
	s.lastRTT = r
	if s.minRTT == 0 || r < s.minRTT {
		s.minRTT = r
	}
	if s.srtt == 0 {
		s.srtt, s.rttvar = r, r/2
		s.varMax = 4 * s.rttvar
		s.margin = s.varMax
		s.rttSeq = s.nxt
	} else {
		d := s.srtt - r
		if d < 0 {
			d = -d
		} else if d > s.rttvar {
			// The RTT fell below srtt by more than rttvar: count an eighth of the
			// excess (Linux, after Eifel).
			d = s.rttvar + (d-s.rttvar)/8
		}
		s.rttvar = (3*s.rttvar + d) / 4
		s.srtt = (7*s.srtt + r) / 8
		s.varMax = max(s.varMax, 4*s.rttvar)
		s.margin = max(s.margin, s.varMax)
		if s.una > s.rttSeq {
			// One RTT has passed: the margin decays toward the largest deviation of
			// that RTT, and the next RTT begins.
			s.margin -= (s.margin - s.varMax) / 4
			s.rttSeq, s.varMax = s.nxt, 0
		}
	}
	s.rto = min(s.srtt+max(s.margin, s.rtoFloor()), s.cfg.Tuning.MaxRTO)
}

// rtoBaseRTTs is the least margin of the timeout over srtt, in base RTTs: a flow
// starting at line rate with a window of one BDP adds one base RTT of queue to every
// path it shares, and the timeout of the flows already there must outlast it.
const rtoBaseRTTs = 2

// rtoFloor is the least the timeout exceeds srtt by: MinRTO, two base RTTs (the path's
// unloaded RTT, else the smallest sample), and srtt itself, so the timeout is at least
// twice srtt: a flow without a window (rate-based, starting at line rate) can add an RTT
// of queue before its first sample slows it.
func (s *Sender) rtoFloor() units.Time {
	base := s.cfg.InitRTT
	if base == 0 {
		base = s.minRTT
	}
	return max(s.cfg.Tuning.MinRTO, rtoBaseRTTs*base, s.srtt)
}

// rtoNow is the timeout with the current backoff applied.
func (s *Sender) rtoNow() units.Time {
	r := s.rto
	for i := 0; i < s.backoff && r < s.cfg.Tuning.MaxRTO; i++ {
		r *= 2
	}
	return min(r, s.cfg.Tuning.MaxRTO)
}

// RTO is the current retransmission timeout, backoff included: srtt plus the largest
// recent 4·rttvar, at least plus max(MinRTO, two base RTTs, srtt), doubled per backoff,
// at most MaxRTO.
func (s *Sender) RTO() units.Time { return s.rtoNow() }
