package netns

import (
	"context"

	"reef/emulator"
	"reef/emulator/plan"
)

// Lifecycle is how Backend.Run brings its lab up and down. The zero value means this
// package's Up and Down (namespaces); emulator/docker plugs in containers, so both
// backends share the rest of Run (host daemons, captures, samples, results).
type Lifecycle struct {
	// Name is the backend name written into results ("": "netns").
	Name string
	// Up brings a plan up ("nil": Up). The Lab it returns must name the node
	// namespaces as NSName does and list the switch daemons (host PIDs) in State.
	Up func(ctx context.Context, p *plan.Plan, o Options) (*Lab, error)
	// Down removes a lab ("nil": Down).
	Down func(ctx context.Context, lab string) error
}

func (l Lifecycle) name() string {
	if l.Name == "" {
		return BackendName
	}
	return l.Name
}

func (l Lifecycle) up(ctx context.Context, p *plan.Plan, o Options) (*Lab, error) {
	if l.Up == nil {
		return Up(ctx, p, o)
	}
	return l.Up(ctx, p, o)
}

func (l Lifecycle) down(ctx context.Context, lab string) error {
	if l.Down == nil {
		return Down(ctx, lab)
	}
	return l.Down(ctx, lab)
}

var _ emulator.LabBackend = Backend{}

// Up brings p up on namespaces and leaves it up (reef up; emulator.LabBackend).
func (Backend) Up(ctx context.Context, p *plan.Plan, o emulator.UpOptions) (*emulator.LabUp, error) {
	lab, err := Up(ctx, p, UpOptionsOf(o))
	if err != nil {
		return nil, err
	}
	return &emulator.LabUp{Name: lab.Name, Placement: lab.Partition.String(p), CPUs: DescribeCPUs(&lab.State)}, nil
}

// UpOptionsOf is what Up takes of a command's emulator.UpOptions.
func UpOptionsOf(o emulator.UpOptions) Options {
	return Options{Switchd: o.Switchd, SwitchdArgs: o.SwitchdArgs, Topology: o.Topology, Shards: o.Shards, Progress: o.Progress, Unplaced: o.Unplaced}
}

// Down removes lab (emulator.LabBackend).
func (Backend) Down(ctx context.Context, lab string) error { return Down(ctx, lab) }

// Exec runs argv in node of lab (emulator.LabBackend).
func (Backend) Exec(ctx context.Context, lab, node string, argv []string, stdio emulator.Stdio) error {
	return Exec(ctx, lab, node, argv, stdio)
}

// Owns reports whether lab is up (or half up) on namespaces, not containers.
func (Backend) Owns(lab string) bool {
	st, err := ReadState(DefaultRunDir, lab)
	return err == nil && (st.Backend == "" || st.Backend == BackendName)
}
