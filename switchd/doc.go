// Package switchd implements reef's switch pipeline as a deterministic state machine. It
// contains no networking code and never reads a clock: callers pass now to every method,
// hand it the frames that arrived (Receive) and send the frames it returns (Poll) when
// they are due. The same Switch value runs inside the sim backend, in virtual time, and
// under the AF_PACKET driver of the switchd daemon, on the monotonic clock.
//
// It sits between the links in reef's flow: ports → parse → route/LB → queue (rate,
// delay, buffer, ECN, INT) → ports.
//
// # The flow of a frame
//
//  1. Receive copies the frame into a buffer from a preallocated pool and puts it on
//     the port's ingress delay line (PortConfig.IngressDelay: the propagation of a link
//     whose far end, a host, shapes only the rate). Forward does the same for a frame
//     another Switch's Poll just returned, exchanging buffers instead of copying.
//  2. When it leaves the line it is parsed (wire.Classify). PFC frames pause the port's
//     egress; anything else that is not IPv4 is dropped and counted. The TTL is
//     decremented (checksum patched; dropped at expiry).
//  3. Routing: pins first, then the longest matching prefix; its group's up ports are
//     the candidates, among which the load balancer picks (ecmp, spray, adaptive,
//     flowlet: one file each).
//  4. The egress queue is a byte-counted FIFO with tail drop. ECN marks ECT packets at
//     enqueue from the backlog they find (step or RED). The Ethernet header is rewritten
//     (source: the port's MAC, destination: PeerMAC).
//  5. Departures are computed, never slept: serialisation of a frame starts at
//     max(arrival, previous departure, end of a PFC pause) and ends at busyStart +
//     rate.TxTime(busyBytes), cumulative over a busy period so rounding does not
//     accumulate. A head is scheduled only once the line is free for it, so pauses and
//     rate changes apply exactly in virtual time, but always from computed times: a
//     late Poll releases the same frames with the same Due times as an on-time one.
//  6. At departure, INT stamps reef packets (hpcc: a hop record with the departure
//     time, cumulative tx bytes, backlog and rate; mpd: max per-hop queueing delay,
//     written when the frame leaves, from the times its departure computed) and PFC
//     releases the bytes held for the ingress port (resuming it at XOn).
//  7. The frame is Due at departure + PortConfig.Delay; Poll returns it then, and the
//     driver's lateness (now − Due) goes into a fixed-size histogram per port.
//
// Ordinary IPv4 (ping, iperf3, kernel TCP) is forwarded, ECN-marked and queued like reef
// traffic; only reef packets are touched by INT.
//
// Events are processed in time order across ports (ties: departures before arrivals;
// arrivals at the same instant on different ports in a random order drawn from
// Config.Seed, so that no port is always queued first), so a run is reproducible for a
// given input sequence and Config.Seed.
//
// # Usage
//
//	sw, err := switchd.New(cfg) // cfg from the planner; errors name the port or field
//	// on a frame from the wire:
//	sw.Receive(now, port, frame)
//	// whenever now reaches sw.NextDeadline():
//	for {
//		out, ok := sw.Poll(now)
//		if !ok {
//			break
//		}
//		send(out.Port, out.Frame) // out.Frame is valid until the next call on sw
//	}
//	// timeline events: sw.SetPortRate(now, p, r), sw.SetPortUp(now, p, false)
//	// telemetry: sw.Stats(), sw.Depths(now, buf)
//
// A Switch is not safe for concurrent use; one goroutine (the driver's loop, or the sim
// engine) owns it.
//
// # Limitations
//
//   - One traffic class: PFC pauses priority 0 only, and a paused port stops all its
//     traffic. Losslessness needs XOff + PFCHeadroom within the egress buffers (New
//     checks one port against the smallest buffer; several PFC ports converging on one
//     egress need the sum, which New cannot know). Hosts must honour pause frames too.
//   - Non-IPv4 frames (ARP, IPv6) are dropped: backends install static neighbours.
//     IPv4 options are forwarded but not interpreted; no ICMP is generated (TTL expiry
//     and missing routes are silent drops, counted).
//   - A rate change applies from the next frame to start serialisation; a port going
//     down lets the frame being serialised finish and delivers frames already on the
//     link.
//   - Flowlet mode uses a 4096-slot table indexed by flow hash; colliding flows share
//     a flowlet. Adaptive routing reads only local queues (mswift.md §4.2).
//   - The frame pool grows on demand to 16× its initial budget (at least 64 Ki frames)
//     and then drops (DropNoBuffer); growing allocates, steady state does not.
//     Switches one goroutine drives may share a pool (SharePool), whose limit is then
//     the sum of theirs.
package switchd
