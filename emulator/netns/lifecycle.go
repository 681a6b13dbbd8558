package netns

import (
	"context"

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
