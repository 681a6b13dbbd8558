package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"reef/emulator/experiment"
	"reef/emulator/plan"
	"reef/emulator/topo"
	"reef/hostd/workload"
	"reef/units"
)

func init() { commands = append(commands, traceGenCmd) }

// traceGenOptions are reef trace-gen's flags.
type traceGenOptions struct {
	cdf      string
	load     float64
	duration string
	seed     uint64
	hosts    []string
	format   string
	out      string
}

func traceGenCmd(o *options) *cobra.Command {
	g := &traceGenOptions{}
	c := &cobra.Command{
		Use:   "trace-gen TOPOLOGY|EXPERIMENT",
		Short: "write a trace of flows (CSV or JSON lines) from a shipped size distribution, to edit and replay",
		Long: `trace-gen draws flows as a poisson workload would, on the hosts of a topology (or an
experiment's topology): every host starts flows with Poisson arrivals, sizes from the
distribution, to uniformly random other hosts, offering --load of its NIC rate for
--duration. It writes them as a trace (start, src, dst, size; times and rates in the
topology's units) that an experiment replays with

  workloads:
    - {kind: trace, trace: FILE}

Edit the trace freely: add a cc column to give flows their own algorithm; reef validate
checks it (file, line and field of every bad row).`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(_ *cobra.Command, args []string) error {
			w := io.Writer(os.Stdout)
			if g.out != "" && g.out != "-" {
				f, err := os.Create(g.out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			return traceGen(w, args[0], g)
		},
	}
	f := c.Flags()
	f.StringVar(&g.cdf, "cdf", "websearch", "flow-size distribution: "+strings.Join(workload.Builtins(), ", ")+" or a CDF file")
	f.Float64Var(&g.load, "load", 0.6, "offered load per host, a fraction of its NIC rate in (0, 1]")
	f.StringVar(&g.duration, "duration", "5ms", "arrivals from 0 until this time")
	f.Uint64Var(&g.seed, "seed", 1, "random seed")
	f.StringSliceVar(&g.hosts, "hosts", nil, "hosts taking part: names or glob patterns (default: all)")
	f.StringVar(&g.format, "format", "csv", "csv or jsonl")
	f.StringVarP(&g.out, "out", "o", "", "write to this file (default: standard output)")
	return c
}

func traceGen(w io.Writer, file string, g *traceGenOptions) error {
	dur, err := units.ParseTime(g.duration)
	if err != nil {
		return fmt.Errorf("--duration: %w", err)
	}
	t, err := loadTopology(file)
	if err != nil {
		return err
	}
	p, err := plan.Build(t, plan.Options{Seed: g.seed})
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var names []string
	var idx []int
	rate := units.Rate(0)
	for i, h := range p.Hosts {
		if !matchesAny(h.Config.Name, g.hosts) {
			continue
		}
		names = append(names, h.Config.Name)
		idx = append(idx, i)
		if rate == 0 || h.Config.Rate < rate {
			rate = h.Config.Rate
		}
	}
	if len(idx) < 2 {
		return fmt.Errorf("--hosts %s: %d hosts of %s match; want at least two", strings.Join(g.hosts, ","), len(idx), t.Name)
	}
	cdf, err := workload.Load(os.DirFS("."), g.cdf)
	if err != nil {
		return fmt.Errorf("--cdf: %w", err)
	}
	srcs := make([]int, len(idx))
	for i := range srcs {
		srcs[i] = i
	}
	gen, err := workload.Poisson{Srcs: srcs, Dsts: srcs, Load: g.load, Rate: rate, CDF: cdf, Duration: dur}.
		Generate(rand.New(rand.NewPCG(g.seed, 0x7472616365)))
	if err != nil {
		return err
	}
	flows := make([]workload.TraceFlow, len(gen))
	for i, fl := range gen {
		flows[i] = workload.TraceFlow{Start: fl.Start, Src: names[fl.Src], Dst: names[fl.Dst], Size: fl.Size}
	}
	if g.format == "csv" {
		fmt.Fprintf(w, "# reef trace-gen %s --cdf %s --load %g --duration %v --seed %d: %d flows on %d hosts at %v\n",
			file, g.cdf, g.load, dur, g.seed, len(flows), len(names), rate)
	}
	return workload.WriteTrace(w, flows, g.format)
}

// loadTopology reads a topology file, or the topology of an experiment file (its first
// sweep point).
func loadTopology(file string) (*topo.Topology, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if !isExperiment(src) {
		return topo.Parse(file, src)
	}
	x, err := experiment.Parse(file, src)
	if err != nil {
		return nil, err
	}
	return x.Topology(x.Points[0])
}

func matchesAny(name string, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
