package switchd

import (
	"math"
	"math/bits"

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
	// ECNMarks counts ECT packets marked CE at this port's egress queue.
	ECNMarks uint64
	// PauseTime is how long this port's egress has been paused by PFC frames from the
	// peer; PausesRx counts those frames, PausesTx the pause and resume frames this port
	// sent upstream (its ingress being over XOff).
	PauseTime          units.Time
	PausesRx, PausesTx uint64
	// QueueBytes is the egress backlog now; MaxQueueBytes the largest it has been.
	QueueBytes, MaxQueueBytes units.Bytes
	// HeldBytes is the bytes that arrived on this port and still wait in the switch (what
	// PFC compares with XOff).
	HeldBytes units.Bytes
	// Lateness summarises Poll's now - Due for the data frames released on this port
	// (pause frames are not counted).
	Lateness Lateness
}

// Dropped is the total of Drops.
func (p *PortStats) Dropped() uint64 {
	var n uint64
	for _, d := range p.Drops {
		n += d
	}
	return n
}

// Lateness summarises how late the driver released frames: quantiles come from a
// log-linear histogram with 16 sub-buckets per power of two (within 6.25 % above the
// true value); Max is exact.
type Lateness struct {
	Count         uint64
	P50, P99, Max units.Time
}

// histogram is a fixed-size log-linear histogram of non-negative durations: values
// below 16 ns have their own bucket, larger ones keep their top 5 significant bits.
type histogram struct {
	b   [64 * 16]uint64
	n   uint64
	max units.Time
	sum Lateness // summary as of sum.Count == n: quantiles are computed on demand, once
}

func bucketOf(v uint64) int {
	if v < 16 {
		return int(v)
	}
	e := bits.Len64(v) - 5
	return (e+1)*16 + int(v>>uint(e)&15)
}

// bucketTop is the largest value that falls in bucket i.
func bucketTop(i int) uint64 {
	if i < 16 {
		return uint64(i)
	}
	e := uint(i/16 - 1)
	lo := uint64(16+i%16) << e
	return lo + (1 << e) - 1
}

func (h *histogram) add(v units.Time) {
	if v < 0 {
		v = 0
	}
	h.b[bucketOf(uint64(v))]++
	h.n++
	h.max = max(h.max, v)
}

// quantile returns the upper edge of the bucket holding the q-quantile, capped at max.
func (h *histogram) quantile(q float64) units.Time {
	if h.n == 0 {
		return 0
	}
	rank := max(1, uint64(math.Ceil(q*float64(h.n)))) // nearest rank
	var seen uint64
	for i := range bucketOf(uint64(h.max)) + 1 { // no value lies above max's bucket
		seen += h.b[i]
		if seen >= rank {
			return min(units.Time(bucketTop(i)), h.max)
		}
	}
	return h.max
}

// summary returns the Lateness of the values added so far. Its quantiles walk the
// buckets, so it is cached until the next add: a driver sampling stats often pays for
// them only when something was released in between.
func (h *histogram) summary() Lateness {
	if h.sum.Count != h.n || h.n == 0 {
		h.sum = Lateness{Count: h.n, P50: h.quantile(0.50), P99: h.quantile(0.99), Max: h.max}
	}
	return h.sum
}
