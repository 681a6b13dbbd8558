// Command switchd is one reef switch: it reads its switchd.Config (JSON, written by the
// planner), opens its ports with the AF_PACKET driver (switchd/afpacket) in the network
// namespace it was started in, and forwards until SIGTERM or SIGINT.
//
// # Usage
//
//	switchd --config tor1.json --epoch 123456789 --stats tor1.stats.json [--ready-fd 3]
//
// --epoch is the lab's time zero in CLOCK_MONOTONIC nanoseconds, the same for every
// daemon of a lab. The stats file is rewritten every --stats-interval with the pipeline's
// per-port counters and the driver's own, and a last time on exit ("final": true), so
// tools read live stats from it. With --ready-fd the daemon writes one byte to that fd
// once its ports are open, then closes it; its parent (reef up) waits for that byte.
//
// For a run (the netns backend's Backend.Run) it also takes
//
//	--run-epoch NS --sample-interval 1ms --samples DIR/{node}.samples.json --events events.json
//
// and then samples every port each interval of run time (lab time minus --run-epoch),
// applies the run's timeline events to its ports at their run times, both from the
// datapath thread, and writes the time series with the final counters and lateness on
// exit (see samples.go).
//
// # Limitations
//
// Linux only; needs CAP_NET_RAW. One daemon per switch.
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
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"reef/switchd"
	"reef/switchd/afpacket"
	"reef/units"
)

// Report is what the stats file holds.
type Report struct {
	Node string `json:"node"`
	// Time is the lab time of the snapshot.
	Time units.Time `json:"time"`
	// Final is true for the snapshot written on exit.
	Final bool `json:"final"`
	// Ports are the pipeline's counters, in port order.
	Ports []switchd.PortStats `json:"ports"`
	// Driver holds the I/O driver's counters.
	Driver afpacket.Stats `json:"driver"`
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("switchd", "err", err)
		os.Exit(1)
	}
}

// DefaultSpin is --spin's default: off. Spinning through a close deadline saves a timer
// wakeup, which on a 2-core VM costs ~35 µs of CPU, but a busy switch then spins most
// of the time. Measured, two alternating runs each: on websearch-fct's leaf-spine 30 µs
// of spin cut the switches' CPU by 8% and raised the hosts' by 15%; on timely-incast
// the single switch spun 80% of a core (CPU +11%), starved its hosts and its runs
// degraded (13-15 timers fired before their ACKs were read, against none without).
const DefaultSpin = 0

