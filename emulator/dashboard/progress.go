package dashboard

import (
	"fmt"

	"reef/emulator"
	"reef/emulator/analysis"
	"reef/emulator/expect"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/units"
)

// Stepper is what reef run tells its progress display (runner.Progress).
type Stepper interface {
	Start(i, n int, label string)
	Update(reached, total units.Time)
	Done(i int, s *analysis.Summary, err error)
}

// Progress feeds a Feed from reef run's hooks (it implements runner.Progress and
// runner.Observer) and forwards every call to Next, the terminal's display, when set:
// each run of a sweep is shown from its plan on, with its samples as the backend
// observes them, and its verdicts once decided.
type Progress struct {
	Feed *Feed
	Next Stepper

	label string
	n     int
}

// Start implements runner.Progress.
func (p *Progress) Start(i, n int, label string) {
	p.label, p.n = label, n
	p.Feed.Note(fmt.Sprintf("run %d of %d: %s", i+1, n, label))
	if p.Next != nil {
		p.Next.Start(i, n, label)
	}
}

// Plan implements runner.Observer: run i starts on pl.
func (p *Progress) Plan(i int, pl *plan.Plan) {
	p.Feed.Begin(p.label, pl)
}

// Observe implements runner.Observer.
func (p *Progress) Observe(reached units.Time, run *results.Run) {
	p.Feed.Push(reached, run)
}

// Setup implements runner.SetupProgress, for Next when it shows it.
func (p *Progress) Setup(u emulator.UpProgress) {
	if s, ok := p.Next.(interface{ Setup(emulator.UpProgress) }); ok {
		s.Setup(u)
	}
}

// Update implements runner.Progress.
func (p *Progress) Update(reached, total units.Time) {
	if p.Next != nil {
		p.Next.Update(reached, total)
	}
}

// Done implements runner.Progress: the run's verdicts are decided.
func (p *Progress) Done(i int, s *analysis.Summary, err error) {
	switch {
	case s != nil:
		p.Feed.SetWindow(units.Time(s.WindowUS[0]*1e3), units.Time(s.WindowUS[1]*1e3))
		p.Feed.Decide(s.Expectations...)
		p.Feed.Note(fmt.Sprintf("run %d of %d done: %s", i+1, p.n, p.label))
	case err != nil:
		p.Feed.Note(fmt.Sprintf("run %d of %d failed: %v", i+1, p.n, err))
	}
	if p.Next != nil {
		p.Next.Done(i, s, err)
	}
}

// Settle replaces the verdicts with the sweep's final ones (which include the checks
// that compare runs) and marks the feed finished.
func (f *Feed) Settle(vs []expect.Result) {
	f.update(func(s *Snapshot) {
		f.done = append([]expect.Result(nil), vs...)
		s.Verdicts = f.done[:len(f.done):len(f.done)]
		s.Live = false
	})
}
