package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"reef/emulator/comparison"
)

func init() { commands = append(commands, compareCmd) }

type compareOptions struct {
	maxGoodput, maxQueueDelay string
	json, detail              bool
}

func compareCmd(o *options) *cobra.Command {
	co := &compareOptions{}
	c := &cobra.Command{
		Use:   "compare A B",
		Short: "compare two runs, or two experiments' results point by point: goodput, RTT, FCT, queue delay",
		Long: `compare reads two runs (run directories or their summary.json) or two experiments'
results directories (reef run --out DIR: sweep.json and a run directory per sweep point)
and shows how B differs from A. A is the reference: compare a sim run (A) with a netns
run (B) to see the emulation error, or two algorithms on the same experiment. Mixing a
run with an experiment's results is an error.

Two runs: per flow (matched by name) goodput, RTT p50/p99 and FCT, per group goodput and
FCT slowdown, and per port utilisation, queue delay mean/p50/p99, mean packet delay and
drops: A, B, B − A and (B − A) / A.

Two experiments: the sweep points are matched by run directory name; one line per point
with both fidelity verdicts, the largest goodput difference (and its flow) and the
largest mean queue delay difference at a busy port (and the port); --detail adds each
point's tables. Points found on one side only are listed, not compared.

When A and B ran at different time scales (the experiment's time_scale against its
backend_time_scale, say τ = 200 on sim and 2000 on netns), values are compared in the
paper's units: each run's rates × its τ and times ÷ its τ; the header says so. At equal
time scales they are compared as they ran. Each run's fidelity verdict is shown; a run
marked degraded did not keep the emulator's schedule, so a difference there may be the
emulator's rather than the backend's.

--max-goodput-diff makes it exit 1 when any long-lived flow's goodput (every flow's, if
none is long-lived) differs by more than the limit; --max-queue-delay-diff does the
same for the mean queue delay of the ports at least 50% busy in run A whose mean queue
holds a packet (an MTU) in one run at least. For experiments both apply to every
point, and a point found on one side only then fails too. Exit status: 0 within the
limits, 1 when one is exceeded, 2 on an error.`,
		Example: `  reef compare results/mh-sim results/mh-netns --max-goodput-diff 10%
  reef compare results/mh-sim results/mh-netns --detail
  reef compare results/x-sim/run results/x-netns/run --max-goodput-diff 10%
  reef compare results/m/cc=swift,M=2 results/m/cc=poseidon,M=2`,
		Args:         cobra.ExactArgs(2),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return compareRun(cmd, co, args[0], args[1])
		},
	}
	c.Flags().StringVar(&co.maxGoodput, "max-goodput-diff", "", "exit 1 when a flow's goodput differs by more than this (10% or 0.1)")
	c.Flags().StringVar(&co.maxQueueDelay, "max-queue-delay-diff", "", "exit 1 when a busy port's mean queue delay differs by more than this")
	c.Flags().BoolVar(&co.json, "json", false, "print the comparison as JSON (an object with a comparison per point for experiments)")
	c.Flags().BoolVar(&co.detail, "detail", false, "for experiments: print every point's tables after the one-line summaries")
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

// limits reads --max-goodput-diff and --max-queue-delay-diff.
func (co *compareOptions) limits() (comparison.Limits, error) {
	var l comparison.Limits
	for _, f := range []struct {
		name, val string
		dst       **float64
	}{{"max-goodput-diff", co.maxGoodput, &l.Goodput}, {"max-queue-delay-diff", co.maxQueueDelay, &l.QueueDelay}} {
		if f.val == "" {
			continue
		}
		v, err := parseFraction(f.name, f.val)
		if err != nil {
			return l, err
		}
		*f.dst = &v
	}
	return l, nil
}

func compareRun(cmd *cobra.Command, co *compareOptions, a, b string) error {
	l, err := co.limits()
	if err != nil {
		return err
	}
	ra, err := comparison.ReadResults(a)
	if err != nil {
		return fmt.Errorf("compare: A: %w", err)
	}
	rb, err := comparison.ReadResults(b)
	if err != nil {
		return fmt.Errorf("compare: B: %w", err)
	}
	if !ra.Experiment && !rb.Experiment {
		return compareOne(cmd, co, l, comparison.Compare(ra.Points[0].Summary, rb.Points[0].Summary))
	}
	sc, err := comparison.CompareSweeps(ra, rb, l)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	w := cmd.OutOrStdout()
	if co.json {
		if err := writeJSON(w, sc); err != nil {
			return err
		}
	} else if err := sc.WriteText(w, co.detail); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if failed := sc.Exceeded(); len(failed) > 0 {
		msg := fmt.Sprintf("%d of %d points exceed a limit", countPoints(sc), len(sc.Points))
		if n := len(sc.OnlyA) + len(sc.OnlyB); n > 0 {
			msg += fmt.Sprintf(", %d found on one side only", n)
		}
		return &exitError{code: 1, err: fmt.Errorf("compare: %s: %s", msg, strings.Join(failed, "; "))}
	}
	return nil
}

// countPoints is the number of compared points of sc that exceed a limit.
func countPoints(sc *comparison.SweepComparison) int {
	n := 0
	for _, p := range sc.Points {
		if len(p.Exceeded) > 0 {
			n++
		}
	}
	return n
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return nil
}

// compareOne prints the comparison of two runs and checks it against l, saying on
// stderr how close each limited difference came.
func compareOne(cmd *cobra.Command, co *compareOptions, l comparison.Limits, c *comparison.Comparison) error {
	w := cmd.OutOrStdout()
	if co.json {
		if err := writeJSON(w, c); err != nil {
			return err
		}
	} else if err := c.WriteText(w); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	ew := cmd.ErrOrStderr()
	if l.Goodput != nil {
		d, flow := c.MaxGoodputDiff()
		fmt.Fprintf(ew, "largest goodput difference: %.1f%% (flow %s); limit %.1f%%\n", d*100, flow, *l.Goodput*100)
	}
	if l.QueueDelay != nil {
		if d, port := c.MaxQueueDelayDiff(); port == "" {
			fmt.Fprintf(ew, "no port was at least %.0f%% busy in run A with a packet (an MTU) queued on average in one run: no queue delay to compare\n",
				comparison.BusyQueueUtilisation*100)
		} else {
			fmt.Fprintf(ew, "largest mean queue delay difference at a busy port: %.1f%% (port %s); limit %.1f%%\n", d*100, port, *l.QueueDelay*100)
		}
	}
	if failed := c.Exceeded(l); len(failed) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("compare: %s", strings.Join(failed, "; "))}
	}
	return nil
}
