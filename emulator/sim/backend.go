package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"reef/capture"

	"reef/emulator"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/fabric"
	"reef/units"
)

// Name is the backend's registered name.
const Name = "sim"

// Backend runs scenarios in virtual time. Package reef/emulator/sim/simbackend registers
// one, with a wall clock, as "sim"; this package itself never reads a clock.
type Backend struct {
	// Wall, when set, reads a monotonic wall clock; Run uses it only to fill
	// results.Run.WallTime, never inside the simulation.
	Wall func() units.Time
	// Create, when set, creates the file at path for a capture (RunOptions.Capture);
	// without it a run with captures fails.
	Create func(path string) (io.WriteCloser, error)
	// Each, when set, runs the partitions of a split lab at once (Options.Each).
	Each fabric.Each
}

// Name returns "sim".
func (Backend) Name() string { return Name }

// Describe says what the backend runs on and needs.
func (Backend) Describe() string {
	return "deterministic in-process simulation in virtual time; no root, no namespaces"
}

// Run wires the plan, runs the scenario to its end in chunks of simulated time (checking
// ctx and reporting progress between chunks) and returns what was measured. On cancellation it returns the results
// up to the time reached, with ctx.Err().
func (b Backend) Run(ctx context.Context, p *plan.Plan, sc *scenario.Scenario, opts emulator.RunOptions) (*results.Run, error) {
	if sc.Duration <= 0 {
		return nil, fmt.Errorf("sim: scenario %s: duration must be > 0, got %v", sc.Name, sc.Duration)
	}
	var start units.Time
	if b.Wall != nil {
		start = b.Wall()
	}
	simOpts := Options{Each: b.Each}
	if len(opts.Capture) > 0 {
		// A capture's taps write one file from whichever partition sees the frame:
		// a run with captures keeps the lab whole.
		simOpts.Partitions = 1
	}
	s, err := NewWith(p, sc, simOpts)
	if err != nil {
		return nil, err
	}
	caps, err := b.captures(s, p, opts)
	if err != nil {
		return nil, err
	}
	// Chunks of 1/200 of the run keep cancellation and progress responsive without
	// costing anything measurable.
	chunk := max(sc.Duration/200, units.Microsecond)
	var runErr error
	for s.Now() < sc.Duration {
		if err := ctx.Err(); err != nil {
			runErr = err
			break
		}
		s.RunUntil(s.Now() + chunk)
		if opts.Progress != nil {
			opts.Progress(s.Now(), sc.Duration)
		}
		if opts.Observe != nil {
			opts.Observe(s.Now(), s.Results())
		}
	}
	run := s.Results()
	if b.Wall != nil {
		run.WallTime = b.Wall() - start
	}
	return run, errors.Join(runErr, caps.close())
}

// captures opens a pcapng file in opts.OutDir for every capture target (NODE, or
// NODE:PORT with PORT a switch port's interface name or index), named as on netns
// (h1-eth0.pcapng, s1-p2.pcapng, s1.pcapng for every port of s1), and taps the
// target's ports into it: every frame crossing them, both ways, stamped with its Due in
// virtual time (from the Unix epoch), as netns's captures carry it in their trailer.
func (b Backend) captures(s *Sim, p *plan.Plan, opts emulator.RunOptions) (captureFiles, error) {
	var files captureFiles
	for _, target := range opts.Capture {
		node, port, _ := strings.Cut(target, ":")
		idx, iface := -1, ""
		if h, ok := p.HostByName(node); ok {
			idx, iface = 0, h.Config.Iface
		} else if sw, ok := p.SwitchByName(node); ok && port != "" {
			for i, pc := range sw.Config.Ports {
				if pc.Name == port || strconv.Itoa(i) == port {
					idx, iface = i, pc.Name
				}
			}
			if idx < 0 {
				return files, fmt.Errorf("sim: capture %q: switch %s has no port %q (ports 0..%d)", target, node, port, len(sw.Config.Ports)-1)
			}
		} else if !ok {
			return files, fmt.Errorf("sim: capture %q: the lab has no node %q", target, node)
		}
		if b.Create == nil {
			return files, fmt.Errorf("sim: capture %q: this sim backend cannot write files", target)
		}
		name := node
		if iface != "" {
			name += "-" + iface
		}
		f, err := b.Create(filepath.Join(opts.OutDir, name+".pcapng"))
		if err != nil {
			return files, fmt.Errorf("sim: capture %q: %w", target, err)
		}
		label := iface
		if label == "" {
			label = "any"
		}
		w, err := capture.NewWriter(f, node+":"+label)
		if err != nil {
			f.Close()
			return files, fmt.Errorf("sim: capture %q: %w", target, err)
		}
		c := &captureFile{f: f, w: w}
		files = append(files, c)
		if err := s.Tap(node, idx, c.frame); err != nil {
			return files, err
		}
	}
	return files, nil
}

// captureFile is one capture's pcapng file; its first write error is kept.
type captureFile struct {
	f   io.WriteCloser
	w   *capture.Writer
	err error
}

func (c *captureFile) frame(at units.Time, _ bool, frame []byte) {
	if c.err == nil {
		c.err = c.w.WriteFrame(time.Unix(0, 0).Add(time.Duration(at)), frame)
	}
}

type captureFiles []*captureFile

func (cs captureFiles) close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.err, c.w.Close(), c.f.Close())
	}
	return errors.Join(errs...)
}

// Concurrent reports that runs may go side by side (runner.Concurrent): each has its own
// lab in memory and shares nothing with another.
func (Backend) Concurrent() bool { return true }
