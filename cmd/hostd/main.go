// Command hostd is one reef host: it reads its job (JSON, written by the controller),
// runs the job's flows over the host's interface with reef's transport and congestion
// control, and writes what it measured when the job's duration has passed.
//
// # Usage
//
//	hostd --job h1.job.json --epoch 123456789 --out h1.out.json [--ready-fd 3]
//
// --epoch is the lab's time zero in CLOCK_MONOTONIC nanoseconds, the same for every
// daemon of a lab. With --ready-fd the daemon writes one byte to that fd once its
// interface is open, then closes it.
//
// # Limitations
//
// Linux only; needs CAP_NET_RAW, and UDP port 5140 free on the host.
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

	_ "reef/cc/all"
	"reef/hostd/daemon"
	"reef/switchd/afpacket"
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
		jobPath = flag.String("job", "", "job file (JSON daemon.Job)")
		epoch   = flag.Int64("epoch", -1, "lab time zero, CLOCK_MONOTONIC ns (default: now)")
		outPath = flag.String("out", "", "where to write the output (JSON daemon.Output)")
		readyFd = flag.Int("ready-fd", -1, "fd to write one byte to once the interface is open")
	)
	flag.Parse()
	// GC off before any thread could be caught mid-cycle (see ready below); the memory
	// limit still bounds the heap (a run's samples take a few MB).
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 30)
	if *jobPath == "" || *outPath == "" {
		return errors.New("hostd: --job and --out are required")
	}
	job, err := daemon.ReadJob(*jobPath)
	if err != nil {
		return err
	}
	if *epoch < 0 {
		*epoch = afpacket.MonotonicNow()
	}
	clock, err := afpacket.NewClock(*epoch)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ready := func() {
		// As in switchd: every thread at nice -20 and, with GC off (no scan can catch a
		// FIFO thread spinning in exitsyscall), every runtime thread at the datapath's
		// priority, so a preempted datapath goroutine is handed back without waiting
		// behind the machine's load for an ordinary thread.
		afpacket.NiceThreads(-20)
		if job.RTPriority > 0 {
			afpacket.RealtimeThreads(job.RTPriority)
		}
		if *readyFd >= 0 {
			f := os.NewFile(uintptr(*readyFd), "ready")
			_, _ = f.Write([]byte{1})
			_ = f.Close()
		}
	}
	out, err := daemon.Run(ctx, job, clock, log.With("host", job.Host.Name), ready)
	if err != nil {
		return err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("hostd: encode output: %w", err)
	}
	tmp := *outPath + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("hostd: %w", err)
	}
	return os.Rename(tmp, *outPath)
}
