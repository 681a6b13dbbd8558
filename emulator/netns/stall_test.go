package netns_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"reef/emulator"
	"reef/emulator/netns"
	"reef/emulator/report"
	"reef/emulator/scenario"
	"reef/internal/testenv"
	"reef/units"
)

// A host daemon the machine does not run costs its flows throughput that neither its
// release lateness nor its skew shows (report.MaxStallFraction), so the run's fidelity
// must say so: the test stops the sender's hostd with SIGSTOP for 10 ms of every
// 100 ms, as a hypervisor busy with other guests would, and wants the run degraded for
// that host's stalls.
func TestStalledHostDegradesRun(t *testing.T) {
	testenv.RequireRoot(t)
	p := dumbbell(t, "rst", "100Mbps", 1, "30KB")
	sc := &scenario.Scenario{Name: "stall", Seed: 1, TimeScale: swiftTau, Duration: units.Second, Warmup: 300 * units.Millisecond,
		SampleInterval: 10 * units.Millisecond, Flows: swiftFlows(t, 1, 1, swiftTau)}
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	stops := make(chan int)
	go func() {
		stops <- stopPeriodically(ctx, filepath.Join(out, "h1.job.json"), 10*time.Millisecond, 100*time.Millisecond)
	}()
	run, err := netns.Backend{}.Run(context.Background(), p, sc, emulator.RunOptions{OutDir: out})
	cancel()
	n := <-stops
	if err != nil {
		t.Fatal(err)
	}
	f := summarize(t, p, sc, run).Fidelity
	t.Logf("h1 stopped %d times; fidelity %s: %s (stalled %.1f%% at %s, lateness p99 %.0f µs, skew %.2f×)",
		n, f.Verdict, report.DegradedWhy(f), 100*f.StallFraction, f.StallHost, f.LatenessP99US, f.SkewRatio)
	if n < 5 {
		t.Fatalf("h1's daemon was stopped only %d times", n)
	}
	if f.Verdict != "degraded" || f.StallHost != "h1" || f.StallFraction <= report.MaxStallFraction {
		t.Errorf("fidelity %s with h1 stopped %d × 10 ms in %v: stall %.2f%% at %q, want degraded for h1's stalls",
			f.Verdict, n, sc.Duration, 100*f.StallFraction, f.StallHost)
	}
}

// stopPeriodically finds the hostd running job and, until ctx ends, stops it (SIGSTOP)
// for stop of every period; it returns how many times it stopped it.
func stopPeriodically(ctx context.Context, job string, stop, period time.Duration) int {
	want := []byte("--job\x00" + job + "\x00")
	pid := 0
	for pid == 0 && ctx.Err() == nil {
		pid = findProcess(want)
		time.Sleep(time.Millisecond)
	}
	n := 0
	for ctx.Err() == nil {
		if syscall.Kill(pid, syscall.SIGSTOP) != nil {
			break
		}
		time.Sleep(stop)
		_ = syscall.Kill(pid, syscall.SIGCONT)
		n++
		time.Sleep(period - stop)
	}
	return n
}

// findProcess returns the pid of a process whose command line holds want (0: none).
func findProcess(want []byte) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(b, want) {
			return pid
		}
	}
	return 0
}
