package dashboard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"reef/internal/testenv"
	"reef/units"
)

// openPage serves src and opens its page in chromium (at the path chromium), waiting
// for the graph and the element visible: it returns the browser's context and a
// function that stops the server (called again, harmlessly, when the test ends).
func openPage(t *testing.T, chromium string, src Source, visible string) (context.Context, func()) {
	t.Helper()
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srvCtx, cancelSrv := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- NewServer(src, Options{MinInterval: 50 * time.Millisecond}).ServeListener(srvCtx, ln)
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancelSrv(); <-served }) }
	t.Cleanup(stop)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1400, 1100), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)
	url := "http://" + ln.Addr().String() + "/"
	if err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`#graph .node`)),
		chromedp.WaitVisible(chromedp.CSS(visible))); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	return bctx, stop
}

// The page, in Debian's chromium, over a live feed from a sim run the test steps: the
// graph has one element per node and link, the s1–s2 link turns from idle to busy when
// the flow crossing it starts, and the flow's charts gain points as the run goes on. A
// screenshot is saved with the test's artifacts (go test -artifacts keeps it).
func TestBrowser(t *testing.T) {
	chromium := testenv.RequireProgram(t, "chromium")
	// f1: h1 → h9 over h1–s1, s1–s2, s2–h9, starting at 3 ms
	p, s := dumbbellSim(t, 40*units.Millisecond, 3*units.Millisecond)
	f := NewFeed("browser")
	f.Begin("dumbbell (browser test)", p)
	s.RunUntil(2 * units.Millisecond)
	f.Push(s.Now(), s.Results())

	bctx, _ := openPage(t, chromium, f, `#flows tbody tr`)
	eval := func(expr string) int {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[int](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	nodes := eval(`document.querySelectorAll('#graph .node').length`)
	links := eval(`document.querySelectorAll('#graph .link').length`)
	if want := len(p.Hosts) + len(p.Switches); nodes != want {
		t.Errorf("%d node elements, want %d", nodes, want)
	}
	if links != len(p.Links) {
		t.Errorf("%d link elements, want %d", links, len(p.Links))
	}
	mid := linkBetween(t, p, "s1", "s2")
	stroke := func() string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](fmt.Sprintf(`document.getElementById('link-%d').getAttribute('stroke')`, mid)))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	idle := stroke()
	if idle != "#9aa5b1" {
		t.Fatalf("s1–s2 before the flow starts: stroke %q, want the idle grey", idle)
	}
	// open the flow's charts
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#flows tbody tr[data-flow="0"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#charts canvas`))); err != nil {
		t.Fatal(err)
	}
	points := func() int {
		t.Helper()
		return eval(`Number((document.querySelector('#charts canvas')||{dataset:{}}).dataset.points||0)`)
	}
	// step the run 1 ms at a time until the browser shows the flow, then some more
	var busy string
	var seen []int
	for step := 0; step < 38 && (busy == "" || len(seen) < 3 || seen[len(seen)-1] <= seen[0]); step++ {
		s.RunUntil(s.Now() + units.Millisecond)
		f.Push(s.Now(), s.Results())
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			time.Sleep(60 * time.Millisecond)
			if n := points(); n > 0 && (len(seen) == 0 || n != seen[len(seen)-1]) {
				seen = append(seen, n)
				break
			}
			if s.Now() < 4*units.Millisecond {
				break // the flow has not started: nothing to wait for
			}
		}
		if c := stroke(); c != idle && busy == "" {
			busy = c
			t.Logf("s1–s2 turned %s at t = %v", c, s.Now())
		}
	}
	if busy == "" {
		t.Fatalf("s1–s2 stayed %q after the flow started", idle)
	}
	if len(seen) < 3 || seen[len(seen)-1] <= seen[0] {
		t.Fatalf("the flow's chart did not gain points: %v", seen)
	}
	t.Logf("chart points over time: %v", seen)
	screenshot(t, bctx, "dashboard.png")
}

// screenshot saves the page as name with the test's artifacts (go test -artifacts keeps
// them) and in $REEF_SCREENSHOT_DIR when set.
func screenshot(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("REEF_SCREENSHOT_DIR"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, name), png, 0o644)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
}

// A finished run in chromium: the header says it is finished and over which window
// (and goes on saying so: the page needs no live stream), the bottleneck is coloured by
// its load over the measurement window although its last samples are idle, and the
// time slider moves through the run (before the flow starts, s1–s2 is idle) and back.
func TestBrowserFinishedRun(t *testing.T) {
	chromium := testenv.RequireProgram(t, "chromium")
	rd, mid := finishedRunDir(t)
	bctx, stopSrv := openPage(t, chromium, rd, `#time`)
	str := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	// waitFor polls expr until it returns want.
	waitFor := func(expr, want string) {
		t.Helper()
		var got string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if got = str(expr); got == want {
				return
			}
		}
		t.Fatalf("%s = %q, want %q", expr, got, want)
	}
	status := `document.getElementById('status').textContent`
	stroke := fmt.Sprintf(`document.getElementById('link-%d').getAttribute('stroke')`, mid)
	const idle = "#9aa5b1"
	waitFor(status, "finished · measurement window 20.00 ms – 40.00 ms")
	if c := str(stroke); c == idle {
		t.Errorf("s1–s2 over the window: stroke %q, the idle grey", c)
	}
	if got := str(`[document.getElementById('time').max, document.getElementById('time').step].join(' ')`); got != "40000000 100000" {
		t.Errorf("slider max and step %q, want the run's 40 ms and its 100 µs samples", got)
	}
	// move to 2 ms, before the flow starts
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { const t = document.getElementById('time');
		t.value = 2000000; t.dispatchEvent(new Event('input')); t.dispatchEvent(new Event('change')); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	waitFor(status, "finished · t = 2.00 ms of 40.00 ms")
	if c := str(stroke); c != idle {
		t.Errorf("s1–s2 at 2 ms: stroke %q, want the idle grey", c)
	}
	screenshot(t, bctx, "finished-at.png")
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#view-window`))); err != nil {
		t.Fatal(err)
	}
	waitFor(status, "finished · measurement window 20.00 ms – 40.00 ms")
	if c := str(stroke); c == idle {
		t.Errorf("s1–s2 back over the window: stroke %q, the idle grey", c)
	}
	// the stream is closed and the server may go: the page still says finished
	time.Sleep(time.Second)
	stopSrv()
	time.Sleep(2 * time.Second)
	if s := str(status); s != "finished · measurement window 20.00 ms – 40.00 ms" {
		t.Errorf("after the server stopped, the header says %q", s)
	}
	screenshot(t, bctx, "finished.png")
}
