// Package docker is reef's Docker backend: it brings a plan (emulator/plan) up as one
// container per host and per switch, wired by veth pairs the controller creates directly
// inside the containers' network namespaces, so a host can run any image a user has
// (iperf3, their own service, a student's shell) on an emulated fabric. It sits beside
// emulator/netns in reef's flow (topo → plan → netns | docker → daemons) and shares
// netns's machinery rather than copying it.
//
// # What Up makes
//
//   - Per node a container reef-<lab>-<node> with network mode none, capabilities
//     NET_ADMIN and NET_RAW added to Docker's defaults (not privileged), IPv6 off,
//     labels reef.lab=<lab>, reef.node=<node>, reef.role=host|switch, reef's static
//     daemons mounted read-only at /reef, and /reef/reefpause as its first process.
//     Hosts run HostdImage or the image the user named; switches SwitchdImage.
//   - Each container's network namespace bind-mounted at /run/netns/reef-<lab>-<node>
//     (netns.AdoptPid), so everything that works on a netns lab works here: the same
//     veths with offloads off (netns.WireLink), addresses, routes, neighbours and tbf
//     (netns.SetupHost), `ip netns exec`, captures, and Backend.Run (netns.Backend with
//     a Lifecycle from this package).
//   - switchd started inside each switch container (nsenter into its mount, UTS, IPC
//     and network namespaces) but in the controller's cgroup, where its SCHED_FIFO
//     datapath thread gets real-time time (container cgroups have none on this kernel).
//
// The lab directory /run/reef/<lab> holds netns's state.json (intent log) plus
// MarkerFile. Down removes every container labelled with the lab (also containers whose
// create was in flight when a controller died), then what netns.Down removes.
//
// # Images without a registry
//
// BuildImages (`reef image build`) imports SwitchdImage and HostdImage from tar rootfs of
// static (CGO_ENABLED=0) builds of switchd, hostd and reefpause; `--tools` adds
// ToolsImage with a static busybox from the machine (Debian's busybox-static). Up builds
// reef's images itself when they are missing; a user's image must already be in the
// engine.
//
// # Usage
//
//	lab, err := docker.Up(ctx, p, docker.Options{Images: map[string]string{"h1": "myimage"}})
//	err = docker.Exec(ctx, lab.Name, "h1", []string{"iperf3", "-c", "h2"}, netns.Stdio{Out: os.Stdout})
//	err = docker.Down(ctx, lab.Name)
//
// `reef up FILE --backend docker`, `reef exec`, `reef capture`, `reef down` and
// `reef run EXPERIMENT --backend docker` wrap these. Exec runs a program fully inside the
// container when its image has it, else the machine's program in the container's network
// namespace.
//
// # Limitations
//
// Linux, root, a local engine on a unix socket. Containers come up far slower than
// namespaces (fat-tree-k4: tens of seconds against under a second). hostd in a run
// runs from the machine's binary in the host container's network namespace only.
package docker
