// Package results holds what a backend measured in one run, before any analysis: per-flow
// and per-port time series, message completions and the emulator's own lateness. Every
// backend returns a Run; emulator/metrics and the report turn it into summary.json and
// plots, so sim and netns runs are analysed by the same code.
package results

import "reef/units"

// Run is the raw outcome of one run.
type Run struct {
	// Backend is "sim", "netns" or "docker".
	Backend string `json:"backend"`
	// Scenario is the run's scenario name.
	Scenario string `json:"scenario"`
	// Duration is the emulated time covered; WallTime what it took.
	Duration units.Time `json:"duration"`
	WallTime units.Time `json:"wall_time"`
	Flows    []Flow     `json:"flows"`
	Ports    []Port     `json:"ports"`
	// Hosts are the host daemons' own release lateness (real backends only; sim
	// hosts are never late).
	Hosts []Host `json:"hosts,omitempty"`
	// Attempts is how many times the runner ran this point to get these results (more
	// than 1 when it retried runs whose fidelity was degraded); 0 means 1.
	Attempts int `json:"attempts,omitempty"`
	// Tunnels are what was measured between machines joined by cut links (a lab across
	// machines: the swarm backend).
	Tunnels []Tunnel `json:"tunnels,omitempty"`
}

// Tunnel is one machine's measurement of another that cut links join it to, taken as
// the run started: Offset is how far To's clock is ahead of From's, Transit the
// one-way trip over the underlay, Jitter how much later a trip may take (90th
// percentile). A cut link's emulated delay must cover their sum.
type Tunnel struct {
	From    string     `json:"from"`
	To      string     `json:"to"`
	Offset  units.Time `json:"offset"`
	Transit units.Time `json:"transit"`
	Jitter  units.Time `json:"jitter"`
	// MinDelay is the least emulated delay of the links cut between the two.
	MinDelay units.Time `json:"min_delay"`
	// WorstMargin is the largest transit + |offset| + jitter measured between the two,
	// at the start and again every few seconds during the run (transit and offset; the
	// jitter is the start's): a run whose WorstMargin passed MinDelay had frames reach
	// the far switch after they were due there (degraded).
	WorstMargin units.Time `json:"worst_margin"`
}

// Host is one host daemon's fidelity record.
type Host struct {
	Name string `json:"name"`
	// Rate is the host NIC's rate (a packet time is the MTU at this rate).
	Rate units.Rate `json:"rate"`
	// Lateness is how late the daemon released its NIC's frames (actual release minus
	// the NIC pacer's computed release).
	Lateness Lateness `json:"lateness"`
	// Skew is how stale the host's decisions were for frames it read late (see
	// hostd.Host.Skew).
	Skew Lateness `json:"skew"`
	// StaleTimers counts frames read after a timer they should have preceded had
	// fired (hostd.HostStats.StaleTimers).
	StaleTimers int64 `json:"stale_timers,omitempty"`
	// Stalled is how long, in all, the machine ran the daemon a millisecond or more
	// after the deadline it slept until (afpacket.Stats.ResumedTime): time it was not
	// scheduled at all.
	Stalled units.Time `json:"stalled,omitempty"`
	// Lost counts frames the emulator lost at the host's NIC outside the model (see
	// Port.Lost).
	Lost int64 `json:"lost,omitempty"`
}

// Flow is one flow's record.
type Flow struct {
	ID    uint32 `json:"id"`
	Name  string `json:"name"`
	Group string `json:"group"`
	Src   string `json:"src"`
	Dst   string `json:"dst"`
	CC    string `json:"cc"`
	// Size is the message size (0 for long-lived flows).
	Size units.Bytes `json:"size,omitempty"`
	// Start is when the flow started; Finish when its last byte was acknowledged
	// (0 if it did not finish).
	Start  units.Time `json:"start"`
	Finish units.Time `json:"finish,omitempty"`
	// Acked is the payload bytes acknowledged by the end of the run.
	Acked       units.Bytes `json:"acked"`
	Retransmits int64       `json:"retransmits"`
	// Spurious counts the retransmissions later shown unnecessary (reordering).
	Spurious int64 `json:"spurious_retransmits"`
	Timeouts int64 `json:"timeouts"`
	// Repaths counts the path changes the flow's algorithm asked for (each moved its
	// 5-tuple, so ECMP may hash it elsewhere).
	Repaths int64 `json:"repaths,omitempty"`
	// Egress is the flow's data frames per switch egress port, where the backend
	// measured them (the sim does): the paths the flow actually took, which the
	// max-min oracle follows at switches whose choice depends on time (flowlet,
	// adaptive). Ports are in the plan's order; ports the flow never used are left out.
	Egress []PortFrames `json:"egress,omitempty"`
	// Samples is the flow's time series, one per sample interval while it was active.
	// WriteDir writes it to flows.csv, not to results.json.
	Samples []FlowSample `json:"samples,omitempty"`
	// Edges are exact snapshots the backend took at the times window figures are
	// measured between, whatever the sample interval: the measurement window's edges
	// (Scenario.Warmup, and the run's end) and the flow's own stop, each once the
	// flow had started.
	Edges []FlowSample `json:"edges,omitempty"`
}

