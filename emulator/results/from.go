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

// FlowSampleFrom is the sample of a sending flow from its progress at now: the same
// figures FlowSampleOf takes from its snapshot.
func FlowSampleFrom(now units.Time, p *hostd.FlowProgress) FlowSample {
	return FlowSample{T: now, Acked: p.BytesAcked, Cwnd: p.Cwnd, Rate: p.PacingRate, RTT: p.LastRTT,
		FabricDelay: p.FabricDelay, MPD: p.MPD, Retransmits: int64(p.Retransmits)}
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

// PortSampleFrom is the sample of a switch port from what Switch.AppendSamples read of
// it at now: the same figures PortSampleOf takes from the port's counters and depth.
func PortSampleFrom(now units.Time, s *switchd.Sample) PortSample {
	return PortSample{T: now, QueueBytes: s.Backlog, QueueDelay: s.Delay, TxBytes: int64(s.TxBytes),
		Drops: int64(s.Drops), Marks: int64(s.Marks), TxPackets: int64(s.TxPackets), Waited: s.Waited}
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
