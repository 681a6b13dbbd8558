package transport

import (
	"reef/units"
	"reef/wire"
)

// maxRanges bounds the out-of-order ranges a receiver tracks; a packet that would need
// more is dropped (and counted) rather than growing memory without bound.
const maxRanges = 4096

type seqRange struct{ start, end uint64 } // [start, end)

// ReceiverStats are the counters of one Receiver.
type ReceiverStats struct {
	// BytesDelivered counts payload bytes received for the first time; Packets the data
	// packets received, Duplicates those received before, CE those marked CE.
	BytesDelivered units.Bytes
	Packets        uint64
	Duplicates, CE uint64
	// OutOfOrder counts packets that arrived above a gap.
	OutOfOrder uint64
	AcksSent   uint64
	// CNPsSent counts DCQCN congestion notification packets sent.
	CNPsSent          uint64
	Malformed, Overfl uint64
	// Done is true once the packet flagged Fin and everything before it arrived, at
	// DoneAt.
	Done   bool
	DoneAt units.Time
}

// Receiver is the receiving side of one flow: it tracks which packets arrived and
// acknowledges them. Not safe for concurrent use.
type Receiver struct {
	flowID uint32
	addrs  wire.Addrs // for the ACKs: this host → the data's sender

	rcvNxt uint64
	ranges []seqRange // sorted, disjoint, all above rcvNxt
	finSeq uint64
	hasFin bool

	// The pending ACK describes the latest data packet.
	pending  bool
	due      units.Time
	count    int // packets since the last ACK
	trig     uint64
	ts       int64
	arrived  units.Time
	mpd      uint16
	mpdSeen  bool // an INT switch stamped mpd (wire.FlagMPDSeen)
	inflight uint32
	pathHops uint8
	ece      bool
	nhops    int
	hops     [wire.MaxHops]wire.Hop
	sacks    [wire.MaxSack]wire.SackBlock

	// DCQCN notification point: a CNP is pending for the packet that triggered it.
	cnpPending bool
	cnpSent    bool
	cnpLast    units.Time
	cnpSeq     uint64
	cnpTS      int64

	hdr   wire.Header
	stats ReceiverStats
}

// NewReceiver builds the receiving side of flow flowID; addrs address the ACKs (Src is
// this host, Dst the data's sender).
func NewReceiver(flowID uint32, addrs wire.Addrs) *Receiver {
	r := &Receiver{flowID: flowID, addrs: addrs, due: units.Never}
	r.ranges = make([]seqRange, 0, 8)
	// Decoding writes into the arrays the pending ACK is built from, as after the first
	// ACK (PollTransmit points the header at them): a data frame carries no SACK blocks,
	// and its hop records become the pending ACK's.
	r.hdr.Sacks, r.hdr.Hops = r.sacks[:0], r.hops[:0]
	return r
}

// Stats returns a snapshot of the counters.
func (r *Receiver) Stats() ReceiverStats { return r.stats }

// NextDeadline is when the pending ACK is due (units.Never when none is).
func (r *Receiver) NextDeadline() units.Time {
	if r.cnpPending {
		return r.cnpLast
	}
	if !r.pending {
		return units.Never
	}
	return r.due
}

// HandleTimeout does nothing: a due ACK is sent by PollTransmit. It exists so that the
// receiver has the same four method families as the sender.
func (r *Receiver) HandleTimeout(now units.Time) {}

