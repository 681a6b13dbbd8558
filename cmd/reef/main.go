// Command reef is the one CLI people type: it brings labs up and down on network
// namespaces (default), Docker or the in-process sim backend, runs experiments that
// reproduce papers, and compares, reports and captures what they measured.
//
// # Usage
//
//	reef up topologies/fat-tree-k4.yaml
//	reef exec h1 -- ping -c 3 h16
//	reef run experiments/poseidon-multihop.yaml --backend sim
//	reef down
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/spf13/cobra"
)

// options are the flags every command shares.
type options struct {
	verbose bool
}

// command builds one subcommand; each lives in its own file and adds itself to commands
// from an init function, so the list is assembled without a central edit.
type command func(o *options) *cobra.Command

var commands []command

// exitError carries a specific exit status (reef run: 1 when an expectation failed,
// 2 on an error).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

func run(ctx context.Context, args []string) int {
	o := &options{}
	root := &cobra.Command{
		Use:           "reef",
		Short:         "reef emulates datacenter fabrics to reproduce congestion-control results",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(*cobra.Command, []string) {
			level := slog.LevelInfo
			if o.verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
		},
	}
	root.PersistentFlags().BoolVarP(&o.verbose, "verbose", "v", false, "log debug detail")
	subs := make([]*cobra.Command, 0, len(commands))
	for _, c := range commands {
		subs = append(subs, c(o))
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	root.AddCommand(subs...)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "reef:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 2
	}
	return 0
}
