// Package afpacket is the I/O driver of one reef switch on Linux: it moves frames between
// the switch's veth ports and the sans-I/O pipeline (switchd.Switch, or anything with the
// node contract's three methods) and releases each frame when the pipeline's computed
// schedule says it is due.
//
// Where it sits in the flow:
//
//	veth port ──AF_PACKET TPACKET_V2 RX ring──► Node.Receive(now, port, frame)
//	                                             Node.Poll(now) ──sendto──► veth port
//	timerfd armed at Node.NextDeadline() ───────► wakes the loop
//
// One datapath goroutine, locked to its OS thread with timer slack 1 ns (and, when
// asked, SCHED_FIFO), owns the node: it waits in a raw epoll over every port's ring, one
// timerfd (CLOCK_MONOTONIC, absolute) and one eventfd used to stop it. Each wakeup reads
// the clock once, drains every RX ring into Receive, calls Poll until it returns false
// and writes each frame out, then re-arms the timerfd at NextDeadline. Nothing on that
// path allocates.
//
// Arrivals carry the kernel's receive timestamp, not the wakeup's: frames from all
// rings are merged in timestamp order and handed to Receive at their arrival time
// (clamped so the node never sees time go backwards). A daemon that was descheduled for
// a while therefore releases late, but computes the same departures as an on-time one.
//
// Time is the lab's: a Clock returns CLOCK_MONOTONIC nanoseconds minus an epoch shared by
// every daemon of a lab (passed on their command lines), so hosts and switches agree on
// units.Time without talking to each other.
//
// # Batches and buffer ownership
//
// RX: the mmap'd ring is the batch. Each wakeup walks up to RingFrames frames per port;
// the frame slice handed to Node.Receive aliases ring memory and is given back to the
// kernel as soon as Receive returns, so the node must copy what it keeps (the node
// contract says it does). TX: the frame returned by Node.Poll is valid until the next
// call on the node, so the driver copies it at once into its port's TX batch: BatchSize
// slots of one ring frame each, allocated when the port opens and owned by the driver.
// A batch goes out with one sendmmsg(2) when it is full and at the end of every wakeup's
// work, before the loop sleeps, so batching adds no delay beyond that work. Frames the
// kernel refuses (EAGAIN/ENOBUFS when the peer's backlog is full) are counted in
// TxErrors and lost, as on a wire.
//
// # Limitations
//
// Linux only, root (CAP_NET_RAW). No PACKET_TX_RING yet (one sendmmsg per batch).
// Frames longer than the ring's frame slot are counted in RxTruncated and dropped.
package afpacket
