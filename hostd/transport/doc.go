// Package transport implements reef's reliable transport as a deterministic state
// machine. It contains no networking code and never reads a clock: callers pass now to
// every method and carry out the Transmits it returns.
//
// It sits between the pure host (package hostd), which owns the NIC and demultiplexes
// frames, and the congestion-control algorithms (package cc). One flow has a Sender on
// the source host and a Receiver on the destination host. Both follow quinn-proto's four
// method families:
//
//	HandlePacket(now, view)      // a reef frame for this flow arrived
//	HandleTimeout(now)           // NextDeadline has passed
//	PollTransmit(now, buf)       // the NIC is free: write the next frame into buf
//	NextDeadline()               // the earliest time anything above may do something
//
// # Reliability
//
// Data packets are numbered 0, 1, 2, … (wire Seq); a retransmission reuses its packet
// number and sets FlagRetx. The receiver acknowledges cumulatively (Ack) and with up to
// wire.MaxSack SACK blocks; the ACK's Seq is the packet that triggered it and EchoTS its
// transmit time, so every ACK carries one unambiguous RTT sample.
//
// Loss detection is time based (RACK, RFC 8985) so that packet spraying does not look
// like loss: duplicate ACKs mean nothing. A packet is lost once a packet sent after it
// has been acknowledged and more than its RTT plus a reorder window has passed since it
// was sent. The reorder window is max(MinReorderWindow, ReorderFraction × srtt) and
// grows each time a spurious retransmission is detected. A retransmission timeout (RTO)
// re-sends the oldest packet in flight, even past the window; the ACK of that probe lets
// RACK recover the rest. The timeout is srtt plus a margin, as Linux computes it: the
// largest 4·rttvar (RFC 6298) of the last RTT, decaying slowly, and at least MinRTO, two
// base RTTs and srtt; it backs off exponentially up to MaxRTO and restarts on every ACK
// that acknowledges new data. A long-lived flow that loses nothing takes no timeout.
// Tuning.DupThresh optionally adds classic hole detection (a packet is lost once that
// many later packets are acknowledged), for baselines that must behave like
// SACK-based Swift under spraying.
//
// # Window and pacing
//
// The sender never has more payload bytes in flight than cc.Algorithm.Window() and never
// sends faster than Rate() (counted in frame bytes). When the window is below one MSS
// and Rate() is 0 (Swift's "cwnd < 1" mode) it sends one packet every
// srtt × MSS / window, regardless of what is in flight (baselines.md §3.1: "if cwnd < 1
// pkt: send one packet every rtt/cwnd"); with a rate it keeps one packet in flight,
// paced at the rate. A retransmission-timeout probe is the one packet allowed past the
// window.
//
// # ACK policy
//
// By default every data packet is acknowledged at once. A flow may ask for coalescing
// (an ACK every N packets, or after a delay) and for DCQCN congestion notification
// packets (at most one per interval, for CE-marked packets); both travel in the data
// packets' otherwise unused Ack field (bits 0-15 ACK every, 16-47 ACK delay in ns,
// 48-63 CNP interval in µs), so the receiving host needs no configuration. CE-marked,
// out-of-order, duplicate and final packets are acknowledged at once whatever the
// policy. An ACK's Seq and EchoTS are those of the latest data packet it covers, its
// hop slots carry that packet's INT records, its EchoMPD that packet's MPD and its
// FlagEchoMPDSeen whether any INT switch stamped that MPD (cc.Feedback.HasMPD), its
// PathHops the switches that packet crossed (64 − TTL), and its Inflight that packet's
// Inflight; switches stamp the ACK's own MPD on the way back (cc.Feedback.ReverseMPD).
package transport
