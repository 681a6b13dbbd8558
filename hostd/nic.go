package hostd

import (
	"slices"

	"reef/units"
)

// runTimers starts flows, runs the senders' timers due at now and drops finished flows
// from the active list.
func (h *Host) runTimers(now units.Time) {
	for h.waitHead < len(h.waiting) && h.waiting[h.waitHead].spec.Start <= now {
		f := h.waiting[h.waitHead]
		h.waiting[h.waitHead] = nil
		h.waitHead++
		if !h.startSender(f) {
			continue
		}
		h.refresh(f)
		h.active = append(h.active, f)
		if f.spec.Stop != 0 {
			h.stopMin = min(h.stopMin, f.spec.Stop)
		}
		h.log.Debug("flow started", "host", h.cfg.Name, "flow", f.spec.ID)
	}
	if h.waitHead == len(h.waiting) {
		h.waiting, h.waitHead = h.waiting[:0], 0
	}
	h.fireTimers(h.timerHorizon(now))
}

// stopFlows stops the flows whose Stop is at or before t, the earliest time the NIC
// could start a frame: from then on they send no new data (startNext also stops a flow
// whose next frame would start at or after its Stop). A stop is part of the workload,
// not a timer a late frame could cancel, so it waits for neither the timer grace nor a
// stall's hold. (When stops were timers, a flow on netns sent new data past its stop
// for the grace, 5 ms or 6.7 µs of paper time at a time scale of 750, or for as long as
// short stalls kept extending the hold.)
func (h *Host) stopFlows(t units.Time) {
	if t < h.stopMin {
		return
	}
	h.stopMin = units.Never
	for _, f := range h.active {
		if f.stopped || f.spec.Stop == 0 {
			continue
		}
		if f.spec.Stop > t {
			h.stopMin = min(h.stopMin, f.spec.Stop)
			continue
		}
		f.stopped = true
		if f.snd != nil { // not finished
			f.snd.Stop()
		}
		h.committed = max(h.committed, f.spec.Stop)
		h.refresh(f)
	}
}

// timerHorizon is the latest deadline of the timers Poll fires at now: those due a grace
// ago, but while a stall's hold lasts (Resumed) no later than where the horizon stood
// when the stall began.
func (h *Host) timerHorizon(now units.Time) units.Time {
	hz := now - h.opts.TimerGrace
	if now < h.holdUntil {
		hz = min(hz, h.holdFrom)
	}
	return hz
}

// Resumed tells the host that its driver was stalled from `from` (when it should have
// run) until now, as when a busy or paused machine does not schedule the daemon. The
// daemons upstream were likely stalled too, and the frames they owe this host, which
// may cancel a timer that came due meanwhile (an ACK before an RTO's deadline), still
// have to come: a timer due after the grace before `from` waits until the host has run
// for the stall's length and a grace again, unless a frame that arrived after its
// deadline fires it first (Receive). Timers still fire at their deadlines in computed
// time. It does nothing when Options.TimerGrace is 0 (the sim never stalls).
func (h *Host) Resumed(from, now units.Time) {
	if h.opts.TimerGrace == 0 || now <= from {
		return
	}
	if now >= h.holdUntil {
		// The driver did not run at from: what fired before had deadlines before from
		// less the grace.
		h.holdFrom = from - h.opts.TimerGrace - 1
	}
	h.holdUntil = max(h.holdUntil, now+(now-from)+h.opts.TimerGrace)
}

// fireTimers runs the flows' timers due at or before due, each at its own deadline, and
// drops finished flows from the active list.
func (h *Host) fireTimers(due units.Time) {
	if due >= h.timerMin {
		h.timerMin = units.Never
		for _, f := range h.active {
			for f.timer <= due {
				at := f.timer
				f.snd.HandleTimeout(at)
				f.fired = at
				h.checkDone(f)
				h.committed = max(h.committed, at)
				h.refresh(f)
				if f.timer <= at {
					break // due again at once: the next Poll runs it
				}
			}
			h.timerMin = min(h.timerMin, f.timer)
		}
	}
	if h.anyFinished {
		h.anyFinished = false
		h.active = slices.DeleteFunc(h.active, func(f *flow) bool { return f.end != nil })
	}
}

