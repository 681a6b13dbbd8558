package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"reef/emulator/analysis"
	"reef/emulator/calibrate"
	"reef/emulator/runner"
)

func init() { commands = append(commands, calibrateCmd) }

type calibrateOptions struct {
	*options
	backend string
	out     string
	mtus    []int
	keep    string
}

func calibrateCmd(o *options) *cobra.Command {
	co := &calibrateOptions{options: o}
	c := &cobra.Command{
		Use:   "calibrate",
		Short: "measure the fastest links this machine emulates with fidelity ok, and write it down",
		Long: `calibrate runs the same small experiments at faster and faster link rates on a real
backend: long Swift flows across a chain of three switches, and a permutation across
the pods of a k = 4 fat-tree, each at every MTU asked for. For each it records the
fastest rate whose fidelity verdict came out ok (two degraded rates in a row end the
search) and writes the figures to --out, where reef run reads them: a run asking for
faster links is flagged before it starts. It takes a few minutes; run it on a quiet
machine, and again after changing the machine.`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE:         func(cmd *cobra.Command, _ []string) error { return calibrateRun(cmd.Context(), co) },
	}
	c.Flags().StringVar(&co.backend, "backend", "netns", "backend to calibrate: netns or docker")
	c.Flags().StringVar(&co.out, "out", calibrate.DefaultPath, "where to write the limits")
	c.Flags().IntSliceVar(&co.mtus, "mtu", []int{1500, 4096}, "MTUs to calibrate (repeat or separate with commas)")
	c.Flags().StringVar(&co.keep, "keep", "", "keep every trial's results under this directory (default: a temporary one, removed)")
	return c
}

func calibrateRun(ctx context.Context, co *calibrateOptions) error {
	dir := co.keep
	if dir == "" {
		d, err := os.MkdirTemp("", "reef-calibrate-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	host, _ := os.Hostname()
	lim := &calibrate.Limits{Machine: host, CPUs: runtime.NumCPU(), Backend: co.backend, Date: time.Now().UTC()}
	n := 0
	run := func(ctx context.Context, doc string) (string, string, error) {
		n++
		file := filepath.Join(dir, "trial"+strconv.Itoa(n)+".yaml")
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			return "", "", err
		}
		out, err := runner.Run(ctx, file, runner.Options{Backend: co.backend, OutDir: strings.TrimSuffix(file, ".yaml"), NoFigures: true})
		if err != nil {
			return "", "", err
		}
		f := out.Summaries[0].Fidelity
		return f.Verdict, analysis.DegradedWhy(f), nil
	}
	fmt.Printf("%-9s %5s %12s  %s\n", "topology", "mtu", "link rate", "fidelity")
	limits, err := calibrate.Measure(ctx, co.mtus, run, func(topo string, mtu int, t calibrate.Trial) {
		fmt.Printf("%-9s %5d %12v  %s %s\n", topo, mtu, t.Rate, t.Verdict, t.Why)
	})
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	lim.Limits = limits
	fmt.Println()
	for _, l := range limits {
		fmt.Printf("%-9s MTU %5d: fidelity ok up to %v links\n", l.Topology, l.MTU, l.MaxRate)
	}
	if err := lim.Save(co.out); err != nil {
		return err
	}
	fmt.Printf("written to %s (reef run reads it)\n", co.out)
	return nil
}

// loadLimits reads the machine's calibration for reef run: nil when there is none (or
// path is ""), with a warning when the file is there but unreadable.
func loadLimits(path string) *calibrate.Limits {
	if path == "" {
		return nil
	}
	l, err := calibrate.Load(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("calibration not used", "err", err)
		}
		return nil
	}
	return l
}
