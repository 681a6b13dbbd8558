package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"reef/emulator/report"
	"reef/units"
)

// With several runs under way (reef run -j) the status line shows each run's bar, each
// moved by its own updates, and a line per run as it finishes, after which the bars of
// the others are drawn again; without a terminal, a line per run started and finished.
func TestProgressShowsEveryRunUnderWay(t *testing.T) {
	const total = 100 * units.Millisecond
	bar := func(n int) string { return strings.Repeat("█", n) + strings.Repeat("·", 30-n) }
	for _, tty := range []bool{true, false} {
		var b bytes.Buffer
		c := &clock{t: time.Unix(0, 0)}
		p := newProgress(&b, tty, c.now)
		var got []string
		step := func(f func()) {
			c.advance(time.Second)
			f()
			if tty {
				got = append(got, lastDraw(b.String()))
			}
		}
		p.Start(0, 3, "a")
		p.Start(1, 3, "b")
		step(func() { p.UpdatePoint(1, 20*units.Millisecond, total) })
		step(func() { p.UpdatePoint(0, 50*units.Millisecond, total) })
		step(func() { p.Done(0, &report.Summary{Pass: false}, nil) })
		step(func() { p.UpdatePoint(1, total, total) })
		step(func() { p.Done(1, &report.Summary{Pass: true}, nil) })
		p.finish()
		if !tty {
			want := "[1/3] a …\n[2/3] b …\n[1/3] a: FAIL in 3s (fidelity )\n[2/3] b: pass in 5s (fidelity )\n"
			if b.String() != want {
				t.Errorf("not a terminal: printed %q, want %q", b.String(), want)
			}
			continue
		}
		want := []string{
			"[2/3] b " + bar(6) + " 20ms/100ms 0.02× real time",
			"[1/3] a " + bar(15) + " 50ms/100ms 0.025× real time │ [2/3] b " + bar(6) + " 20ms/100ms 0.02× real time",
			"[2/3] b " + bar(6) + " 20ms/100ms 0.02× real time",
			"[2/3] b " + bar(30) + " 100ms/100ms 0.025× real time",
			"[2/3] b: pass in 5s (fidelity )\n", // cleared, and nothing left under way
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("drawn:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if !strings.Contains(b.String(), "[1/3] a: FAIL in 3s") || !strings.Contains(b.String(), "[2/3] b: pass in 5s") {
			t.Errorf("a finished run's line is missing: %q", b.String())
		}
		if len(p.runs) != 0 {
			t.Errorf("%d runs left under way after every run finished", len(p.runs))
		}
	}
}
