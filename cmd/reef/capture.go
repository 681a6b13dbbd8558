package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"reef/emulator/netns"
	"reef/emulator/swarm"
)

func init() { commands = append(commands, captureCmd) }

func captureCmd(o *options) *cobra.Command {
	var (
		lab, out string
		duration time.Duration
	)
	c := &cobra.Command{
		Use:   "capture NODE[:PORT]",
		Short: "capture a node's interface to pcapng (decode it with reef trace)",
		Long: `capture listens on one interface of a running lab (a host's, or a switch port given
by name or index) and writes every frame it sees, both directions, to a pcapng file
until Ctrl-C or --duration. A bare switch name captures all its ports.

The daemons send with PACKET_QDISC_BYPASS, which skips the kernel's taps: on an
interface, you see what arrives from the far end and not what the daemon on this end
sent. Capture the receiving host to see data packets with their INT values (and the
sending host to see the ACKs).

A link between two switches of one shard (reef up prints the shards) has no interface:
its daemon copies the port's frames to the capture instead, both directions, each
stamped with the time it crossed. A bare switch name captures its interfaces and its
in-memory ports together.`,
		Example: `  reef capture h10 -o victim.pcapng --duration 2s
  reef trace victim.pcapng --mpd-unit 6400ns`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return captureRun(cmd.Context(), lab, args[0], out, duration)
		},
	}
	f := c.Flags()
	f.StringVar(&lab, "lab", "", "lab (default: the only lab up)")
	f.StringVarP(&out, "output", "o", "", "pcapng file (default NODE[-PORT].pcapng)")
	f.DurationVar(&duration, "duration", 0, "stop after this long (default: until Ctrl-C)")
	return c
}

func captureRun(ctx context.Context, lab, target, out string, d time.Duration) error {
	lab, err := pickLab(lab)
	if err != nil {
		return err
	}
	if swarm.IsLab(lab) {
		return captureSwarm(ctx, lab, target, out, d)
	}
	t, err := netns.ParseTarget(lab, target)
	if err != nil {
		return err
	}
	if out == "" {
		out = strings.TrimSuffix(t.Node+"-"+t.Iface, "-") + ".pcapng"
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	n, err := netns.Capture(ctx, lab, t, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	fmt.Fprintf(os.Stderr, "%d frames from %s written to %s\n", n, strings.TrimSuffix(t.Node+":"+t.Iface, ":"), out)
	return err
}

// captureSwarm captures target of a lab across machines, on the node's machine.
func captureSwarm(ctx context.Context, lab, target, out string, d time.Duration) error {
	if out == "" {
		out = strings.ReplaceAll(target, ":", "-") + ".pcapng"
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = swarm.Capture(ctx, lab, target, d, f, os.Stderr)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
