package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"reef/emulator/render"
)

func init() { commands = append(commands, reportCmd) }

func reportCmd(o *options) *cobra.Command {
	var check bool
	c := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "re-render summary.json, plots and report.html from a run directory's raw results",
		Long: `report recomputes a results directory from what the backend measured (results.json
and the samples in flows.csv and queues.csv, or in results.json for directories written
before they moved out, with the plan, scenario and expectations saved beside it):
summary.json, the CSV time series, plots/*.png and *.svg, and report.html. Given a sweep's directory, it re-renders
every run in it and then the combined report. Use it after changing the analysis, or to
re-check a run's expectations.`,
		Example: `  reef report results/poseidon-multihop-20261122T063000Z
  reef report --check results/timely-incast-20261122T063000Z/run`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return reportRun(cmd, args[0], check)
		},
	}
	c.Flags().BoolVar(&check, "check", false, "exit 1 when an expectation fails")
	return c
}

func reportRun(cmd *cobra.Command, dir string, check bool) error {
	pass, err := render.RenderDir(dir)
	if err != nil {
		return err
	}
	verdict := "every expectation holds"
	if !pass {
		verdict = "an expectation failed"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (see %s/report.html)\n", dir, verdict, dir)
	if check && !pass {
		return &exitError{code: 1, err: errors.New("an expectation failed")}
	}
	return nil
}
