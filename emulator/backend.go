// Package emulator is reef's controller side: the topology model (emulator/topo), the
// planner (emulator/plan), the run description (emulator/scenario), the backends that
// execute a run (emulator/sim, emulator/netns, emulator/docker) and what they return
// (emulator/results). This file holds the small interface every backend implements and
// the registry the CLI picks them from.
package emulator

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

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
	// Observe, when set, is called now and then with what the run measured so far (a
	// live view: emulator/dashboard). The backend hands over a fresh Run each time and
	// only appends to its Samples afterwards; the callee must not modify it. Backends
	// that cannot observe a running lab never call it.
	Observe func(reached units.Time, run *results.Run)
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
	for _, b := range backends {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
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
