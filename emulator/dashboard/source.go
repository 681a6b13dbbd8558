// Package dashboard is reef's live view: an HTTP server on loopback that serves one page
// (the lab's topology drawn as a graph with links coloured by utilisation and queue, each
// flow's and port's time series on click, the expectation verdicts as they are decided)
// and Prometheus metrics on /metrics. It sits at the very end of the flow of a run: it
// reads what a backend measured (results.Run samples, switchd stats files) and never
// touches the data plane.
//
// What the server shows comes from a Source, which hands out immutable Snapshots:
//
//   - RunDir: a finished run's results directory (results.json, plan.json,
//     summary.json), read once from disk and shown over its measurement window, or at
//     any time of the run the page asks for;
//   - Feed: a live in-process run; the runner or a sim driver (RunSim) pushes the run's
//     results as they grow, and the expectations' verdicts as they are decided;
//   - Lab: a running netns lab; its switchd daemons' stats files are polled (ports only:
//     the daemons know no flows).
//
// # Usage
//
//	src, err := dashboard.OpenRunDir("results/poseidon-multihop-20261122T065000Z/run")
//	...
//	err = dashboard.Serve(ctx, "127.0.0.1:8080", src) // until ctx is cancelled
//
// # Limitations
//
// The server binds loopback addresses only. Flow series of a netns lab are not available
// (the host daemons do not publish them yet). Rates and times are the emulator's
// (laptop units), not the paper's.
package dashboard

import (
	"sync"

	"reef/emulator/expect"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/units"
)

// Snapshot is one consistent view of a run or a lab. A Source builds a new Snapshot for
// every update and never modifies one it has handed out; readers must not modify it
// either. Samples slices may share backing arrays with later snapshots (which only
// append).
type Snapshot struct {
	// Version increases with every update of the source (0 for the first snapshot).
	Version uint64
	// Title names what is shown: the lab, or the experiment and run.
	Title string
	// Live is true while the run or lab is still going.
	Live bool
	// Plan is the topology; nil until known.
	Plan *plan.Plan
	// Run holds the samples and counters so far; nil until the first ones.
	Run *results.Run
	// Now is the emulated time reached (the run's, or the lab's clock).
	Now units.Time
	// Window is the run's measurement window, once known (a finished run's); a
	// finished run is shown over it.
	Window [2]units.Time
	// Verdicts are the expectations decided so far.
	Verdicts []expect.Result
	// Note is a line of status for people ("run 2 of 4: cc=swift", "flows unavailable").
	Note string
}

// A Source hands the server snapshots of what it shows.
type Source interface {
	// Snapshot returns the latest snapshot; never nil.
	Snapshot() *Snapshot
	// Changed returns a channel that is closed once a snapshot newer than the latest
	// returned by Snapshot exists. Take the channel before the snapshot. A source that
	// never changes returns nil (a nil channel blocks forever).
	Changed() <-chan struct{}
}

// A Runner is a Source with work of its own (polling files): Serve calls Run in a
// goroutine and cancels it when the server stops.
type Runner interface {
	Run(stop <-chan struct{})
}

// notifier is a broadcast: publish closes the current channel and starts a new one.
type notifier struct {
	ch chan struct{}
}

func (n *notifier) wait() <-chan struct{} {
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) publish() {
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}

// Feed is the live in-process Source: whoever runs the experiment pushes into it. Every
// method is safe for concurrent use and O(1) apart from the copy of verdicts, so a data
// plane can feed it between chunks of work without measurable cost.
type Feed struct {
	mu   sync.Mutex
	snap Snapshot
	n    notifier
	// verdicts already decided in earlier runs of a sweep
	done []expect.Result
}

// NewFeed returns a live feed titled title.
func NewFeed(title string) *Feed {
	return &Feed{snap: Snapshot{Title: title, Live: true}}
}

// Snapshot implements Source.
func (f *Feed) Snapshot() *Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.snap
	return &s
}

// Changed implements Source.
func (f *Feed) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n.wait()
}

func (f *Feed) update(fn func(s *Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.snap)
	f.snap.Version++
	f.n.publish()
}

// Begin starts a new run on p titled title: the samples of the previous run are
// dropped, its verdicts kept.
func (f *Feed) Begin(title string, p *plan.Plan) {
	f.update(func(s *Snapshot) {
		s.Title, s.Plan, s.Run, s.Now, s.Live, s.Window = title, p, nil, 0, true, [2]units.Time{}
	})
}

// Push publishes the run's record as of now. The feed keeps run: the caller must not
// modify what it holds afterwards, except by appending to Samples slices (a fresh
// results.Run from sim.(*Sim).Results, for instance, qualifies).
func (f *Feed) Push(now units.Time, run *results.Run) {
	f.update(func(s *Snapshot) { s.Run, s.Now = run, now })
}

// SetWindow sets the run's measurement window.
func (f *Feed) SetWindow(from, to units.Time) {
	f.update(func(s *Snapshot) { s.Window = [2]units.Time{from, to} })
}

// Note sets the status line.
func (f *Feed) Note(note string) {
	f.update(func(s *Snapshot) { s.Note = note })
}

// Decide adds verdicts as they are decided.
func (f *Feed) Decide(vs ...expect.Result) {
	f.update(func(s *Snapshot) {
		f.done = append(f.done, vs...)
		s.Verdicts = f.done[:len(f.done):len(f.done)]
	})
}

// Finish marks the feed as no longer live.
func (f *Feed) Finish() {
	f.update(func(s *Snapshot) { s.Live = false })
}