func run(log *slog.Logger) error {
	var (
		cfgPath    = flag.String("config", "", "switch config (JSON switchd.Config)")
		epoch      = flag.Int64("epoch", -1, "lab time zero, CLOCK_MONOTONIC ns (default: now)")
		statsPath  = flag.String("stats", "", "stats file, rewritten periodically and on exit")
		interval   = flag.Duration("stats-interval", time.Second, "how often to rewrite the stats file")
		readyFd    = flag.Int("ready-fd", -1, "fd to write one byte to once the ports are open")
		ringFrames = flag.Int("ring-frames", 512, "RX ring slots per port")
		rtPrio     = flag.Int("rt-priority", 10, "run the datapath thread (only) under SCHED_FIFO at this priority (0: off; best effort)")
		nice       = flag.Int("nice", -20, "nice value of every thread (best effort)")
		rtAll      = flag.Bool("rt-all-threads", true, "run the runtime's threads under SCHED_FIFO at --rt-priority too")
		spin       = flag.Duration("spin", DefaultSpin, "busy-poll this long before each deadline instead of sleeping (0: off)")
		busyPoll   = flag.Duration("busy-poll", 0, "keep polling the rings this long after each arrival (0: off)")
	)
	flag.Parse()
	// The datapath allocates nothing per packet. Without GC cycles nothing ever scans
	// its goroutine: a scan in progress makes a SCHED_FIFO thread spin in exitsyscall
	// until the (lower-priority) scanning thread gets a CPU. Off before any thread
	// exists that could be caught mid-cycle; the memory limit still bounds the heap.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 30)
	if *cfgPath == "" {
		return errors.New("switchd: --config is required")
	}
	b, err := os.ReadFile(*cfgPath)
	if err != nil {
		return fmt.Errorf("switchd: %w", err)
	}
	var cfg switchd.Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("switchd: %s: %w", *cfgPath, err)
	}
	sw, err := switchd.New(cfg)
	if err != nil {
		return fmt.Errorf("switchd: %s: %w", *cfgPath, err)
	}
	if *epoch < 0 {
		*epoch = afpacket.MonotonicNow()
	}
	clock, err := afpacket.NewClock(*epoch)
	if err != nil {
		return err
	}
	names := make([]string, len(cfg.Ports))
	mtu := 0
	for i, p := range cfg.Ports {
		names[i] = p.Name
		mtu = max(mtu, p.MTU)
	}
	snapshots := make(chan []byte, 1)
	report := func(now units.Time, st *afpacket.Stats, final bool) []byte {
		r := Report{Node: cfg.Name, Time: now, Final: final, Ports: sw.Stats(), Driver: *st}
		out, _ := json.MarshalIndent(&r, "", "  ") // plain data: cannot fail
		return out
	}
	dcfg := afpacket.Config{
		Ports:      names,
		Port:       afpacket.PortOptions{MTU: mtu, RingFrames: *ringFrames, QdiscBypass: true},
		Clock:      clock,
		RTPriority: *rtPrio,
		Spin:       units.Time(*spin),
		BusyPoll:   units.Time(*busyPoll),
	}
	if *statsPath != "" && *interval > 0 {
		dcfg.Tick = units.Time(*interval)
		dcfg.OnTick = func(now units.Time, st *afpacket.Stats) {
			select {
			case snapshots <- report(now, st, false):
			default: // the writer is behind; skip this snapshot
			}
		}
	}
	node, err := newRunNode(sw, &cfg, *epoch)
	if err != nil {
		return err
	}
	drv, err := afpacket.Open(node, dcfg)
	if err != nil {
		return err
	}
	defer drv.Close()
	afpacket.NiceThreads(*nice)
	if *rtPrio > 0 && *rtAll {
		// Every runtime thread at the datapath's own priority: when the runtime
		// preempts the locked datapath goroutine, another thread must run the
		// scheduler to hand it back, and an ordinary thread waits behind the machine's
		// load for that (tens of ms measured). With GC off nothing scans goroutines,
		// which is what made RT runtime threads livelock before (see RealtimeThreads).
		afpacket.RealtimeThreads(*rtPrio)
	}
	if *readyFd >= 0 {
		f := os.NewFile(uintptr(*readyFd), "ready")
		_, _ = f.Write([]byte{1})
		f.Close()
	}
	log.Info("switchd up", "switch", cfg.Name, "ports", len(names), "epoch", *epoch)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	done := make(chan struct{})
	go func() { // the stats writer: off the datapath thread
		defer close(done)
		for {
			select {
			case b := <-snapshots:
				_ = writeFile(*statsPath, b)
			case <-ctx.Done():
				return
			}
		}
	}()
	err = drv.Run(ctx)
	<-done
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	if *statsPath != "" {
		st := drv.Stats()
		if werr := writeFile(*statsPath, report(clock.Now(), &st, true)); werr != nil {
			err = errors.Join(err, fmt.Errorf("switchd: stats: %w", werr))
		}
	}
	if werr := node.writeSamples(cfg.Name, clock.Now()); werr != nil {
		err = errors.Join(err, werr)
	}
	st := drv.Stats()
	log.Info("switchd down", "switch", cfg.Name, "wakeups", st.Wakeups, "timer_wakes", st.TimerWakes,
		"timer_arms", st.TimerArms, "arm_lead_us_log2", st.ArmLead, "wake_late_us_log2", st.WakeLate,
		"resumes", st.Resumes, "stalls", st.Stalls, "cpu", st.CPUTime)
	return err
}

// writeFile replaces path atomically.
func writeFile(path string, b []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
