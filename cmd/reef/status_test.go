package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"reef/emulator"
	"reef/units"
)

// clock is a settable time for the status lines.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func lastDraw(out string) string         { return out[strings.LastIndex(out, "\r\033[K")+len("\r\033[K"):] }
func draws(out string) int               { return strings.Count(out, "\r\033[K") }
func up(stage string, done, total int) emulator.UpProgress {
	return emulator.UpProgress{Stage: stage, Done: done, Total: total}
}

// reef up on a terminal: each stage's count, redrawn at most every 100 ms and always
// when a stage completes; on anything else, nothing.
func TestUpStatus(t *testing.T) {
	steps := []emulator.UpProgress{up("nodes", 0, 3), up("nodes", 1, 3), up("nodes", 2, 3), up("nodes", 3, 3),
		up("links", 0, 2), up("links", 1, 2), up("links", 2, 2), up("switches", 0, 1), up("switches", 1, 1)}
	for _, tty := range []bool{true, false} {
		var b bytes.Buffer
		c := &clock{t: time.Unix(0, 0)}
		s := newUpStatus(&b, tty, "fat-tree-k16", c.now)
		var seen []string
		for _, p := range steps {
			c.advance(40 * time.Millisecond)
			n := draws(b.String())
			s.update(p)
			if draws(b.String()) > n {
				seen = append(seen, lastDraw(b.String()))
			}
		}
		s.line.clear()
		if !tty {
			if b.Len() != 0 {
				t.Errorf("not a terminal: printed %q", b.String())
			}
			continue
		}
		// an update every 40 ms: the first is drawn, then only complete stages (the
		// others come less than 100 ms after the last draw)
		want := []string{
			"bringing fat-tree-k16 up: nodes 0/3 · 0.0s",
			"bringing fat-tree-k16 up: nodes 3/3 · 0.2s",
			"bringing fat-tree-k16 up: nodes 3/3 · links 2/2 · 0.3s",
			"bringing fat-tree-k16 up: nodes 3/3 · links 2/2 · switches 1/1 · 0.4s",
		}
		if strings.Join(seen, "\n") != strings.Join(want, "\n") {
			t.Errorf("drawn:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
		}
		if !strings.HasSuffix(b.String(), "switches 1/1 · 0.4s\r\033[K") {
			t.Errorf("the line is not cleared at the end: %q", b.String())
		}
	}
}

// reef run on a terminal: the lab's set-up, then emulated time against the total with
// an estimate of the time left from the speed since the run started moving (not from
// the set-up); on anything else, one line per run and no bar.
func TestRunProgress(t *testing.T) {
	const total = 100 * units.Millisecond
	for _, tty := range []bool{true, false} {
		var b bytes.Buffer
		c := &clock{t: time.Unix(0, 0)}
		p := newProgress(&b, tty, c.now)
		p.Start(0, 2, "websearch/cc=dctcp")
		var got []string
		step := func(d time.Duration, f func()) {
			c.advance(d)
			f()
			if tty {
				got = append(got, lastDraw(b.String()))
			}
		}
		step(time.Second, func() { p.Setup(up("nodes", 40, 40)) })
		step(time.Second, func() { p.Update(0, total) })
		step(time.Second, func() { p.Update(10*units.Millisecond, total) })
		step(3*time.Second, func() { p.Update(40*units.Millisecond, total) })
		step(6*time.Second, func() { p.Update(100*units.Millisecond, total) })
		if !tty {
			if b.String() != "[1/2] websearch/cc=dctcp …\n" {
				t.Errorf("not a terminal: printed %q, want the run's line only", b.String())
			}
			continue
		}
		bar := func(n int) string { return strings.Repeat("█", n) + strings.Repeat("·", 30-n) }
		want := []string{
			"[1/2] websearch/cc=dctcp: setting up the lab: nodes 40/40",
			"[1/2] websearch/cc=dctcp " + bar(0) + " 0s/100ms 0× real time",
			"[1/2] websearch/cc=dctcp " + bar(3) + " 10ms/100ms 0.00333× real time",
			"[1/2] websearch/cc=dctcp " + bar(12) + " 40ms/100ms 0.00667× real time · about 6s left",
			"[1/2] websearch/cc=dctcp " + bar(30) + " 100ms/100ms 0.00833× real time",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("drawn:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestRoundLeft(t *testing.T) {
	for d, want := range map[time.Duration]string{
		4*time.Second + 449*time.Millisecond:  "4.4s",
		83*time.Second + 700*time.Millisecond: "1m24s",
	} {
		if got := roundLeft(d).String(); got != want {
			t.Errorf("roundLeft(%v) = %s, want %s", d, got, want)
		}
	}
}
