package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"reef/emulator/report"
)

func init() { commands = append(commands, compareCmd) }

type compareOptions struct {
	maxGoodput, maxQueueDelay string
	json                      bool
}

func compareCmd(o *options) *cobra.Command {
	co := &compareOptions{}
	c := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "compare two runs: per-flow goodput, RTT and FCT, per-port queue delay, with differences",
		Long: `compare reads the summary.json of two run directories (or the files themselves) and
prints, per flow (matched by name), goodput, RTT p50/p99 and FCT, and per port,
utilisation, queue delay mean/p50/p99 and drops: A, B, B − A and (B − A) / A. A is the
reference: compare a sim run (A) with a netns run (B) to see the emulation error, or two
algorithms on the same experiment.

--max-goodput-diff makes it exit 1 when any long-lived flow's goodput (every flow's, if
none is long-lived) differs by more than the limit; --max-queue-delay-diff does the
same for the mean queue delay of the ports at least 50% busy in run A.`,
		Example: `  reef compare results/x-sim/run results/x-netns/run --max-goodput-diff 10%
  reef compare results/m/cc=swift,M=2 results/m/cc=poseidon,M=2`,
		Args:         cobra.ExactArgs(2),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return compareRun(cmd, co, args[0], args[1])
		},
	}
	c.Flags().StringVar(&co.maxGoodput, "max-goodput-diff", "", "exit 1 when a flow's goodput differs by more than this (10% or 0.1)")
	c.Flags().StringVar(&co.maxQueueDelay, "max-queue-delay-diff", "", "exit 1 when a busy port's mean queue delay differs by more than this")
	c.Flags().BoolVar(&co.json, "json", false, "print the comparison as JSON")
	return c
}

// parseFraction reads "10%" or "0.1".
func parseFraction(flag, s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("--%s %q: want a fraction such as 10%% or 0.1", flag, s)
	}
	if pct {
		v /= 100
	}
	return v, nil
}

func compareRun(cmd *cobra.Command, co *compareOptions, a, b string) error {
	var maxG, maxQ float64 = -1, -1
	var err error
	if co.maxGoodput != "" {
		if maxG, err = parseFraction("max-goodput-diff", co.maxGoodput); err != nil {
			return err
		}
	}
	if co.maxQueueDelay != "" {
		if maxQ, err = parseFraction("max-queue-delay-diff", co.maxQueueDelay); err != nil {
			return err
		}
	}
	sa, err := report.ReadSummary(a)
	if err != nil {
		return err
	}
	sb, err := report.ReadSummary(b)
	if err != nil {
		return err
	}
	c := report.Compare(sa, sb)
	w := cmd.OutOrStdout()
	if co.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return err
		}
	} else if err := c.WriteText(w); err != nil {
		return err
	}
	var failed []string
	if maxG >= 0 {
		d, flow := c.MaxGoodputDiff()
		fmt.Fprintf(cmd.ErrOrStderr(), "largest goodput difference: %.1f%% (flow %s); limit %.1f%%\n", d*100, flow, maxG*100)
		if d > maxG {
			failed = append(failed, fmt.Sprintf("flow %s's goodput differs by %.1f%% (limit %.1f%%)", flow, d*100, maxG*100))
		}
	}
	if maxQ >= 0 {
		d, port := c.MaxQueueDelayDiff()
		if port == "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "no port was at least %.0f%% busy in run A: no queue delay to compare\n", report.BusyQueueUtilisation*100)
		} else {
			fmt.Fprintf(cmd.ErrOrStderr(), "largest mean queue delay difference at a busy port: %.1f%% (port %s); limit %.1f%%\n", d*100, port, maxQ*100)
		}
		if d > maxQ {
			failed = append(failed, fmt.Sprintf("port %s's mean queue delay differs by %.1f%% (limit %.1f%%)", port, d*100, maxQ*100))
		}
	}
	if len(failed) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("compare: %s", strings.Join(failed, "; "))}
	}
	return nil
}
