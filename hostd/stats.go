package hostd

import (
	"net/netip"

	"reef/hostd/transport"
	"reef/internal/hist"
	"reef/units"
)

// FlowStats is a snapshot of one sending flow.
type FlowStats struct {
	ID    uint32
	Name  string
	Dst   netip.Addr
	Size  units.Bytes
	Start units.Time
	// Started, Done and FCT (valid when Done) describe the flow's life.
	Started, Done bool
	FCT           units.Time
	// Cwnd and PacingRate are the algorithm's current window and rate: 0 before the
	// flow starts, and those at its completion once it has finished.
	Cwnd       units.Bytes
	PacingRate units.Rate
	transport.SenderStats
}

// ReceiverStats is a snapshot of one receiving flow.
type ReceiverStats struct {
	Src netip.Addr
	ID  uint32
	transport.ReceiverStats
}

// FlowStats returns a snapshot of every flow this host sends, in AddFlow order.
func (h *Host) FlowStats() []FlowStats { return h.AppendFlowStats(nil) }

// AppendFlowStats appends the snapshot to dst (no allocation when dst has room).
func (h *Host) AppendFlowStats(dst []FlowStats) []FlowStats {
	for _, f := range h.flows {
		s := FlowStats{ID: f.spec.ID, Name: f.spec.Name, Dst: f.spec.Dst, Size: f.spec.Size, Start: f.spec.Start,
			Started: f.started(), Done: f.end != nil}
		s.SenderStats, s.Cwnd, s.PacingRate = f.state()
		if s.Done {
			s.FCT = f.end.at - f.spec.Start
		}
		dst = append(dst, s)
	}
	return dst
}

// FlowProgress is the part of a sending flow's FlowStats that a time-series sample
// reads.
type FlowProgress struct {
	ID            uint32
	Started, Done bool
	// BytesAcked, Retransmits, LastRTT, FabricDelay and MPD are SenderStats'; Cwnd and
	// PacingRate FlowStats'.
	BytesAcked, Cwnd          units.Bytes
	PacingRate                units.Rate
	LastRTT, FabricDelay, MPD units.Time
	Retransmits               uint64
}

// AppendActiveProgress appends to dst the progress (the part of FlowStats a time-series
// sample reads) of every flow running now and of every flow that finished after the
// first since flows to finish, and returns dst and how many flows have finished. A
// driver that samples often passes that count back the next time: it reads each flow
// from its start to the first sample after its end, and never walks the flows that
// have not started or that ended samples ago (a run of many short flows has thousands).
func (h *Host) AppendActiveProgress(dst []FlowProgress, since int) ([]FlowProgress, int) {
	for _, f := range h.active {
		if f.end == nil { // finished ones are in completions, until the next timer pass drops them
			dst = append(dst, f.progress())
		}
	}
	for _, c := range h.completions[min(since, len(h.completions)):] {
		dst = append(dst, h.byID[c.ID].progress())
	}
	return dst, len(h.completions)
}

// progress is f's FlowProgress now.
func (f *flow) progress() FlowProgress {
	st, cwnd, rate := f.state()
	return FlowProgress{ID: f.spec.ID, Started: f.started(), Done: f.end != nil,
		BytesAcked: st.BytesAcked, Cwnd: cwnd, PacingRate: rate,
		LastRTT: st.LastRTT, FabricDelay: st.FabricDelay, MPD: st.MPD, Retransmits: st.Retransmits}
}

// state is f's sender's stats and its algorithm's window and rate: now while the flow
// runs, at its completion once it has finished, and zero before it starts.
func (f *flow) state() (transport.SenderStats, units.Bytes, units.Rate) {
	switch {
	case f.snd != nil:
		alg := f.snd.Alg()
		return f.snd.Stats(), alg.Window(), alg.Rate()
	case f.end != nil:
		return f.end.stats, f.end.cwnd, f.end.rate
	}
	return transport.SenderStats{}, 0, 0
}

// Skew summarises, over the reef frames the host received, how stale its decisions
// were for each: how much later than the frame's arrival the latest time the host had
// already acted at (started a frame on the NIC, fired a timer) was when it read the
// frame. Always 0 on the sim, where nothing is read late.
func (h *Host) Skew() hist.Summary {
	h.skew.AddZeros(h.skew0)
	h.skew0 = 0
	return h.skew.Summary()
}

// ReceiverStats returns a snapshot of every flow this host receives, in order of first
// arrival.
func (h *Host) ReceiverStats() []ReceiverStats {
	out := make([]ReceiverStats, 0, len(h.rxAll))
	for _, e := range h.rxAll {
		out = append(out, ReceiverStats{Src: netip.AddrFrom4(e.key.src), ID: e.key.id, ReceiverStats: e.stats()})
	}
	return out
}

// Completions returns the finished finite flows in order of completion. The slice is
// the host's own; do not modify it.
func (h *Host) Completions() []Completion { return h.completions }

// Stats returns the host-wide counters.
func (h *Host) Stats() HostStats { return h.stats }
