package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"reef/emulator/netns"
)

// Agent is what runs on each machine, as the lab's task there (`reef agent`): it reads
// its Spec, brings its slice of the lab up with the netns backend (namespaces, veths,
// tunnels, switch daemons), measures its peers' clocks, says it is ready (ReadyFile),
// takes part in the run if there is one, and on SIGTERM (the service removed) takes
// its slice down. It schedules nothing and keeps no membership: Swarm does that.
func Agent(ctx context.Context, specPath string, log *slog.Logger) error {
	b, err := os.ReadFile(specPath)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	var spec Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("agent: %s: %w", specPath, err)
	}
	if spec.Plan == nil {
		return fmt.Errorf("agent: %s: no plan", specPath)
	}
	unmaskProcSys(log)
	realTimeBudget(log)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	c := clock{offset: spec.ClockOffset}

	// Answer the peers' clock probes from the start: they measure while this machine
	// is still bringing its part up.
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(spec.Addr, uint16(ClockPort(spec.Lab)))))
	if err != nil {
		return fmt.Errorf("agent: clock probes: %w", err)
	}
	cctx, stopClock := context.WithCancel(context.WithoutCancel(ctx))
	defer stopClock()
	go serveClock(cctx, pc, c)

	ready := AgentReady{Machine: spec.Machine}
	if ready.Clocks, err = probePeers(ctx, &spec, c, 100, 30*time.Second); err != nil {
		return err
	}
	if err := checkMargins(&spec, ready.Clocks); err != nil {
		if spec.Run != nil {
			return err // a run's results would not be what the lab computes
		}
		// A lab brought up for kernel tools (ping, iperf3) still works; its frames on
		// the cut links are late by what the delay does not cover.
		log.Warn("cut links too short for the tunnel", "err", err)
		ready.Warnings = append(ready.Warnings, err.Error())
	}
	if spec.Run != nil {
		if err := os.MkdirAll(filepath.Dir(ReadyFile(spec.Lab)), 0o755); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		if err := netns.WriteJSON(ReadyFile(spec.Lab), &ready); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		if err := agentRun(ctx, &spec, c, log); err != nil {
			log.Error("run", "err", err)
		}
		<-ctx.Done() // the controller copies the results out, then removes the task
		return nil
	}
	t0 := time.Now()
	lab, err := netns.Up(ctx, spec.Plan, netns.Options{Switchd: filepath.Join(filepath.Dir(exe), "switchd"), Topology: spec.Topology,
		SwitchdArgs: spec.SwitchdArgs, Slice: &spec.Slice, Log: log, Epoch: monoAt(spec.Start, c), WireEpoch: spec.Start})
	if err != nil {
		return err
	}
	log.Info("slice up", "lab", spec.Lab, "machine", spec.Machine, "nodes", len(spec.Slice.Nodes), "tunnels", len(spec.Slice.Tunnels), "elapsed", time.Since(t0).Round(time.Millisecond))
	defer func() {
		if derr := netns.Down(context.WithoutCancel(ctx), lab.Name); derr != nil {
			log.Error("slice down", "err", derr)
		}
	}()
	if err := netns.WriteJSON(ReadyFile(spec.Lab), &ready); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	log.Info("ready", "lab", spec.Lab, "machine", spec.Machine, "clocks", ready.Clocks)
	<-ctx.Done()
	return nil
}

// checkMargins refuses a cut link whose emulated delay cannot cover the tunnel to the
// other machine as measured: its transit, the two clocks' offset and the jitter. A
// frame would then reach the far switch after the time it was due there, and the cut
// would change the result.
func checkMargins(spec *Spec, clocks []ClockSample) error {
	byAddr := map[netip.Addr]string{}
	for _, p := range spec.Peers {
		byAddr[p.Addr] = p.Name
	}
	byPeer := map[string]ClockSample{}
	for _, c := range clocks {
		byPeer[c.Peer] = c
	}
	var errs []error
	for i, t := range spec.Slice.Tunnels {
		l := spec.Plan.Links[i]
		peer := byAddr[t.Remote]
		s, ok := byPeer[peer]
		if !ok {
			continue
		}
		if m := s.Margin(); time.Duration(l.Delay) < m {
			errs = append(errs, fmt.Errorf("agent: link %s, cut between %s and %s: its emulated delay %v cannot cover the tunnel (transit %v + clock offset %v + jitter %v = %v); place both ends on one machine (--place) or run at a larger time scale",
				linkName(l), spec.Machine, peer, time.Duration(l.Delay), s.Transit, s.Offset, s.Jitter, m))
		}
	}
	return errors.Join(errs...)
}

// monoAt converts wall (this machine's lab clock, ns) to CLOCK_MONOTONIC.
func monoAt(wall int64, c clock) int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano() + (wall - c.now())
}

// unmaskProcSys makes /proc/sys writable in the agent's container: Docker mounts it
// read-only, and the lab's namespaces need their own sysctls (IPv6 off, for one). The
// agent holds SYS_ADMIN in its own mount namespace, which is what this needs; the
// sysctls it writes are its namespaces' own.
func unmaskProcSys(log *slog.Logger) {
	for range 4 { // stacked read-only mounts, if any
		if err := unix.Unmount("/proc/sys", unix.MNT_DETACH); err != nil {
			if !errors.Is(err, unix.EINVAL) {
				log.Debug("unmask /proc/sys", "err", err)
			}
			return
		}
	}
}

// HostCgroup is where the agent's task mounts the machine's cgroup hierarchies.
const HostCgroup = "/host/cgroup"

// realTimeBudget moves the agent, and so the daemons it starts, into the machine's
// root CPU cgroup (cgroup v1), still inside its container's other namespaces. A
// container's own CPU cgroup has no real-time budget (cpu.rt_runtime_us 0), so the
// daemons' SCHED_FIFO datapath threads would fall back to normal priority, and a
// service cannot ask for one (docker service create has no --cpu-rt-runtime). The
// docker backend keeps its daemons out of the containers' cgroups for the same
// reason. On cgroup v2, or without the mount, nothing changes and the daemons say
// they run without real-time priority.
func realTimeBudget(log *slog.Logger) {
	for _, d := range []string{"cpu,cpuacct", "cpu"} {
		procs := filepath.Join(HostCgroup, d, "cgroup.procs")
		if _, err := os.Stat(procs); err != nil {
			continue
		}
		if err := os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			log.Warn("no real-time budget for the daemons", "err", err)
		}
		return
	}
	log.Debug("no cgroup v1 cpu hierarchy mounted; the daemons keep the container's CPU cgroup")
}
