package main

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"reef/emulator"
	labpkg "reef/emulator/lab"
)

func init() { commands = append(commands, execCmd) }

func execCmd(o *options) *cobra.Command {
	var lab string
	c := &cobra.Command{
		Use:   "exec NODE -- CMD [ARG...]",
		Short: "run a program in a node's namespace (host names of the lab resolve)",
		Example: `  reef exec h2 -- iperf3 -s -D
  reef exec h1 -- iperf3 -c h2 -t 5
  reef exec h1 -- ping -c 3 h16`,
		Args:         cobra.MinimumNArgs(2),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return errors.New("usage: reef exec NODE -- CMD [ARG...]")
			}
			return execRun(cmd.Context(), lab, args[0], args[1:])
		},
	}
	c.Flags().StringVar(&lab, "lab", "", "lab (default: the only lab up)")
	return c
}

func execRun(ctx context.Context, lab, node string, argv []string) error {
	lab, err := pickLab(lab)
	if err != nil {
		return err
	}
	be, err := emulator.OwnerOf(lab)
	if err != nil {
		return err
	}
	// in a class's bounded lab (reef lab start), the program is bounded with it
	if _, err := labpkg.Join(lab); err != nil {
		return err
	}
	err = be.Exec(ctx, lab, node, argv, emulator.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	var ee interface{ ExitCode() int } // *exec.ExitError, *emulator.ExitError
	if errors.As(err, &ee) {
		return &exitError{code: ee.ExitCode(), err: err}
	}
	return err
}
