// Package afpacket is the I/O driver of reef's daemons on Linux: it moves frames between
// a daemon's veth ports (each in its own namespace, if need be) and its sans-I/O node (a
// switch daemon's shard, a host daemon's group of hosts, or anything with the node
// contract's three methods) and releases each frame when the node's computed
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
// Arrivals carry the computed schedule, not the wakeup's time. Every IPv4 frame a driver
// sends ends with a release trailer (trailer.go): its Due, the upstream node's computed
// release time. The receiving driver strips it before the node sees the frame and hands
// the frame to Receive at that Due (never later than the kernel's receive stamp; a Due
// later than the stamp or more than Config.MaxCarry older is rejected and counted), or
// at the kernel's receive stamp for frames without one (the kernel's own traffic).
// Frames from all rings are merged in arrival order (clamped so the node never sees
// time go backwards). A node whose sending an arrival unblocks (a host: ACKs, and the
// ACK a data frame asks for) is polled on that frame's port up to each arrival read late
// before it gets the frame (ArrivalClocked), so frames read in one batch clock its sends
// one by one. A daemon that was descheduled therefore releases late, but neither it nor
// the next hop computes different departures: lateness shows as lateness, never as
// queueing downstream (DESIGN principle 2). Every lab veth's MTU leaves room for the
// trailer (emulator/netns DeviceMTU).
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
// A switch clamps arrivals to the last time it was polled, so a carried Due earlier than
// the downstream daemon's last wakeup arrives at that wakeup instead (bounded by the
// wakeup, not by the upstream's lateness). PortStats.TxBytes counts the trailers.
package afpacket
