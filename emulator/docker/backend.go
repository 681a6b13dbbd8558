package docker

import (
	"context"
	"path/filepath"
	"time"

	"reef/emulator"
	"reef/emulator/netns"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
)

// BackendName is the Docker backend's registered name.
const BackendName = "docker"

func init() { emulator.Register(Backend{}) }

// Backend runs scenarios on Docker containers. It is netns.Backend with its lab
// lifecycle swapped for Up and Down here: the host daemons, captures, switch samples and
// results are the netns run logic, working on the containers' namespaces (mounted under
// the netns names). hostd runs from the machine's binary in the host container's
// network namespace (not its mount namespace), exactly as on netns.
type Backend struct {
	// Netns tunes the shared run logic (hostd binary, lead, workers, switchd flags).
	Netns netns.Backend
	// Images tunes the containers (host images); its netns.Options part is ignored in
	// favour of Run.Up.
	Images Options
}

// Name returns "docker".
func (Backend) Name() string { return BackendName }

// Describe says what the backend runs on and needs.
func (Backend) Describe() string {
	return "a container per node (network mode none), wired as on netns; needs root and a Docker engine"
}

// Run executes sc on p in containers; see netns.Backend.Run.
func (b Backend) Run(ctx context.Context, p *plan.Plan, sc *scenario.Scenario, opts emulator.RunOptions) (*results.Run, error) {
	nb := b.Netns
	if nb.Lab.Switchd == "" {
		// prepareRun would otherwise find (or build) a switchd for the machine; the
		// containers run the image's.
		if dir, err := StaticBinaries(); err == nil {
			nb.Lab.Switchd = filepath.Join(dir, "switchd")
		}
	}
	if nb.Lead <= 0 {
		// Containers come up far slower than namespaces (about 0.3 s each on an idle
		// 2-core machine, several times that when it is busy): pick the run's time zero
		// far enough ahead that the lab is ready by then (measured: 13 containers in 4 s
		// idle, 15–50 s at a load average of 25).
		nb.Lead = 10*time.Second + time.Duration(len(p.Hosts)+len(p.Switches))*3*time.Second
	}
	img := b.Images
	nb.Lifecycle = netns.Lifecycle{
		Name: BackendName,
		Up: func(ctx context.Context, p *plan.Plan, o netns.Options) (*netns.Lab, error) {
			img.Options = o
			return Up(ctx, p, img)
		},
		Down: Down,
	}
	return nb.Run(ctx, p, sc, opts)
}

var _ emulator.LabBackend = Backend{}

// Up brings p up on containers and leaves it up (reef up; emulator.LabBackend).
func (b Backend) Up(ctx context.Context, p *plan.Plan, o emulator.UpOptions) (*emulator.LabUp, error) {
	do := b.Images
	do.Options = netns.UpOptionsOf(o)
	if o.HostImage != "" {
		do.HostImage = o.HostImage
	}
	if len(o.Images) > 0 {
		do.Images = o.Images
	}
	lab, err := Up(ctx, p, do)
	if err != nil {
		return nil, err
	}
	return &emulator.LabUp{Name: lab.Name, Placement: lab.Partition.String(p), CPUs: netns.DescribeCPUs(&lab.State)}, nil
}

// Down removes lab's containers and namespaces (emulator.LabBackend).
func (Backend) Down(ctx context.Context, lab string) error { return Down(ctx, lab) }

// Exec runs argv in node's container (emulator.LabBackend).
func (Backend) Exec(ctx context.Context, lab, node string, argv []string, stdio emulator.Stdio) error {
	return Exec(ctx, lab, node, argv, stdio)
}

// Owns reports whether lab is up (or half up) on Docker.
func (Backend) Owns(lab string) bool { return IsLab(lab) }
