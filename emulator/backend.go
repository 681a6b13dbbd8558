// Package emulator is reef's controller side: the topology model (emulator/topo), the
// planner (emulator/plan), the run description (emulator/scenario), the backends that
// execute a run (emulator/sim, emulator/netns, emulator/docker) and what they return
// (emulator/results). This file holds the small interface every backend implements and
// the registry the CLI picks them from.
package emulator

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/units"
)

// A Backend executes runs: it brings up the lab described by a plan, runs the scenario to
// its end, tears the lab down (also on error or cancellation) and returns what it
// measured.
type Backend interface {
	// Name is the backend's registered name.
	Name() string
	// Run executes sc on p. Cancelling ctx stops the run early: the backend tears the lab
	// down and returns what it measured so far together with ctx.Err().
	Run(ctx context.Context, p *plan.Plan, sc *scenario.Scenario, opts RunOptions) (*results.Run, error)
}

// RunOptions are the knobs a run takes besides the plan and the scenario.
type RunOptions struct {
	// OutDir is the run's results directory (captures and daemon logs go there).
	OutDir string
	// Progress, when set, is called now and then with the emulated time reached.
	Progress func(reached, total units.Time)
	// Setup, when set, is told how far bringing the run's lab up has come, one call at
	// a time (backends that bring one up: netns, docker).
	Setup func(UpProgress)
	// Capture lists NODE or NODE:PORT to capture to pcapng in OutDir.
	Capture []string
	// Shards is how many switch daemons (shards) carry the lab's switches on a real
	// backend, the links inside a shard in memory (0: the backend's default). The sim
	// ignores it.
	Shards int
	// SwitchdArgs are extra arguments for every switch daemon of a real backend.
	SwitchdArgs []string
	// Place and ClockOffsets are as in UpOptions (swarm).
	Place        map[string]string
	ClockOffsets map[string]time.Duration
	// Unplaced is as in UpOptions (netns).
	Unplaced bool
	// Observe, when set, is called now and then with what the run measured so far (a
	// live view: emulator/dashboard). The backend hands over a fresh Run each time and
	// only appends to its Samples afterwards; the callee must not modify it. Backends
	// that cannot observe a running lab never call it.
	Observe func(reached units.Time, run *results.Run)
}

// A LabBackend is a Backend whose labs can also stay up between commands: Up brings a
// lab up and leaves it, Down removes exactly what it created, Exec runs a program in
// one of its nodes. Every command (up, down, exec, run) reaches a backend through the
// registry: netns and docker are LabBackends, the sim is not.
type LabBackend interface {
	Backend
	// Up brings p up and says how it was placed.
	Up(ctx context.Context, p *plan.Plan, o UpOptions) (*LabUp, error)
	// Down removes lab, also one whose Up or daemons were killed halfway.
	Down(ctx context.Context, lab string) error
	// Exec runs argv in node of lab with stdio; a program's non-zero exit comes back as
	// an *exec.ExitError.
	Exec(ctx context.Context, lab, node string, argv []string, stdio Stdio) error
	// Owns reports whether lab, one that is up (or half up), is this backend's.
	Owns(lab string) bool
}

// UpOptions are what `reef up` may ask of a LabBackend; a backend ignores what does not
// apply to it.
type UpOptions struct {
	// Topology names the file the plan came from, for display.
	Topology string
	// Shards is how many switch daemons carry the switches (0: the backend's default).
	Shards int
	// Switchd is the switchd binary ("": found or built); SwitchdArgs are extra
	// arguments for every switchd.
	Switchd     string
	SwitchdArgs []string
	// HostImage and Images pick the containers' images (docker: every host's, and
	// one host's by name).
	HostImage string
	Images    map[string]string
	// Progress, when set, is told how far Up has come, stage by stage.
	Progress func(UpProgress)
	// Place pins shards to machines (swarm: shard name → machine name).
	Place map[string]string
	// ClockOffsets moves machines' clocks (swarm: machine name → offset), to see what
	// an offset between machines does.
	ClockOffsets map[string]time.Duration
	// Unplaced leaves the daemons wherever the scheduler puts them instead of giving
	// each switch daemon a CPU of its own and the hosts the rest (netns; labs that
	// share the machine's CPUs, such as a class's).
	Unplaced bool
}

// LabUp is what Up reports about the lab it brought up.
type LabUp struct {
	Name string
	// Placement says which daemons carry which switches ("" when there is nothing to
	// say).
	Placement string
	// CPUs says which CPUs the switch daemons and the hosts run on ("" when the lab
	// left that to the scheduler).
	CPUs string
}

// ExitError is a program's non-zero exit status from a LabBackend's Exec when the
// program did not run as the controller's child (on another machine), so no
// *exec.ExitError can carry it.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ExitCode is the program's exit status.
func (e *ExitError) ExitCode() int { return e.Code }

// Stdio are the streams Exec connects to the program.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

var (
	mu       sync.RWMutex
	backends = map[string]Backend{}
)

// Register makes a backend available by name; it panics on a duplicate.
func Register(b Backend) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := backends[b.Name()]; dup {
		panic("emulator: backend registered twice: " + b.Name())
	}
	backends[b.Name()] = b
}

// LookupLab returns the backend called name when its labs can stay up (reef up).
func LookupLab(name string) (LabBackend, error) {
	b, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	lb, ok := b.(LabBackend)
	if !ok {
		return nil, fmt.Errorf("emulator: backend %q runs experiments only; its labs cannot stay up (want %s)", name, strings.Join(labNames(), " or "))
	}
	return lb, nil
}

// OwnerOf returns the backend that brought lab up.
func OwnerOf(lab string) (LabBackend, error) {
	mu.RLock()
	defer mu.RUnlock()
	for _, n := range sortedNames() {
		if lb, ok := backends[n].(LabBackend); ok && lb.Owns(lab) {
			return lb, nil
		}
	}
	return nil, fmt.Errorf("emulator: no lab %q is up", lab)
}

// labNames lists the LabBackends' names, sorted.
func labNames() []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for _, n := range sortedNames() {
		if _, ok := backends[n].(LabBackend); ok {
			out = append(out, n)
		}
	}
	return out
}

// sortedNames lists the registered names in order (mu held).
func sortedNames() []string {
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Describer is implemented by a backend that can say in one line what it runs on and
// what it needs (reef backends prints it beside the name).
type Describer interface {
	Describe() string
}

// Backends lists the registered backends, sorted by name.
func Backends() []Backend {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Backend, 0, len(backends))
	for _, n := range sortedNames() {
		out = append(out, backends[n])
	}
	return out
}

// Lookup returns the backend called name.
func Lookup(name string) (Backend, error) {
	mu.RLock()
	defer mu.RUnlock()
	if b, ok := backends[name]; ok {
		return b, nil
	}
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, fmt.Sprintf("%q", n))
	}
	sort.Strings(names)
	return nil, fmt.Errorf("emulator: backend %q is not available; available: %s", name, strings.Join(names, ", "))
}
