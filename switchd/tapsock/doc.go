// Package tapsock lets `reef capture` see the links a switch daemon carries in memory.
//
// A shard (switchd/shard) hands frames between its switches without any interface a
// packet socket could listen on. With --tap-socket, cmd/switchd taps every in-memory
// port of its shard (shard.Shard.TapInMemory) into a Server listening on a Unix socket
// in the lab's directory. A client (emulator/netns Capture) asks for one port; from then
// until it hangs up, the daemon's datapath copies every frame crossing that port, both
// ways, into a preallocated single-producer ring (Ring: no allocation, no system call,
// no lock on the datapath), and a goroutine of the daemon streams the ring to the
// client. The client writes the frames as pcapng, each stamped with the time it crossed
// (its computed Due) and carrying the release trailer a veth hop would carry, so the
// file reads like a capture of a real link (reef trace, Wireshark).
//
// It sits beside the daemon in reef's flow:
//
//	reef capture NODE:PORT ─► netns.Capture ─► Dial ─► Unix socket ─► Server ─► Ring ◄─ shard (datapath)
//
// # Protocol
//
// The client sends one line, "capture SWITCH PORT\n" (PORT: the switch port's index),
// and reads one line back: "ok\n", or "error MESSAGE\n" and the end of the stream.
// After ok come records (Record, 16-byte header and the frame) until the client closes
// its writing half; the daemon then detaches, sends what the ring still holds, an end
// record carrying how many frames the ring had to drop, and closes.
package tapsock
