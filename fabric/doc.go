// Package fabric is reef's in-memory fabric: switches (switchd.Switch) and hosts
// (hostd.Host) wired port to port on one discrete-event Engine. It contains no
// networking code and never reads a clock: callers pass now to every method. Links are
// not separate objects: a switch's egress schedule already computes serialisation and
// propagation, so a frame polled from a node at its Due is handed to the peer node at
// that same instant (switch to switch by exchanging buffers, not copying).
//
// It sits at the centre of two backends:
//
//   - the sim (emulator/sim) wires every node of a lab into one Fabric and runs it in
//     virtual time (Run);
//   - a shard (cmd/switchd with several switches) wires a part of the lab into one
//     Fabric, whose external ports are real veths: its I/O driver (afpacket)
//     hands it the frames that arrive (Receive), asks when it next has work
//     (NextDeadline) and takes the frames that leave (Poll), against the real clock.
//     Frames between two switches of the shard never leave the process.
//
// So the pipeline a shard runs is the sim's, event for event: the engine fires each
// node at its own computed time, whatever the time Poll is called at, and a frame that
// crosses an in-memory link arrives at exactly its Due.
//
// A Group runs several fabrics, the partitions of one large lab, in lockstep windows
// one link delay long, so that the sim can put every core on one run: cut links carry
// the frames between partitions, taken from the sending switch as soon as they leave
// it and delivered at their Due.
//
// # Usage
//
//	f := fabric.New()
//	a, b := f.AddSwitch(swA), f.AddSwitch(swB)
//	f.Link(a, 1, b, 0)         // in memory
//	ext := f.External(a, 0)    // port ext of the fabric is port 0 of swA
//	f.Receive(at, ext, frame)  // a frame from the wire
//	for { out, ok := f.Poll(now); if !ok { break }; send(out.Port, out.Frame) }
//
// A Fabric is not safe for concurrent use: one goroutine (the sim, or the driver's
// loop) owns it and every node in it. The package starts no goroutines; a Group hands
// its partitions' work to an executor the caller gives it.
//
// # Limitations
//
// One pending event per node (htsim's rule): a node's event is re-armed at its
// NextDeadline after every Receive and Poll, so the heap grows with the number of
// nodes, not packets. A host's external port is not supported yet: hosts live in the
// sim's fabric only.
package fabric
