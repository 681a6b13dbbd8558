package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"reef/emulator"
	"reef/emulator/netns"
	"reef/emulator/swarm"
	"reef/switchd"
	"reef/switchd/shard"
)

func init() { commands = append(commands, statsCmd) }

func statsCmd(o *options) *cobra.Command {
	var lab string
	c := &cobra.Command{
		Use:   "stats SWITCH",
		Short: "print a running lab's per-port counters of one switch",
		Long: `stats reads the statistics file a switch daemon rewrites while the lab runs (every
second, and once more on exit) and prints one row per port: peer, transmitted packets
and bytes, drops, frames the emulator lost outside the model (its receive ring was
full while the daemon did not run, or a write failed; "-" on a link the shard carries
in memory), ECN marks, PFC pause time, queue now and at its largest, and release
lateness p50/p99 (how late the daemon put frames on the wire against their computed
time).`,
		Example:      "  reef stats s1\n  reef stats --lab dumbbell tor1",
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			lab, err := pickLab(lab)
			if err != nil {
				return err
			}
			if swarm.IsLab(lab) { // the switch's daemon runs on its machine
				return swarm.Delegate(cmd.Context(), lab, args[0], []string{"stats", args[0]},
					emulator.Stdio{Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr()})
			}
			return statsRun(cmd.OutOrStdout(), lab, args[0])
		},
	}
	c.Flags().StringVar(&lab, "lab", "", "lab (default: the only lab up)")
	return c
}

func statsRun(w io.Writer, lab, node string) error {
	st, err := netns.ReadState("", lab)
	if err != nil {
		return err
	}
	path := ""
	for _, d := range st.Daemons {
		if d.Node == node {
			path = d.Stats
		}
	}
	if path == "" {
		return fmt.Errorf("lab %s has no switch %q", lab, node)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("switch %s has written no statistics yet: %w", node, err)
	}
	var s shard.Report
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var cfg switchd.Config // for the peers
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), node+".json")); err == nil {
		_ = json.Unmarshal(b, &cfg)
	}
	return printStats(w, &s, &cfg)
}

func printStats(w io.Writer, s *shard.Report, cfg *switchd.Config) error {
	state := "live"
	if s.Final {
		state = "final"
	}
	fmt.Fprintf(w, "%s at lab time %v (%s)\n", s.Node, s.Time, state)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "port\tpeer\ttx pkts\ttx bytes\tdrops\tlost\tmarks\tpause\tqueue now\tqueue max\tlate p50\tlate p99\t")
	lost := map[string]uint64{} // the driver's ports: the switch's external ones, by name
	for _, dp := range s.Driver.Ports {
		lost[dp.Name] += dp.Lost()
	}
	for i, p := range s.Ports {
		peer := "-"
		if i < len(cfg.Ports) && cfg.Ports[i].Peer != "" {
			peer = cfg.Ports[i].Peer
		}
		l := "-" // in memory: nothing to lose
		if n, ok := lost[p.Name]; ok {
			l = strconv.FormatUint(n, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%d\t%v\t%v\t%v\t%v\t%v\t\n", p.Name, peer, p.TxPackets, p.TxBytes,
			p.Dropped(), l, p.ECNMarks, p.PauseTime, p.QueueBytes, p.MaxQueueBytes, p.Lateness.P50, p.Lateness.P99)
	}
	return tw.Flush()
}
