package netns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"reef/internal/jsonfile"
)

// State is a lab's intent log, kept in <RunDir>/<lab>/state.json. Every object is
// recorded before it is created, so Down can remove exactly what the lab made even
// after Up or a daemon was killed halfway; names recorded but never created are skipped.
type State struct {
	Lab string `json:"lab"`
	// Backend is the backend that brought the lab up ("": netns).
	Backend string `json:"backend,omitempty"`
	// Created is when Up started; Ready is set once Up finished.
	Created time.Time `json:"created"`
	Ready   bool      `json:"ready"`
	// Epoch is the lab's time zero (CLOCK_MONOTONIC ns) shared by its daemons.
	Epoch int64 `json:"epoch"`
	// Topology is the file the lab came from, for display.
	Topology string `json:"topology,omitempty"`
	// Namespaces are the lab's named network namespaces (node name → namespace name).
	Namespaces []NodeNS `json:"namespaces"`
	// EtcDirs are the /etc/netns/<namespace> directories the lab wrote.
	EtcDirs []string `json:"etc_dirs"`
	// Daemons are the processes the lab started: one entry per switch, so the switches
	// of one shard share a Pid.
	Daemons []Daemon `json:"daemons"`
	// Shards are the switch daemons' shards.
	Shards []Shard `json:"shards,omitempty"`
	// HostCPUs are the CPUs the hosts' daemons, the programs exec starts in hosts and
	// the kernel's receive work for the hosts' interfaces run on, when the lab placed
	// its work on CPUs (placeCPUs; empty: it did not).
	HostCPUs []int `json:"host_cpus,omitempty"`
}

// Shard is one switch daemon's set of switches.
type Shard struct {
	Name     string   `json:"name"`
	Switches []string `json:"switches"`
	// CPUs are the CPUs the shard's daemon runs on (empty: wherever the scheduler
	// puts it).
	CPUs []int `json:"cpus,omitempty"`
}

// NodeNS names one node's namespace.
type NodeNS struct {
	Node   string `json:"node"`
	NS     string `json:"ns"`
	Switch bool   `json:"switch,omitempty"`
}

// Daemon is one process started by the lab, in Node's namespace.
type Daemon struct {
	Node string `json:"node"`
	// Shard names the daemon's shard (its switches share Pid and Log).
	Shard string `json:"shard,omitempty"`
	Pid   int    `json:"pid"`
	// Stats is where the daemon writes live (and, on exit, final) statistics.
	Stats string `json:"stats"`
	Log   string `json:"log"`
}

// stateFile guards concurrent updates of one lab's state file.
type stateFile struct {
	mu   sync.Mutex
	path string
	st   State
}

func (s *stateFile) update(fn func(*State)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.st)
	return writeJSON(s.path, &s.st)
}

// writeJSON replaces path atomically with v as JSON.
func writeJSON(path string, v any) error { return jsonfile.Write(path, v, true) }

// ReadState reads the state of lab under runDir ("" means DefaultRunDir).
func ReadState(runDir, lab string) (*State, error) {
	if runDir == "" {
		runDir = DefaultRunDir
	}
	b, err := os.ReadFile(filepath.Join(runDir, lab, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("netns: no lab %q is up (no %s)", lab, filepath.Join(runDir, lab, "state.json"))
	}
	if err != nil {
		return nil, fmt.Errorf("netns: lab %q: %w", lab, err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("netns: lab %q: state file: %w", lab, err)
	}
	return &st, nil
}
