package results

import (
	"reef/hostd"
	"reef/internal/hist"
	"reef/switchd"
	"reef/units"
)

// This file is the one place where the cores' own counters become results records, so
// the sim backend and the real daemons report the same fields the same way.

// FlowSampleOf is the sample of a sending flow's snapshot taken at now.
func FlowSampleOf(now units.Time, s *hostd.FlowStats) FlowSample {
	return FlowSample{T: now, Acked: s.BytesAcked, Cwnd: s.Cwnd, Rate: s.PacingRate, RTT: s.LastRTT,
		FabricDelay: s.FabricDelay, MPD: s.MPD, Retransmits: int64(s.Retransmits)}
}

// Close fills f's end-of-run totals from the flow's last snapshot.
func (f *Flow) Close(s *hostd.FlowStats) {
	f.Acked, f.Retransmits, f.Timeouts = s.BytesAcked, int64(s.Retransmits), int64(s.Timeouts)
	f.Spurious, f.Repaths = int64(s.Spurious), int64(s.Repaths)
	if s.Done {
		f.Finish = s.Start + s.FCT
	}
}

// PortSampleOf is the sample of a switch port from its counters and queue depth at now.
func PortSampleOf(now units.Time, ps *switchd.PortStats, d switchd.Depth) PortSample {
	return PortSample{T: now, QueueBytes: d.Backlog, QueueDelay: d.Delay, TxBytes: int64(ps.TxBytes),
		Drops: int64(ps.Dropped()), Marks: int64(ps.ECNMarks), TxPackets: int64(ps.TxPackets), Waited: ps.Waited}
}

// Close fills p's end-of-run counters and lateness from the port's last counters.
func (p *Port) Close(ps *switchd.PortStats) {
	p.TxBytes, p.TxPackets = int64(ps.TxBytes), int64(ps.TxPackets)
	p.Drops, p.Marks, p.PauseTime = int64(ps.Dropped()), int64(ps.ECNMarks), ps.PauseTime
	p.Lateness, p.Skew = LatenessOf(ps.Lateness), LatenessOf(ps.Skew)
}

// LatenessOf is the record of a histogram's summary.
func LatenessOf(s hist.Summary) Lateness {
	return Lateness{Count: int64(s.Count), P50: s.P50, P99: s.P99, Max: s.Max}
}
