// Command hostd runs reef hosts: it reads their jobs (JSON, written by the controller),
// runs each job's flows over its host's interface with reef's transport and congestion
// control, and writes what each host measured when the jobs' duration has passed. One
// daemon may run a group of hosts, each keeping its own namespace and interface, on one
// datapath thread.
//
// # Usage
//
//	hostd --job h1.job.json --epoch 123456789 --out h1.out.json [--ready-fd 3]
//	hostd --group hosts1.json --epoch 123456789 [--ready-fd 3]
//
// --epoch is the lab's time zero in CLOCK_MONOTONIC nanoseconds, the same for every
// daemon of a lab. A group file is a JSON list of {job, netns, out} (daemon.Member).
// With --ready-fd the daemon writes one byte to that fd once its interfaces are open,
// then closes it.
//
// # Limitations
//
// Linux only; needs CAP_NET_RAW (and CAP_SYS_ADMIN for hosts in other namespaces), and
// UDP port 5140 free on every host.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"reef/afpacket"
	_ "reef/cc/all"
	"reef/hostd/daemon"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("hostd", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	var (
		jobPath   = flag.String("job", "", "job file (JSON daemon.Job) of one host in this namespace")
		outPath   = flag.String("out", "", "where to write that host's output (JSON daemon.Output)")
		groupPath = flag.String("group", "", "group file (JSON []daemon.Member): several hosts, each in its namespace")
		epoch     = flag.Int64("epoch", -1, "lab time zero, CLOCK_MONOTONIC ns (default: now)")
		wireEpoch = flag.Int64("wire-epoch", -1, "lab time zero on the clock release trailers carry (default: --epoch; a lab across machines gives its shared start time)")
		readyFd   = flag.Int("ready-fd", -1, "fd to write one byte to once the interfaces are open")
	)
	flag.Parse()
	// GC off before any thread could be caught mid-cycle (see ready below); the memory
	// limit still bounds the heap (a run's samples take a few MB).
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 30)
	var members []daemon.Member
	switch {
	case *groupPath != "" && *jobPath == "":
		g, err := daemon.ReadGroup(*groupPath)
		if err != nil {
			return err
		}
		members = g
	case *jobPath != "" && *outPath != "" && *groupPath == "":
		job, err := daemon.ReadJob(*jobPath)
		if err != nil {
			return err
		}
		members = []daemon.Member{{Job: job, Out: *outPath}}
	default:
		return errors.New("hostd: give --job and --out, or --group")
	}
	if *epoch < 0 {
		*epoch = afpacket.MonotonicNow()
	}
	clock, err := afpacket.NewClock(*epoch)
	if err != nil {
		return err
	}
	if *wireEpoch >= 0 {
		clock.SetWireEpoch(*wireEpoch)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rtPrio := 0
	for _, m := range members {
		rtPrio = max(rtPrio, m.Job.RTPriority)
	}
	ready := func() {
		// As in switchd: every thread at nice -20 and, with GC off (no scan can catch a
		// FIFO thread spinning in exitsyscall), every runtime thread at the datapath's
		// priority, so a preempted datapath goroutine is handed back without waiting
		// behind the machine's load for an ordinary thread.
		afpacket.NiceThreads(-20)
		if rtPrio > 0 {
			afpacket.RealtimeThreads(rtPrio)
		}
		if *readyFd >= 0 {
			f := os.NewFile(uintptr(*readyFd), "ready")
			_, _ = f.Write([]byte{1})
			_ = f.Close()
		}
	}
	outs, err := daemon.RunGroup(ctx, members, clock, log, ready)
	if err != nil {
		return err
	}
	var errs []error
	for i, out := range outs {
		errs = append(errs, writeOutput(members[i].Out, out))
	}
	return errors.Join(errs...)
}

// writeOutput replaces path atomically with out as JSON.
func writeOutput(path string, out *daemon.Output) error {
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("hostd: encode output: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("hostd: %w", err)
	}
	return os.Rename(tmp, path)
}
