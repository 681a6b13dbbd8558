package dashboard

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"reef/emulator/plan"
	"reef/emulator/scenario"
	"reef/emulator/sim"
	"reef/units"
)

// fatTree is the k = 4 fat tree with a permutation of 16 long-lived DCTCP flows (each
// host to the host 8 places on, across pods): the sim's own speed benchmark's shape.
func fatTree(b testing.TB, d units.Time) (*plan.Plan, *scenario.Scenario) {
	p := loadPlan(b, "fat-tree-k4")
	sc := &scenario.Scenario{Name: "fat-tree-permutation", Seed: 1, Duration: d, SampleInterval: 100 * units.Microsecond}
	for i := 1; i <= 16; i++ {
		sc.Flows = append(sc.Flows, scenario.Flow{ID: uint32(i), Name: "f" + itoa(i), Group: "perm",
			Src: hostName(i), Dst: hostName((i+7)%16 + 1), CC: "dctcp"})
	}
	return p, sc
}

// watch is a page's worth of load on the server: it follows /events and, on every
// state, fetches the new points of one flow's series (what the page does with a flow
// open); it also scrapes /metrics every 100 ms, faster than any Prometheus would.
func watch(ctx context.Context, base string, page, metrics bool) (events *int, wait func()) {
	var wg sync.WaitGroup
	n := new(int)
	if !page {
		return n, wg.Wait
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/events", nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer r.Body.Close()
		sc := bufio.NewScanner(r.Body)
		sc.Buffer(nil, 1<<22)
		from := 0
		for sc.Scan() {
			if !strings.HasPrefix(sc.Text(), "data: ") {
				continue
			}
			*n++
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/series?flow=0&from="+itoa(from), nil)
			if sr, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, sr.Body)
				sr.Body.Close()
			}
			from++ // advancing is enough: the server does the work for the points it sends
		}
	}()
	if !metrics {
		return n, wg.Wait
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
			if r, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, r.Body)
				r.Body.Close()
			}
		}
	}()
	return n, wg.Wait
}

// BenchmarkDashboardOverhead runs the same sim twice per iteration, in chunks of 1 ms
// of simulated time: bare, and feeding a dashboard server that a client follows (SSE,
// series fetches, /metrics scrapes every 100 ms). It reports the data plane's
// packet-hops per CPU second of its own thread in both and their ratio, cpu-ratio, with
// median-cpu-ratio the median over the pairs (goal: ≥ 0.98), and the same over wall
// time, wall-ratio, which on a shared machine is as noisy as the machine's load. Runs alternate so that other load hits both alike.
func BenchmarkDashboardOverhead(b *testing.B) {
	// feed: the server runs, nobody watches; page: a page follows; page+metrics: and a
	// scraper
	for _, c := range []struct {
		name          string
		page, metrics bool
	}{{"feed", false, false}, {"page", true, false}, {"page+metrics", true, true}} {
		b.Run(c.name, func(b *testing.B) { overhead(b, c.page, c.metrics) })
	}
}

func overhead(b *testing.B, page, metrics bool) {
	const d = 20 * units.Millisecond
	const chunk = units.Millisecond
	p, sc := fatTree(b, d)
	f := NewFeed("bench")
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- NewServer(f, Options{}).ServeListener(ctx, ln) }()
	events, wait := watch(ctx, "http://"+ln.Addr().String(), page, metrics)
	defer func() { cancel(); wait(); <-served }()

	var bareHops, dashHops uint64
	var bareWall, dashWall, bareCPU, dashCPU time.Duration
	// the data plane runs on this goroutine, locked to its thread, so that its thread's
	// CPU time is the data plane's alone (the server's goroutines run elsewhere)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	runBare := func() {
		s, err := sim.New(p, sc)
		if err != nil {
			b.Fatal(err)
		}
		start, cpu := time.Now(), threadCPU()
		for s.Now() < d {
			s.RunUntil(s.Now() + chunk)
		}
		bareWall += time.Since(start)
		bareCPU += threadCPU() - cpu
		bareHops += s.Hops()
	}
	runDash := func() {
		s, err := sim.New(p, sc)
		if err != nil {
			b.Fatal(err)
		}
		f.Begin("bench", p)
		start, cpu := time.Now(), threadCPU()
		if err := RunSim(ctx, s, f, d, chunk, 0); err != nil {
			b.Fatal(err)
		}
		dashWall += time.Since(start)
		dashCPU += threadCPU() - cpu
		dashHops += s.Hops()
	}
	// a warm-up pair, not counted
	runBare()
	runDash()
	bareHops, dashHops, bareWall, dashWall, bareCPU, dashCPU = 0, 0, 0, 0, 0, 0
	var ratios []float64 // per pair: dashboard over bare, hops per CPU second
	i := 0
	for b.Loop() {
		h0, c0, h1, c1 := bareHops, bareCPU, dashHops, dashCPU
		if i%2 == 0 {
			runBare()
			runDash()
		} else {
			runDash()
			runBare()
		}
		i++
		ratios = append(ratios, float64(dashHops-h1)/(dashCPU-c1).Seconds()/(float64(bareHops-h0)/(bareCPU-c0).Seconds()))
	}
	sort.Float64s(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "median-cpu-ratio")
	bare := float64(bareHops) / bareCPU.Seconds()
	dash := float64(dashHops) / dashCPU.Seconds()
	b.ReportMetric(bare, "bare-hops/cpu-s")
	b.ReportMetric(dash, "dash-hops/cpu-s")
	b.ReportMetric(dash/bare, "cpu-ratio")
	b.ReportMetric(float64(dashHops)/dashWall.Seconds()/(float64(bareHops)/bareWall.Seconds()), "wall-ratio")
	b.ReportMetric(float64(*events), "sse-events")
}

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// BenchmarkPush is the data plane's direct cost of feeding a dashboard: one push of
// the fat tree's results (sim.(*Sim).Results and Feed.Push) while a server follows the
// feed. RunSim pushes at most every PushEvery of wall time, so push-share (the time of
// one push over PushEvery) bounds the share of the data plane's time it takes.
func BenchmarkPush(b *testing.B) {
	p, sc := fatTree(b, 10*units.Millisecond)
	s, err := sim.New(p, sc)
	if err != nil {
		b.Fatal(err)
	}
	s.RunUntil(10 * units.Millisecond) // samples and queues in place
	f := NewFeed("bench")
	f.Begin("bench", p)
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- NewServer(f, Options{}).ServeListener(ctx, ln) }()
	_, wait := watch(ctx, "http://"+ln.Addr().String(), true, false)
	defer func() { cancel(); wait(); <-served }()
	for b.Loop() {
		f.Push(s.Now(), s.Results())
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(per)/float64(PushEvery), "push-share")
}