// PortFrames counts one flow's data frames through one switch egress port.
type PortFrames struct {
	Switch string `json:"switch"`
	Port   int    `json:"port"`
	Frames int64  `json:"frames"`
}

// FlowSample is one sample of a flow's state.
type FlowSample struct {
	T units.Time `json:"t"`
	// Acked is cumulative payload bytes acknowledged at T (goodput is its slope).
	Acked units.Bytes `json:"acked"`
	// Cwnd and Rate are the algorithm's window and pacing rate at T.
	Cwnd units.Bytes `json:"cwnd"`
	Rate units.Rate  `json:"rate"`
	// RTT, FabricDelay and MPD are the latest samples at T (0 if none yet).
	RTT         units.Time `json:"rtt"`
	FabricDelay units.Time `json:"fabric_delay"`
	MPD         units.Time `json:"mpd"`
	// Retransmits is cumulative.
	Retransmits int64 `json:"retransmits"`
}

// Port is one switch egress port's record.
type Port struct {
	Switch string     `json:"switch"`
	Port   int        `json:"port"`
	Name   string     `json:"name"`
	Peer   string     `json:"peer"`
	Rate   units.Rate `json:"rate"`
	// Counters at the end of the run.
	TxBytes   int64      `json:"tx_bytes"`
	TxPackets int64      `json:"tx_packets"`
	Drops     int64      `json:"drops"`
	Marks     int64      `json:"marks"`
	PauseTime units.Time `json:"pause_time"`
	// Samples is the port's time series. WriteDir writes it to queues.csv, not to
	// results.json.
	Samples []PortSample `json:"samples,omitempty"`
	// Edges are exact snapshots of the port at the measurement window's edges
	// (Scenario.Warmup and the run's end), whatever the sample interval.
	Edges []PortSample `json:"edges,omitempty"`
	// Lateness is how late the emulator released this port's frames (actual release
	// minus scheduled release); all zero on sim.
	Lateness Lateness `json:"lateness"`
	// Skew is how far frames were scheduled from where their arrival puts them,
	// because the switch daemon read them late (see switchd.PortStats.Skew); all zero
	// on sim.
	Skew Lateness `json:"skew"`
	// Lost counts frames the emulator lost at this port outside the model: the kernel
	// found the daemon's receive ring full (the daemon fell behind), or a write to
	// the link failed. Always zero on sim.
	Lost int64 `json:"lost,omitempty"`
}

// PortSample is one sample of an egress port.
type PortSample struct {
	T          units.Time  `json:"t"`
	QueueBytes units.Bytes `json:"queue_bytes"`
	QueueDelay units.Time  `json:"queue_delay"`
	// TxBytes, Drops and Marks are cumulative, and so are TxPackets and Waited, the
	// total queueing delay the departed packets met (their mean over a window is the
	// difference of Waited over the difference of TxPackets).
	TxBytes   int64      `json:"tx_bytes"`
	Drops     int64      `json:"drops"`
	Marks     int64      `json:"marks"`
	TxPackets int64      `json:"tx_packets,omitempty"`
	Waited    units.Time `json:"waited,omitempty"`
}

// Lateness summarises durations over a port's or host's frames (release lateness,
// schedule skew).
type Lateness struct {
	Count int64      `json:"count"`
	P50   units.Time `json:"p50"`
	P99   units.Time `json:"p99"`
	Max   units.Time `json:"max"`
}
