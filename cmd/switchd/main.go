// Command switchd is one reef switch daemon: it runs a shard (switchd/shard), one or
// more switches wired in memory, opens the shard's external ports with the AF_PACKET
// driver (afpacket), each in its own network namespace, and forwards until
// SIGTERM or SIGINT.
//
// # Usage
//
//	switchd --shard shard1.json --epoch 123456789 --stats 'DIR/{node}.stats.json' [--ready-fd 3]
//	switchd --config tor1.json ...   # one switch, every port in the daemon's namespace
//
// With --tap-socket PATH it also serves captures of the shard's in-memory links there
// (switchd/tapsock): `reef capture` of such a link asks this daemon for its frames.
//
// --epoch is the lab's time zero in CLOCK_MONOTONIC nanoseconds, the same for every
// daemon of a lab. Each switch's stats file ({node} is replaced by its name) is
// rewritten every --stats-interval with the pipeline's per-port counters and the
// driver's own, and a last time on exit ("final": true), so tools read live stats from
// it. With --ready-fd the daemon writes one byte to that fd once its ports are open,
// then closes it; its parent (reef up) waits for that byte. On exit it logs its
// driver's counters and what the run allocated (run_mallocs, run_alloc_bytes): the
// daemon runs with the GC off, so nothing it does periodically may allocate.
//
// For a run (the netns backend's Backend.Run) it also takes
//
//	--run-epoch NS --sample-interval 1ms --samples DIR/{node}.samples.json --events events.json
//
// and then samples every port each interval of run time (lab time minus --run-epoch)
// and applies the run's timeline events to its ports at their run times, both as events
// of the shard's engine, in time order with the frames, and writes each switch's time
// series with the final counters and lateness on exit.
//
// # Limitations
//
// Linux only; needs CAP_NET_RAW (and CAP_SYS_ADMIN for ports in other namespaces).
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
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"reef/afpacket"
	"reef/internal/cpuset"
	"reef/switchd"
	"reef/switchd/shard"
	"reef/switchd/tapsock"
	"reef/units"
)

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

// flags are the daemon's command line.
type flags struct {
	shard, config, stats, samples, events string
	edges, tapSocket                      string
	epoch, runEpoch, wireEpoch            int64
	interval, sampleInterval              time.Duration
	readyFd, ringFrames, rtPrio, nice     int
	rtAll                                 bool
	cpus                                  string
	spin, busyPoll, quantum               time.Duration
}

func parseFlags() *flags {
	f := &flags{}
	flag.StringVar(&f.shard, "shard", "", "shard config (JSON shard.Config): the switches this daemon runs")
	flag.StringVar(&f.config, "config", "", "one switch's config (JSON switchd.Config), every port in this namespace")
	flag.Int64Var(&f.epoch, "epoch", -1, "lab time zero, CLOCK_MONOTONIC ns (default: now)")
	flag.StringVar(&f.stats, "stats", "", "stats file, rewritten periodically and on exit; {node} is replaced by the switch's name")
	flag.DurationVar(&f.interval, "stats-interval", time.Second, "how often to rewrite the stats file")
	flag.IntVar(&f.readyFd, "ready-fd", -1, "fd to write one byte to once the ports are open")
	flag.IntVar(&f.ringFrames, "ring-frames", 0, "RX ring slots per port (0: enough for each port's link rate, afpacket.RingFramesFor)")
	flag.IntVar(&f.rtPrio, "rt-priority", 10, "run the datapath thread (only) under SCHED_FIFO at this priority (0: off; best effort)")
	flag.IntVar(&f.nice, "nice", -20, "nice value of every thread (best effort)")
	flag.BoolVar(&f.rtAll, "rt-all-threads", true, "run the runtime's threads under SCHED_FIFO at --rt-priority too")
	flag.StringVar(&f.cpus, "cpus", "", "run the datapath thread on these CPUs only, a list such as 1 or 2-3 (default: wherever the scheduler puts it)")
	flag.DurationVar(&f.spin, "spin", DefaultSpin, "busy-poll this long before each deadline instead of sleeping (0: off)")
	flag.DurationVar(&f.busyPoll, "busy-poll", 0, "keep polling the rings this long after each arrival (0: off)")
	flag.DurationVar(&f.quantum, "quantum", 0, "wake only on a grid of this period, releasing what fell due within it together (0: at every deadline)")
	flag.StringVar(&f.samples, "samples", "", "write the run's per-port samples and final counters (JSON) here on exit; {node} is replaced by the switch's name")
	flag.DurationVar(&f.sampleInterval, "sample-interval", 0, "sample every port this often (run time); 0: no time series")
	flag.Int64Var(&f.runEpoch, "run-epoch", -1, "the run's time zero, CLOCK_MONOTONIC ns (default: --epoch)")
	flag.Int64Var(&f.wireEpoch, "wire-epoch", -1, "lab time zero on the clock release trailers carry (default: --epoch on CLOCK_MONOTONIC; a lab across machines gives its shared start time)")
	flag.StringVar(&f.events, "events", "", "timeline events (JSON []shard.PortEvent; entries for other switches are ignored)")
	flag.StringVar(&f.tapSocket, "tap-socket", "", "listen on this Unix socket for captures of the shard's in-memory links (switchd/tapsock; reef capture)")
	flag.StringVar(&f.edges, "edges", "", "snapshot every port's counters exactly at these run times (comma-separated durations: the measurement window's edges)")
	flag.Parse()
	return f
}