// HandlePacket processes a data frame of this flow. The frame may be held truncated
// after its headers (wire.FrameLen): its payload's length is the header's.
func (r *Receiver) HandlePacket(now units.Time, v wire.View) {
	h := &r.hdr
	if !v.IsReef() || h.DecodeTruncated(v.Frame[v.Reef:]) != nil || h.Type != wire.TypeData || h.FlowID != r.flowID {
		r.stats.Malformed++
		return
	}
	ce := v.ECN() == wire.CE
	inOrder := h.Seq == r.rcvNxt
	isNew, ok := r.insert(h.Seq)
	if !ok {
		r.stats.Overfl++
		return
	}
	r.stats.Packets++
	if ce {
		r.stats.CE++
	}
	if isNew && !inOrder {
		r.stats.OutOfOrder++
	}
	if isNew {
		r.stats.BytesDelivered += units.Bytes(h.PayloadLen)
	} else {
		r.stats.Duplicates++
	}
	if h.Flags&wire.FlagFin != 0 {
		r.finSeq, r.hasFin = h.Seq, true
	}
	if r.hasFin && !r.stats.Done && r.rcvNxt > r.finSeq {
		r.stats.Done, r.stats.DoneAt = true, now
	}

	// The ACK describes the latest packet.
	r.trig, r.ts, r.arrived, r.mpd = h.Seq, h.TS, now, h.MPD
	r.mpdSeen = h.Flags&wire.FlagMPDSeen != 0
	r.inflight = h.Inflight
	r.pathHops = uint8(max(int(wire.DefaultTTL)-int(v.TTL()), 0))
	r.ece = ce
	r.nhops = copy(r.hops[:], h.Hops)
	pol, cnpEvery := decodeRx(h.Ack)
	if ce && cnpEvery > 0 && (!r.cnpSent || now-r.cnpLast >= cnpEvery) {
		r.cnpPending, r.cnpSent, r.cnpLast = true, true, now
		r.cnpSeq, r.cnpTS = h.Seq, h.TS
	}
	r.count++
	immediate := ce || !inOrder || !isNew || h.Flags&wire.FlagFin != 0 ||
		pol.Every <= 1 || r.count >= pol.Every
	switch {
	case immediate:
		r.due = now
	case !r.pending && pol.Delay > 0:
		r.due = now + pol.Delay
	case !r.pending:
		r.due = units.Never // wait for the count
	}
	r.pending = true
}

// insert records packet q; it reports whether q is new, and false ok when the range
// table is full.
func (r *Receiver) insert(q uint64) (isNew, ok bool) {
	if q < r.rcvNxt {
		return false, true
	}
	// Find the first range ending at or after q.
	i := 0
	for i < len(r.ranges) && r.ranges[i].end < q {
		i++
	}
	if i < len(r.ranges) && r.ranges[i].start <= q && q < r.ranges[i].end {
		return false, true
	}
	switch {
	case q == r.rcvNxt:
		r.rcvNxt++
		if len(r.ranges) > 0 && r.ranges[0].start == r.rcvNxt {
			r.rcvNxt = r.ranges[0].end
			r.ranges = append(r.ranges[:0], r.ranges[1:]...)
		}
	case i < len(r.ranges) && r.ranges[i].end == q:
		r.ranges[i].end++
		if i+1 < len(r.ranges) && r.ranges[i+1].start == r.ranges[i].end {
			r.ranges[i].end = r.ranges[i+1].end
			r.ranges = append(r.ranges[:i+1], r.ranges[i+2:]...)
		}
	case i < len(r.ranges) && r.ranges[i].start == q+1:
		r.ranges[i].start--
	default:
		if len(r.ranges) >= maxRanges {
			return false, false
		}
		r.ranges = append(r.ranges, seqRange{})
		copy(r.ranges[i+1:], r.ranges[i:])
		r.ranges[i] = seqRange{q, q + 1}
	}
	return true, true
}

