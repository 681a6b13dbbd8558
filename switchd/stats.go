package switchd

import (
	"reef/internal/hist"
	"reef/units"
)

// DropReason says why the switch dropped a frame.
type DropReason int

// Drop reasons. Drops found before routing (Malformed, NotIPv4, TTL, NoRoute, NoBuffer,
// and PortDown for frames arriving on a down port) count on the ingress port; drops at
// the egress queue (Tail, Oversize, and PortDown for frames queued on or routed to a
// port that went down) count on the egress port.
const (
	DropMalformed DropReason = iota // IPv4 EtherType but a truncated header or a bad checksum
	DropNotIPv4                     // not IPv4 and not a PFC frame (ARP, IPv6, runts)
	DropTTL                         // TTL expired
	DropNoRoute                     // no pin or route covers the destination
	DropPortDown                    // the port (or every port of the route's group) is down
	DropOversize                    // larger than the egress MTU or the switch's buffers
	DropTail                        // the egress queue was full
	DropNoBuffer                    // the switch's frame pool was exhausted
	NumDropReasons
)

var dropNames = [NumDropReasons]string{"malformed", "not_ipv4", "ttl", "no_route", "port_down", "oversize", "tail", "no_buffer"}

// String names the reason in snake case, as metrics label it.
func (r DropReason) String() string {
	if r < 0 || r >= NumDropReasons {
		return "unknown"
	}
	return dropNames[r]
}

// PortStats is a snapshot of one port's counters. Rx counts frames that arrived on the
// port; Tx counts frames that departed (finished serialisation) on it.
type PortStats struct {
	// Name is the port's configured name.
	Name string
	// Up is the port's administrative state.
	Up bool
	// Rate is the egress rate in force.
	Rate units.Rate
	// Frames and bytes received and transmitted.
	RxPackets, RxBytes uint64
	TxPackets, TxBytes uint64
	// Drops counts drops attributed to this port, by DropReason.
	Drops [NumDropReasons]uint64
	// Waited is the total queueing delay (serialisation start − arrival) of the
	// frames departed, so Waited / TxPackets is the mean delay a packet met here.
	Waited units.Time
	// ECNMarks counts ECT packets marked CE at this port's egress queue.
	ECNMarks uint64
	// PauseTime is how long this port's egress has been paused by PFC frames from the
	// peer; PausesRx counts those frames, PausesTx the pause and resume frames this port
	// sent upstream (its ingress being over XOff).
	PauseTime          units.Time
	PausesRx, PausesTx uint64
	// Idle is how long, since time 0, the egress had nothing to send on the computed
	// schedule: the line free and the queue empty (a port paused with frames queued is
	// not idle). Over an interval without pauses or rate changes, the interval less the
	// growth of Idle is the time the port was backlogged, serialising at Rate: TxBytes
	// grows by Rate × that time, to within the frame on the line at either end. A frame
	// the driver read late can take back part of a gap already reported (at most its
	// lateness): the gap it ends closes at its arrival, not when it was read.
	Idle units.Time
	// QueueBytes is the egress backlog now; MaxQueueBytes the largest it has been.
	QueueBytes, MaxQueueBytes units.Bytes
	// HeldBytes is the bytes that arrived on this port and still wait in the switch (what
	// PFC compares with XOff).
	HeldBytes units.Bytes
	// Lateness summarises Poll's now - Due for the data frames released on this port
	// (pause frames are not counted).
	Lateness Lateness
	// Skew summarises, over the frames enqueued on this port, how far each was
	// scheduled from where its arrival puts it: a frame the driver read late (after
	// the switch had passed its arrival) goes behind frames that arrived after it, by
	// their serialisation. Always 0 on the sim, where nothing is read late.
	Skew Lateness
}

// Dropped is the total of Drops.
func (p *PortStats) Dropped() uint64 {
	var n uint64
	for _, d := range p.Drops {
		n += d
	}
	return n
}

// Lateness summarises a port's durations (release lateness, schedule skew); see
// hist.Summary.
type Lateness = hist.Summary
