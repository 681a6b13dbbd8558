// Package netns is reef's default backend: it brings a plan (emulator/plan) up as real
// network namespaces wired by veth pairs, with one switchd daemon per switch forwarding
// through AF_PACKET (afpacket), so ordinary traffic (ping, iperf3, kernel TCP)
// and reef's own transport cross emulated links at their configured rate, delay and
// buffer. It sits after the planner in reef's flow: topo → plan → netns → daemons.
//
// # What Up makes
//
//   - A named network namespace per node, reef-<lab>-<node>, bind-mounted under
//     /run/netns exactly like `ip netns add` (so `ip netns exec` works), with IPv6
//     disabled and loopback up.
//   - A veth pair per link, both ends created directly inside their namespaces with the
//     planner's names and MACs, the device MTU DeviceMTU (the link's MTU plus reef's
//     release trailer), and every offload off on both ends (checksum,
//     scatter-gather, all segmentation, GRO, VLAN), so switches see MTU-sized frames
//     with complete checksums. A switch port's interface carries a shadow MAC (see
//     ifaceMAC) so the switch namespace's kernel drops every frame at once while
//     switchd sees it.
//   - Per host: its /32 address, the route LabNet via Gateway onlink (MTU locked at the
//     link's MTU, so the kernel's own packets never use the trailer's room), a permanent
//     neighbour entry Gateway → its ToR port MAC (no ARP ever), a tbf qdisc at the
//     host link's rate, and /etc/netns/<namespace>/hosts naming every host of the lab.
//   - Per switch: its switchd.Config as JSON in the lab directory and a switchd started
//     inside its namespace with the lab's epoch, whose readiness (ports open) Up waits
//     for.
//   - Where the lab is alone on a machine with more CPUs than it has shards, a CPU for
//     each shard's datapath thread and the rest for the hosts: their daemons, the programs Exec
//     starts in them, and their interfaces' receive work (RPS), recorded in state.json
//     (placeCPUs; Options.Unplaced leaves it to the scheduler).
//
// The lab directory /run/reef/<lab> holds state.json, an intent log written before
// anything it names is created, plus each switch's config, log and stats file. Down
// reads it and removes exactly those objects (processes in the lab's namespaces, the
// namespaces and with them the veths, the /etc/netns directories), also after Up or a
// daemon was killed halfway, and nothing else. A failed Up calls Down itself.
//
// # Usage
//
//	lab, err := netns.Up(ctx, p, netns.Options{})
//	err = netns.Exec(ctx, lab.Name, "h1", []string{"ping", "-c", "3", "h2"}, netns.Stdio{Out: os.Stdout})
//	err = netns.Down(ctx, lab.Name)
//
// The CLI wraps these as `reef up FILE`, `reef exec NODE -- CMD`, `reef ls` and
// `reef down [LAB]`. Up finds switchd with FindSwitchd.
//
// # Limitations
//
// Linux and root only. Namespaces are created a few at a time (Options.Workers), so a
// k=8 fat-tree (208 namespaces, 384 links) takes about 4.5 s on a 2-core machine. The
// kernel frees a namespace asynchronously, so its veths vanish shortly after Down
// returns. Lab and node names are joined with '-', so lab "a" node "b-c" and lab "a-b"
// node "c" would collide; Up refuses to reuse an existing namespace.
package netns
