package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"reef/emulator"
)

// statusLine is one line of status that a terminal redraws in place; on anything but a
// terminal it prints nothing, so logs and pipes stay clean.
type statusLine struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	last  time.Time
	drawn bool
}

// redrawEvery is the least time between two redraws of a status line.
const redrawEvery = 100 * time.Millisecond

func newStatusLine(w io.Writer, tty bool, now func() time.Time) statusLine {
	if now == nil {
		now = time.Now
	}
	return statusLine{w: w, tty: tty, now: now}
}

// draw shows line, unless it was drawn less than redrawEvery ago and force is false.
func (s *statusLine) draw(line string, force bool) {
	if !s.tty {
		return
	}
	t := s.now()
	if !force && s.drawn && t.Sub(s.last) < redrawEvery {
		return
	}
	s.last = t
	fmt.Fprint(s.w, "\r\033[K"+line)
	s.drawn = true
}

// clear erases the line if it is drawn.
func (s *statusLine) clear() {
	if s.tty && s.drawn {
		fmt.Fprint(s.w, "\r\033[K")
		s.drawn = false
	}
}

// upStages are the stages of bringing a lab up, in the order they began, each at its
// latest count.
type upStages []emulator.UpProgress

// add records p and says whether its stage is complete.
func (u *upStages) add(p emulator.UpProgress) bool {
	for i := range *u {
		if (*u)[i].Stage == p.Stage {
			(*u)[i] = p
			return p.Done >= p.Total
		}
	}
	*u = append(*u, p)
	return p.Done >= p.Total
}

// String is "nodes 1344/1344 · links 812/1536".
func (u upStages) String() string {
	parts := make([]string, len(u))
	for i, p := range u {
		parts[i] = fmt.Sprintf("%s %d/%d", p.Stage, p.Done, p.Total)
	}
	return strings.Join(parts, " · ")
}

// upStatus shows reef up's progress on a terminal: each stage's count and the time so
// far ("bringing fat-tree-k16 up: nodes 1344/1344 · links 812/1536 · 6.2s").
type upStatus struct {
	line   statusLine
	lab    string
	start  time.Time
	stages upStages
}

// newUpStatus shows lab's progress on w when tty (nothing otherwise).
func newUpStatus(w io.Writer, tty bool, lab string, now func() time.Time) *upStatus {
	u := &upStatus{line: newStatusLine(w, tty, now), lab: lab}
	u.start = u.line.now()
	return u
}

// update implements netns.Options.Progress.
func (u *upStatus) update(p emulator.UpProgress) {
	complete := u.stages.add(p)
	elapsed := u.line.now().Sub(u.start).Seconds()
	u.line.draw(fmt.Sprintf("bringing %s up: %s · %.1fs", u.lab, u.stages, elapsed), complete)
}

// terminal says whether f is a terminal.
func terminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
