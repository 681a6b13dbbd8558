package swarm

import (
	"context"
	"log/slog"
	"path/filepath"

	"reef/emulator/netns"
)

// RunSpec is one machine's part of a run.
type RunSpec struct{}

// RunDir is where a machine's agent keeps what its part of a run measured.
func RunDir(lab string) string { return filepath.Join(netns.DefaultRunDir, lab, "out") }

func agentRun(ctx context.Context, spec *Spec, lab *netns.Lab, c clock, log *slog.Logger) error {
	return nil
}
