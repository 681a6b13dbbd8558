package swarm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"reef/emulator"
	"reef/emulator/plan"
)

func init() { emulator.Register(Backend{}) }

// Backend is the Swarm backend (emulator.LabBackend): labs across the machines of a
// Docker Swarm. Its zero value talks to the manager at $REEF_SWARM (else $DOCKER_HOST).
type Backend struct {
	// Options are the defaults every command's options add to.
	Options Options
	// Lead is how far ahead of the controller's clock a run's shared start is picked
	// (0: 15 s plus 100 ms per node).
	Lead time.Duration
}

// Name returns "swarm".
func (Backend) Name() string { return BackendName }

// Describe says what the backend runs on and needs.
func (Backend) Describe() string {
	return "a lab across the machines of a Docker Swarm (nodes labelled reef.machine), cut links over VXLAN; needs root, the manager at $REEF_SWARM and reef image build --swarm"
}

// Up brings p up across the machines and leaves it up (reef up --backend swarm).
func (b Backend) Up(ctx context.Context, p *plan.Plan, o emulator.UpOptions) (*emulator.LabUp, error) {
	so := b.Options
	so.Topology, so.SwitchdArgs, so.Progress = o.Topology, o.SwitchdArgs, o.Progress
	if o.Place != nil {
		so.Place = o.Place
	}
	if o.ClockOffsets != nil {
		so.ClockOffsets = o.ClockOffsets
	}
	if o.Shards > 0 {
		return nil, fmt.Errorf("swarm: --shards: the Swarm backend gives each machine one shard per two of its CPUs (use --place SHARD=MACHINE to move one)")
	}
	m, err := Up(ctx, p, so)
	if err != nil {
		return nil, err
	}
	text := "by machine\n" + m.Placement
	for _, w := range m.Warnings {
		text += "  warning: " + w + "\n"
	}
	return &emulator.LabUp{Name: m.Lab, Placement: strings.TrimRight(text, "\n")}, nil
}

// Down removes lab from every machine.
func (Backend) Down(ctx context.Context, lab string) error { return Down(ctx, lab) }

// Exec runs argv in node of lab, on the node's machine.
func (Backend) Exec(ctx context.Context, lab, node string, argv []string, stdio emulator.Stdio) error {
	return Exec(ctx, lab, node, argv, stdio)
}

// Owns reports whether lab is a Swarm lab.
func (Backend) Owns(lab string) bool { return IsLab(lab) }

var _ emulator.LabBackend = Backend{}
