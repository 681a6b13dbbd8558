package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"reef/emulator/dashboard"
	"reef/emulator/runner"
)

func init() { commands = append(commands, dashboardCmd) }

type dashboardOptions struct {
	*options
	addr  string
	run   string
	every time.Duration
}

func dashboardCmd(o *options) *cobra.Command {
	d := &dashboardOptions{options: o}
	c := &cobra.Command{
		Use:   "dashboard [LAB|RUN_DIR]",
		Short: "serve the live view (topology, links, flows, verdicts) and Prometheus /metrics on localhost",
		Long: `dashboard serves one web page on a loopback address: the topology drawn as a graph
with links coloured by utilisation (width: queue depth), the flows with their goodput,
window and RTT, the expectations' verdicts, and on a click a link's or a flow's time
series. /metrics exports the same figures to Prometheus (Grafana boards in dashboards/).

The argument is a results directory written by "reef run" (a run's directory, or an
experiment's: --run picks one of its runs, default the first), or the name of a netns
lab that is up (default: the only lab up), whose switch statistics are polled live.
"reef run --dashboard" shows a run while it executes.`,
		Example: `  reef dashboard results/poseidon-multihop-20261122T065000Z --run cc=poseidon,M=4
  reef dashboard fat-tree-k4 --addr 127.0.0.1:9090`,
		Args:         cobra.MaximumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			return dashboardRun(cmd.Context(), d, arg)
		},
	}
	c.Flags().StringVar(&d.addr, "addr", dashboard.DefaultAddr, "listen address (loopback only)")
	c.Flags().StringVar(&d.run, "run", "", "in an experiment's results directory, the run to show (its sub-directory name)")
	c.Flags().DurationVar(&d.every, "poll", 500*time.Millisecond, "how often a lab's statistics are read")
	return c
}

func dashboardRun(ctx context.Context, d *dashboardOptions, arg string) error {
	src, err := dashboardSource(arg, d)
	if err != nil {
		return err
	}
	ln, err := dashboard.Listen(d.addr)
	if err != nil {
		return err
	}
	fmt.Printf("dashboard: http://%s/ (metrics on /metrics; Ctrl-C stops)\n", ln.Addr())
	return dashboard.NewServer(src, dashboard.Options{}).ServeListener(ctx, ln)
}

// dashboardSource opens arg as a results directory when it is a directory, else as a
// lab's name.
func dashboardSource(arg string, d *dashboardOptions) (dashboard.Source, error) {
	if st, err := os.Stat(arg); arg != "" && err == nil && st.IsDir() {
		dirs, err := dashboard.RunDirs(arg)
		if err != nil {
			return nil, err
		}
		dir := dirs[0]
		if d.run != "" {
			dir = ""
			for _, x := range dirs {
				if filepath.Base(x) == d.run {
					dir = x
				}
			}
			if dir == "" {
				return nil, fmt.Errorf("dashboard: %s has no run %q; runs: %s", arg, d.run, runNames(dirs))
			}
		} else if len(dirs) > 1 {
			slog.Info("dashboard: showing the first run; pick another with --run", "run", filepath.Base(dir), "runs", runNames(dirs))
		}
		return dashboard.OpenRunDir(dir)
	}
	lab, err := pickLab(arg)
	if err != nil {
		return nil, fmt.Errorf("dashboard: no results directory given and %w (usage: reef dashboard RUN_DIR|LAB)", err)
	}
	src, err := dashboard.OpenLab("", lab, d.every)
	if err != nil && arg != "" {
		return nil, fmt.Errorf("dashboard: %q is neither a results directory nor a lab that is up: %w", arg, err)
	}
	return src, err
}

func runNames(dirs []string) string {
	names := make([]string, len(dirs))
	for i, x := range dirs {
		names[i] = filepath.Base(x)
	}
	return strings.Join(names, ", ")
}

// liveView is reef run --dashboard: a server over a feed the runner fills.
type liveView struct {
	progress *dashboard.Progress
	url      string
	stop     context.CancelFunc
	done     chan error
}

func startLiveView(ctx context.Context, addr, experiment string, next dashboard.Stepper) (*liveView, error) {
	ln, err := dashboard.Listen(addr)
	if err != nil {
		return nil, err
	}
	feed := dashboard.NewFeed(filepath.Base(experiment))
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	lv := &liveView{progress: &dashboard.Progress{Feed: feed, Next: next}, url: "http://" + ln.Addr().String() + "/",
		stop: stop, done: make(chan error, 1)}
	go func() { lv.done <- dashboard.NewServer(feed, dashboard.Options{}).ServeListener(sctx, ln) }()
	fmt.Fprintf(os.Stderr, "dashboard: %s (metrics on /metrics)\n", lv.url)
	return lv, nil
}

// wait shows the final verdicts and keeps serving until ctx is cancelled (Ctrl-C), so
// the finished run can be looked at; an interrupted or failed run stops at once.
func (lv *liveView) wait(ctx context.Context, out *runner.Outcome) {
	if out != nil {
		lv.progress.Feed.Settle(out.Results)
	}
	lv.progress.Feed.Finish()
	if out != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "dashboard: the run is over; still serving %s until Ctrl-C\n", lv.url)
		<-ctx.Done()
	}
	lv.stop()
	<-lv.done
}