func run(log *slog.Logger) error {
	f := parseFlags()
	// The datapath allocates nothing per packet. Without GC cycles nothing ever scans
	// its goroutine: a scan in progress makes a SCHED_FIFO thread spin in exitsyscall
	// until the (lower-priority) scanning thread gets a CPU. Off before any thread
	// exists that could be caught mid-cycle; the memory limit still bounds the heap.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 30)
	cfg, err := readConfig(f)
	if err != nil {
		return err
	}
	if len(cfg.Switches) > 1 {
		for _, p := range []string{f.stats, f.samples} {
			if p != "" && !strings.Contains(p, "{node}") {
				return fmt.Errorf("switchd: shard %s runs %d switches: --stats and --samples need {node} in their paths", cfg.Name, len(cfg.Switches))
			}
		}
	}
	if f.epoch < 0 {
		f.epoch = afpacket.MonotonicNow()
	}
	clock, err := afpacket.NewClock(f.epoch)
	if err != nil {
		return err
	}
	if f.wireEpoch >= 0 {
		clock.SetWireEpoch(f.wireEpoch)
	}
	rc, err := runConfig(f)
	if err != nil {
		return err
	}
	sh, err := shard.New(cfg, rc)
	if err != nil {
		return fmt.Errorf("switchd: %w", err)
	}
	var cpus []int
	if f.cpus != "" {
		if cpus, err = cpuset.Parse(f.cpus); err != nil {
			return fmt.Errorf("switchd: --cpus: %w", err)
		}
	}
	dcfg := afpacket.Config{
		Clock:      clock,
		CPUs:       cpus,
		RTPriority: f.rtPrio,
		Spin:       units.Time(f.spin),
		BusyPoll:   units.Time(f.busyPoll),
		Quantum:    units.Time(f.quantum),
	}
	mtu := 0
	for _, sc := range cfg.Switches {
		for _, p := range sc.Ports {
			mtu = max(mtu, p.MTU)
		}
	}
	dcfg.Port = afpacket.PortOptions{MTU: mtu, RingFrames: f.ringFrames, QdiscBypass: true}
	for _, p := range cfg.Ports {
		dcfg.Ports = append(dcfg.Ports, p.Iface)
		dcfg.Netns = append(dcfg.Netns, p.Netns)
		if f.ringFrames <= 0 { // each ring holds afpacket.RingHold at its link's rate
			pc, _ := cfg.PortConfig(p.End) // validated by shard.New
			dcfg.Rings = append(dcfg.Rings, afpacket.RingFramesFor(pc.Rate, pc.MTU))
		}
	}
	var pipe *statsPipe
	if f.stats != "" && f.interval > 0 {
		pipe = newStatsPipe(sh)
		dcfg.Tick = units.Time(f.interval)
		dcfg.OnTick = func(now units.Time, st *afpacket.Stats) { pipe.tick(sh, now, st) }
	}
	if f.tapSocket != "" && len(cfg.Links) > 0 {
		taps, err := tapInMemory(sh, clock, log)
		if err != nil {
			return err
		}
		// Listening before the ready byte: a capture may follow reef up at once.
		if err := taps.Listen(f.tapSocket); err != nil {
			return fmt.Errorf("switchd: %w", err)
		}
		defer os.Remove(f.tapSocket)
		defer taps.Close() // captures running get their end before the daemon exits
	}
	drv, err := afpacket.Open(sh, dcfg)
	if err != nil {
		return err
	}
	defer drv.Close()
	var mem0, mem1 runtime.MemStats // what the run allocated, for the down line
	runtime.ReadMemStats(&mem0)
	afpacket.NiceThreads(f.nice)
	if f.rtPrio > 0 && f.rtAll {
		// Every runtime thread at the datapath's own priority: when the runtime
		// preempts the locked datapath goroutine, another thread must run the
		// scheduler to hand it back, and an ordinary thread waits behind the machine's
		// load for that (tens of ms measured). With GC off nothing scans goroutines,
		// which is what made RT runtime threads livelock before (see RealtimeThreads).
		afpacket.RealtimeThreads(f.rtPrio)
	}
	sh.Prefault() // the run's first frames and samples take no page faults
	if f.readyFd >= 0 {
		rf := os.NewFile(uintptr(f.readyFd), "ready")
		_, _ = rf.Write([]byte{1})
		rf.Close()
	}
	log.Info("switchd up", "shard", cfg.Name, "switches", len(cfg.Switches), "ports", len(cfg.Ports),
		"in_memory_links", len(cfg.Links), "epoch", f.epoch)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	done := make(chan struct{})
	files := newStatsFiles(f.stats, cfg)
	go func() { // the stats writer: off the datapath thread
		defer close(done)
		if pipe == nil {
			return
		}
		for {
			select {
			case s := <-pipe.full:
				_ = files.write(s)
				pipe.free <- s
			case <-ctx.Done():
				return
			}
		}
	}()
	err = drv.Run(ctx)
	<-done
	runtime.ReadMemStats(&mem1)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	now := clock.Now()
	st := drv.Stats()
	if f.stats != "" {
		s := newSnapshot(sh)
		s.fill(sh, now, &st, true)
		if werr := files.write(s); werr != nil {
			err = errors.Join(err, fmt.Errorf("switchd: stats: %w", werr))
		}
	}
	if f.samples != "" {
		for i, sc := range cfg.Switches {
			s := sh.Samples(i, now)
			for k, p := range cfg.Ports { // what the kernel or a write lost at a port
				if p.Switch == sc.Name && p.Port < len(s.Ports) && k < len(st.Ports) {
					s.Ports[p.Port].Lost = int64(st.Ports[k].Lost())
				}
			}
			b, merr := json.Marshal(&s)
			if merr == nil {
				merr = writeFile(strings.ReplaceAll(f.samples, "{node}", sc.Name), b)
			}
			if merr != nil {
				err = errors.Join(err, fmt.Errorf("switchd: %s samples: %w", sc.Name, merr))
			}
		}
	}
	log.Info("switchd down", "shard", cfg.Name, "in_memory_hops", sh.Hops(), "wakeups", st.Wakeups, "timer_wakes", st.TimerWakes,
		"timer_arms", st.TimerArms, "arm_lead_us_log2", st.ArmLead, "wake_late_us_log2", st.WakeLate,
		"resumes", st.Resumes, "stalls", st.Stalls, "faults", st.Faults, "cpu", st.CPUTime,
		"run_mallocs", mem1.Mallocs-mem0.Mallocs, "run_alloc_bytes", mem1.TotalAlloc-mem0.TotalAlloc)
	return err
}