// NextDeadline is the earliest time at which Poll may return a frame or the host's
// state changes; units.Never when idle. It may be early (never late): the host keeps
// lower bounds over its flows, which Poll makes exact.
func (h *Host) NextDeadline() units.Time {
	d := h.timerMin
	if d != units.Never {
		d += h.opts.TimerGrace
		if h.timerMin > h.holdFrom {
			d = max(d, h.holdUntil) // held since a stall (Resumed)
		}
	}
	if h.waitHead < len(h.waiting) {
		d = min(d, h.waiting[h.waitHead].spec.Start)
	}
	if h.held {
		return min(d, h.heldDue)
	}
	s0 := max(h.nicFree, h.pausedUntil)
	for _, e := range h.ackQ {
		if t := e.rcv.NextDeadline(); t != units.Never {
			d = min(d, max(s0, t))
		}
	}
	if h.readyMin != units.Never {
		d = min(d, max(s0, h.readyMin))
	}
	return d
}

// Poll returns the next frame due at or before now. Call it until it returns false.
func (h *Host) Poll(now units.Time) (Out, bool) {
	h.runTimers(now)
	if !h.held {
		h.startNext(now)
	}
	if !h.held || h.heldDue > now {
		return Out{}, false
	}
	b := h.bufs[h.cur]
	out := Out{Port: 0, Frame: b[:min(h.heldLen, len(b))], Due: h.heldDue} // truncated with Options.Snap
	h.held = false
	h.cur ^= 1
	h.stats.FramesSent++
	h.stats.BytesSent += uint64(h.heldLen)
	h.startNext(now) // the next frame goes into the other buffer
	return out, true
}

// SwapFrame gives the host buf as the storage of the frame the last Poll returned, whose
// storage the caller keeps (the sim hands it to a switch's ReceiveBuffer instead of
// copying it). It must come right after that Poll, before any other call on the Host;
// buf must hold as much as the host's own buffers (an MTU-sized frame, or Options.Snap
// bytes), or SwapFrame does nothing and returns false.
func (h *Host) SwapFrame(buf []byte) bool {
	if n := len(h.bufs[0]); cap(buf) >= n {
		h.bufs[h.cur^1] = buf[:n] // Poll flipped cur past the frame it returned
		return true
	}
	return false
}

// startNext picks the frame that starts first on the NIC (an ACK wins a tie, data flows
// share round robin) if it starts at or before now, builds it and holds it until it has
// been serialised.
func (h *Host) startNext(now units.Time) {
	s0 := max(h.nicFree, h.pausedUntil)
	if s0 > now {
		return
	}
	h.stopFlows(s0)
	// Earliest ACK.
	ackAt, ackIdx := units.Never, -1
	for i, e := range h.ackQ {
		if t := e.rcv.NextDeadline(); t != units.Never && max(s0, t) < ackAt {
			ackAt, ackIdx = max(s0, t), i
		}
	}
	// Earliest data, round robin among ties; the scan makes readyMin exact.
	dataAt, dataIdx := units.Never, -1
	n := len(h.active)
	h.readyMin = units.Never
	for k := 0; k < n; k++ {
		i := (h.rr + k) % n
		f := h.active[i]
		h.readyMin = min(h.readyMin, f.ready)
		if f.ready != units.Never && max(s0, f.ready) < dataAt {
			dataAt, dataIdx = max(s0, f.ready), i
		}
	}
	buf := h.bufs[h.cur]
	switch {
	case ackIdx >= 0 && ackAt <= now && ackAt <= dataAt:
		e := h.ackQ[ackIdx]
		tx, ok := e.rcv.PollTransmit(ackAt, buf)
		if e.rcv.NextDeadline() == units.Never {
			e.queued = false
			h.ackQ = append(h.ackQ[:ackIdx], h.ackQ[ackIdx+1:]...)
			e.close()
		}
		if ok {
			h.hold(ackAt, tx.Len)
		}
	case dataIdx >= 0 && dataAt <= now:
		f := h.active[dataIdx]
		if !f.stopped && f.spec.Stop != 0 && dataAt >= f.spec.Stop {
			// Nothing starts before dataAt, so every stop up to it comes first; the
			// flow may still have a retransmission to send.
			h.stopFlows(dataAt)
			h.startNext(now)
			return
		}
		h.rr = (dataIdx + 1) % n
		tx, ok := f.snd.PollTransmit(dataAt, buf)
		h.refresh(f)
		if ok {
			h.hold(dataAt, tx.Len)
		}
	}
}

func (h *Host) hold(start units.Time, n int) {
	h.held = true
	h.committed = max(h.committed, start)
	h.heldLen = n
	// Serialisation is computed from the bytes sent since the NIC last went idle, so
	// per-frame rounding never accumulates (style anchor 2).
	if start != h.nicFree || h.busyBytes > 1<<40 {
		h.busyStart, h.busyBytes = start, 0
	}
	h.busyBytes += units.Bytes(n)
	h.heldDue = max(h.busyStart+h.cfg.Rate.TxTime(h.busyBytes), start+1)
	h.nicFree = h.heldDue
}
