package lab

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"reef/internal/testenv"
)

// The handout and the grade reports in Debian's chromium, served over HTTP: the handout
// renders its Markdown (headings, code blocks) in the reports' style and lists what is
// graded; a wrong answer's grade shows one row per check with the failing ones' hints;
// a grade with a degraded check says it is not held against the student; the solution's
// grade links to its run's report, which loads. Screenshots go with the test's
// artifacts (go test -artifacts) and to $REEF_SCREENSHOT_DIR when set.
func TestBrowserHandoutAndGrades(t *testing.T) {
	chromium := testenv.RequireProgram(t, "chromium")
	l, err := Load(filepath.Join(labsRoot, "queues-ecn"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	page, err := Handout(l)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "handout.html"), page, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	good, err := Check(ctx, l, CheckOptions{Answers: filepath.Join(l.Dir, SolutionDir), Student: "ada", Out: filepath.Join(root, "good")})
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := Check(ctx, l, CheckOptions{Answers: filepath.Join("testdata", "wrong", "queues-ecn"), Student: "bob", Out: filepath.Join(root, "wrong")})
	if err != nil {
		t.Fatal(err)
	}
	// The wrong grade as a netns run the machine could not keep up with would give it.
	deg := *wrong
	deg.Checks = append([]Result(nil), wrong.Checks...)
	deg.Student, deg.Backend = "cy", "netns"
	for i, r := range deg.Checks {
		if r.Name == "short-queue" {
			deg.Checks[i].Status = StatusDegraded
			deg.Checks[i].Detail = "degraded, not graded against you: p99 release lateness 3 times what s1:p5 may have"
			deg.Degraded++
			deg.Failed--
		}
	}
	if err := deg.Write(filepath.Join(root, "degraded")); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(http.FileServer(http.Dir(root)))
	defer srv.Close()
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1300, 900), chromedp.UserDataDir(t.TempDir()))
	alloc, cancelA := chromedp.NewExecAllocator(actx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(alloc)
	defer cancelB()
	open := func(path, visible string) {
		t.Helper()
		if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/"+path), chromedp.WaitVisible(chromedp.CSS(visible))); err != nil {
			t.Fatalf("loading %s: %v", path, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}

	open("handout.html", `#handout h1`)
	if got := eval(`document.querySelector('#handout h1').textContent`); got != l.Title {
		t.Errorf("handout title %q, want %q", got, l.Title)
	}
	if n := eval(`String(document.querySelectorAll('#handout pre code').length)`); n == "0" {
		t.Error("the handout's code blocks did not render")
	}
	if bg := eval(`getComputedStyle(document.querySelector('header')).backgroundColor`); bg != "rgb(11, 61, 92)" {
		t.Errorf("header background %s: not the reports' style", bg)
	}
	if n, want := eval(`String(document.querySelectorAll('#graded li').length)`), len(good.Checks); n != strconv.Itoa(want) {
		t.Errorf("%s graded items listed, want %d", n, want)
	}
	screenshot(t, bctx, "lab-handout.png")

	open("wrong/grade.html", `#checks tr.check`)
	if n := eval(`String(document.querySelectorAll('#checks tr.check').length)`); n != strconv.Itoa(len(wrong.Checks)) {
		t.Errorf("%s check rows, want %d", n, len(wrong.Checks))
	}
	hint := eval(`document.querySelector('tr.check[data-name="short-queue"] .hint').innerText`)
	if !strings.Contains(hint, "ECN marking") {
		t.Errorf("short-queue's hint on the page: %q", hint)
	}
	if v := eval(`document.getElementById('verdict').innerText`); !strings.Contains(v, "fail") {
		t.Errorf("verdict %q", v)
	}
	if n := eval(`String(document.querySelectorAll('tr.check[data-status="pass"] .hint').length)`); n != "0" {
		t.Errorf("%s passing checks show a hint", n)
	}
	screenshot(t, bctx, "lab-grade.png")

	open("degraded/grade.html", `#checks tr.check`)
	if s := eval(`document.querySelector('tr.check[data-name="short-queue"] td.status').innerText`); !strings.Contains(s, "degraded") {
		t.Errorf("short-queue's status %q, want degraded", s)
	}
	if v := eval(`document.getElementById('verdict').innerText`); !strings.Contains(v, "not graded against you") {
		t.Errorf("verdict %q does not say the degraded check is not held against the student", v)
	}

	open("good/grade.html", `#checks tr.check`)
	if v := eval(`document.getElementById('verdict').innerText`); !strings.Contains(v, "every check passes") {
		t.Errorf("the solution's verdict %q", v)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`tr.check[data-name="busy"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`figure img`))); err != nil {
		t.Fatalf("following the link to the run's report: %v", err)
	}
	if u := eval(`location.pathname`); !strings.HasSuffix(u, "/report.html") {
		t.Errorf("the link led to %s", u)
	}
}

// screenshot saves the page as name with the test's artifacts and in
// $REEF_SCREENSHOT_DIR when set.
func screenshot(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("REEF_SCREENSHOT_DIR"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