// tapInMemory taps every in-memory port of sh into a capture server (reef capture of
// a link the shard carries in memory). Taps run on the datapath; with no capture
// running each costs a pointer load per frame.
func tapInMemory(sh *shard.Shard, clock *afpacket.Clock, log *slog.Logger) (*tapsock.Server, error) {
	ends := sh.InMemory()
	ports := make([]tapsock.Port, len(ends))
	for i, e := range ends {
		mtu := 0
		for _, sc := range sh.Config().Switches {
			if sc.Name == e.Switch {
				mtu = sc.Ports[e.Port].MTU
			}
		}
		ports[i] = tapsock.Port{Switch: e.Switch, Index: e.Port, MaxFrame: mtu + maxHeaders}
	}
	srv := tapsock.New(ports, clock, log)
	for _, e := range ends {
		if err := sh.SetTap(e, srv.Tap(e.Switch, e.Port)); err != nil {
			return nil, fmt.Errorf("switchd: %w", err)
		}
	}
	return srv, nil
}

// maxHeaders is what a frame carries beyond its port's MTU: an Ethernet header and a
// VLAN tag.
const maxHeaders = 18

// readConfig reads --shard, or --config as the shard of that one switch.
func readConfig(f *flags) (*shard.Config, error) {
	path := f.shard
	if (f.shard == "") == (f.config == "") {
		return nil, errors.New("switchd: give one of --shard or --config")
	}
	if path == "" {
		path = f.config
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("switchd: %w", err)
	}
	var cfg shard.Config
	if f.shard != "" {
		err = json.Unmarshal(b, &cfg)
	} else {
		var sc switchd.Config
		if err = json.Unmarshal(b, &sc); err == nil {
			cfg = shard.Single(sc)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("switchd: %s: %w", path, err)
	}
	return &cfg, nil
}

// runConfig reads the run flags.
func runConfig(f *flags) (shard.Run, error) {
	rc := shard.Run{SampleInterval: units.Time(f.sampleInterval), SampleCap: sampleCap(f.sampleInterval)}
	if f.runEpoch >= 0 {
		rc.Offset = units.Time(f.runEpoch - f.epoch)
	}
	if f.edges != "" {
		for _, e := range strings.Split(f.edges, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(e))
			if err != nil {
				return rc, fmt.Errorf("switchd: --edges: %w", err)
			}
			rc.Edges = append(rc.Edges, units.Time(d))
		}
	}
	if f.events != "" {
		b, err := os.ReadFile(f.events)
		if err != nil {
			return rc, fmt.Errorf("switchd: events: %w", err)
		}
		if err := json.Unmarshal(b, &rc.Events); err != nil {
			return rc, fmt.Errorf("switchd: events %s: %w", f.events, err)
		}
	}
	return rc, nil
}

// sampleCap guesses how many samples a run takes, to allocate once.
func sampleCap(interval time.Duration) int {
	if interval <= 0 {
		return 0
	}
	return int(min(10*time.Second/interval, 1<<16))
}

// writeFile replaces path atomically.
func writeFile(path string, b []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
