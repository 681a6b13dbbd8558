package dashboard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"reef/internal/testenv"
	"reef/units"
)

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

	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srvCtx, stopSrv := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- NewServer(f, Options{MinInterval: 50 * time.Millisecond}).ServeListener(srvCtx, ln) }()
	defer func() { stopSrv(); <-served }()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1400, 1100), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()

	url := "http://" + ln.Addr().String() + "/"
	if err := chromedp.Do(bctx, chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`#graph .node`)),
		chromedp.WaitVisible(chromedp.CSS(`#flows tbody tr`))); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
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
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.ArtifactDir(), "dashboard.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("REEF_SCREENSHOT_DIR"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "dashboard.png"), png, 0o644)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
}
