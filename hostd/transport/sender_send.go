package transport

import (
	"reef/units"
	"reef/wire"
)

// SendReadyAt is the earliest time the sender could put a data packet on the wire, as
// far as its window, pacing and data allow; units.Never when it is blocked on ACKs or
// has nothing to send. The host's NIC may start it later.
func (s *Sender) SendReadyAt() units.Time {
	seq, ok := s.peek()
	if !ok {
		return units.Never
	}
	size := s.payloadOf(seq)
	w := s.alg.Window()
	subPacket := w < s.cfg.MSS
	switch {
	case s.probe:
	case !subPacket && s.inflight+size > w:
		return units.Never
	case subPacket && s.alg.Rate() > 0 && s.inflight > 0:
		return units.Never // a paced flow with a sub-packet window: one packet at a time
	}
	if !s.sentAny {
		return s.notBefore
	}
	return max(s.lastSend+s.gap(w, subPacket), s.notBefore)
}

// gap is the pacing interval after the last frame: the algorithm's rate over the frame
// bytes or, for a window below one MSS without a rate, srtt × MSS / window.
func (s *Sender) gap(w units.Bytes, subPacket bool) units.Time {
	if r := s.alg.Rate(); r > 0 {
		return r.TxTime(units.Bytes(s.lastLen))
	}
	if !subPacket || s.probe {
		return 0
	}
	if w <= 0 {
		return s.rto
	}
	return units.Time(float64(s.rttForPacing()) * float64(s.cfg.MSS) / float64(w))
}

func (s *Sender) rttForPacing() units.Time {
	switch {
	case s.srtt > 0:
		return s.srtt
	case s.cfg.InitRTT > 0:
		return s.cfg.InitRTT
	}
	return s.cfg.Tuning.InitRTO
}

// peek returns the packet the sender would send next: the oldest declared-lost packet,
// else the next new one.
func (s *Sender) peek() (uint64, bool) {
	for s.retxHead < len(s.retxQ) {
		q := s.retxQ[s.retxHead]
		if q >= s.una && q < s.nxt && s.pkt(q).state == stLost {
			if s.retxHead >= 256 && 2*s.retxHead >= len(s.retxQ) {
				// Under persistent loss the queue never empties: drop the consumed
				// prefix so it does not grow without bound.
				n := copy(s.retxQ, s.retxQ[s.retxHead:])
				s.retxQ, s.retxHead = s.retxQ[:n], 0
			}
			return q, true
		}
		s.retxHead++ // acknowledged meanwhile
	}
	s.retxQ, s.retxHead = s.retxQ[:0], 0
	return s.peekNew()
}

func (s *Sender) peekNew() (uint64, bool) {
	if s.stopped || (s.totalPkts > 0 && s.nxt >= s.totalPkts) {
		return 0, false
	}
	return s.nxt, true
}

// PollTransmit writes the next data frame into buf if the flow may send at now, and
// describes it. buf must hold a full frame (MTU + Ethernet header), or at least its
// headers for a frame held truncated (wire.BuildTruncated; Transmit.Len is then the
// frame's length on the wire, beyond len(buf)).
func (s *Sender) PollTransmit(now units.Time, buf []byte) (Transmit, bool) {
	if s.SendReadyAt() > now {
		return Transmit{}, false
	}
	seq, _ := s.peek()
	retx := seq < s.nxt
	size := s.payloadOf(seq)
	if !retx && seq-s.una >= uint64(len(s.ring)) {
		s.grow()
	}
	h := &s.sc.hdr
	*h = wire.Header{Sacks: h.Sacks[:0], Hops: h.Hops[:0]}
	h.Type = wire.TypeData
	h.FlowID = s.cfg.FlowID
	h.Seq = seq
	h.Ack = encodeRx(s.cfg.Ack, s.cfg.CNPInterval)
	h.TS = int64(now)
	h.HopCap = uint8(s.cfg.HopCap)
	h.PayloadLen = uint16(size)
	h.Inflight = uint32(min(s.inflight+size, 0xffffffff))
	if s.cfg.HopCap > 0 {
		h.Flags |= wire.FlagINT
	}
	if retx {
		h.Flags |= wire.FlagRetx
	}
	if s.totalPkts > 0 && seq == s.totalPkts-1 {
		h.Flags |= wire.FlagFin
	}
	ecn := uint8(wire.ECT0)
	if s.cfg.Tuning.NoECT {
		ecn = wire.NotECT
	}
	n, err := wire.BuildTruncated(buf, s.cfg.Addrs, ecn, h)
	if err != nil {
		return Transmit{}, false
	}
	p := s.pkt(seq)
	if retx {
		s.retxHead++
		if p.retx < 255 {
			p.retx++
		}
		s.stats.Retransmits++
	} else {
		*p = sentPkt{size: int32(size)}
		s.nxt++
	}
	p.sent = now
	p.state = stInflight
	s.inflight += size
	s.probe = false
	s.lastSend, s.lastLen, s.sentAny = now, n, true
	s.stats.PacketsSent++
	s.stats.BytesSent += size
	if s.timers[timerRTO] == units.Never {
		s.timers[timerRTO] = now + s.rto
	}
	s.alg.OnSend(now, seq, size)
	return Transmit{Len: n, ECN: ecn, INT: s.cfg.HopCap > 0, Seq: seq, Retx: retx}, true
}
