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

	fb := &s.fb
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
	}
}

func (s *Sender) hasLost() bool {
	_, ok := s.peek()
	return ok && s.retxHead < len(s.retxQ)
}

// sampleRTT updates the RFC 6298 estimator.
func (s *Sender) sampleRTT(r units.Time) {
	s.lastRTT = r
	if s.minRTT == 0 || r < s.minRTT {
		s.minRTT = r
	}
	if s.srtt == 0 {
		s.srtt, s.rttvar = r, r/2
	} else {
		d := s.srtt - r
		if d < 0 {
			d = -d
		}
		s.rttvar = (3*s.rttvar + d) / 4
		s.srtt = (7*s.srtt + r) / 8
	}
	s.rto = min(max(s.cfg.Tuning.MinRTO, s.srtt+4*s.rttvar), s.cfg.Tuning.MaxRTO)
}

// rtoNow is the timeout with the current backoff applied.
func (s *Sender) rtoNow() units.Time {
	r := s.rto
	for i := 0; i < s.backoff && r < s.cfg.Tuning.MaxRTO; i++ {
		r *= 2
	}
	return min(r, s.cfg.Tuning.MaxRTO)
}

// RTO is the current retransmission timeout, backoff included.
func (s *Sender) RTO() units.Time { return s.rtoNow() }