// PollTransmit writes the pending ACK into buf if it is due at now.
func (r *Receiver) PollTransmit(now units.Time, buf []byte) (Transmit, bool) {
	if r.cnpPending && r.cnpLast <= now {
		return r.sendCNP(now, buf)
	}
	if !r.pending || r.due > now {
		return Transmit{}, false
	}
	h := &r.hdr
	*h = wire.Header{Sacks: r.sacks[:0], Hops: r.hops[:r.nhops]}
	h.Type = wire.TypeAck
	h.FlowID = r.flowID
	h.Seq = r.trig
	h.Ack = r.rcvNxt
	h.TS = int64(now)
	h.EchoTS = r.ts
	h.Turnaround = uint32(min(max(now-r.arrived, 0), 0xffffffff))
	h.Inflight = r.inflight
	h.EchoMPD = r.mpd
	h.PathHops = r.pathHops
	h.HopCap = uint8(r.nhops)
	if r.ece {
		h.Flags |= wire.FlagECE
	}
	if r.mpdSeen {
		h.Flags |= wire.FlagEchoMPDSeen
	}
	// SACK: the block holding the triggering packet first, then the lowest others.
	first := -1
	for i, g := range r.ranges {
		if g.start <= r.trig && r.trig < g.end {
			first = i
			h.Sacks = append(h.Sacks, wire.SackBlock{Start: g.start, End: g.end})
			break
		}
	}
	for i, g := range r.ranges {
		if len(h.Sacks) == wire.MaxSack {
			break
		}
		if i != first {
			h.Sacks = append(h.Sacks, wire.SackBlock{Start: g.start, End: g.end})
		}
	}
	n, err := wire.BuildTruncated(buf, r.addrs, wire.NotECT, h)
	if err != nil {
		return Transmit{}, false
	}
	r.pending, r.count, r.due = false, 0, units.Never
	r.stats.AcksSent++
	return Transmit{Len: n, Ack: true, Seq: r.trig}, true
}

// sendCNP writes the pending congestion notification: TypeCNP with ECE, echoing the
// marked packet's number and timestamp.
func (r *Receiver) sendCNP(now units.Time, buf []byte) (Transmit, bool) {
	h := &r.hdr
	*h = wire.Header{Sacks: r.sacks[:0], Hops: r.hops[:0]}
	h.Type = wire.TypeCNP
	h.Flags = wire.FlagECE
	h.FlowID = r.flowID
	h.Seq = r.cnpSeq
	h.Ack = r.rcvNxt
	h.TS = int64(now)
	h.EchoTS = r.cnpTS
	n, err := wire.BuildTruncated(buf, r.addrs, wire.NotECT, h)
	r.cnpPending = false
	if err != nil {
		return Transmit{}, false
	}
	r.stats.CNPsSent++
	return Transmit{Len: n, Ack: true, Seq: r.cnpSeq}, true
}

// ClosedReceiver is a Receiver whose flow is complete and acknowledged, reduced to what
// answers a late duplicate: a host keeps the receiving side of every flow it was sent
// for the whole run (a retransmission may still come), and a complete one needs a
// fourth of a Receiver's memory. Reopen rebuilds the Receiver, which then handles the
// duplicate exactly as the Receiver it was closed from would have.
type ClosedReceiver struct {
	flowID         uint32
	addrs          wire.Addrs
	rcvNxt, finSeq uint64
	cnpSent        bool
	cnpLast        units.Time
	stats          ReceiverStats
}

// Close returns r reduced to a ClosedReceiver, and false when r still holds more: its
// flow is not complete (Done), or an ACK or a CNP is pending.
func (r *Receiver) Close() (ClosedReceiver, bool) {
	// No ACK pending means no packet counted towards one: HandlePacket raises count and
	// sets pending together, PollTransmit clears both.
	if !r.stats.Done || r.pending || r.cnpPending || len(r.ranges) != 0 {
		return ClosedReceiver{}, false
	}
	return ClosedReceiver{flowID: r.flowID, addrs: r.addrs, rcvNxt: r.rcvNxt, finSeq: r.finSeq,
		cnpSent: r.cnpSent, cnpLast: r.cnpLast, stats: r.stats}, true
}

// Reopen rebuilds the Receiver c was closed from. What c leaves out, the last packet's
// echoes and hop records, the next packet overwrites before any ACK reads them.
func (c *ClosedReceiver) Reopen() *Receiver {
	r := NewReceiver(c.flowID, c.addrs)
	r.rcvNxt, r.finSeq, r.hasFin = c.rcvNxt, c.finSeq, true
	r.cnpSent, r.cnpLast = c.cnpSent, c.cnpLast
	r.stats = c.stats
	return r
}

// Stats returns the counters of the Receiver c was closed from.
func (c *ClosedReceiver) Stats() ReceiverStats { return c.stats }
