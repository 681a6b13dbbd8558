package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"reef/emulator"
	"reef/emulator/netns"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/units"
)

// RunSpec is one machine's part of a run: the whole scenario (each machine runs its
// own hosts' flows and samples its own switches).
type RunSpec struct {
	Scenario *scenario.Scenario `json:"scenario"`
	// Capture lists this machine's NODE or NODE:PORT to capture.
	Capture []string `json:"capture,omitempty"`
}

// RunDir is where a machine's agent keeps what its part of a run measured (the part's
// results directory, in its container).
func RunDir(lab string) string { return filepath.Join(netns.DefaultRunDir, "runs", lab) }

// Files an agent writes in RunDir when its part of a run is over.
const (
	partFile   = "part.json"   // the part's results.Run
	clocksFile = "clocks.json" // <machine>.clocks.json: its peers measured during the run
	doneFile   = "done"        // written last: "" when the part ran, else its error
)

// ClockInterval is how often an agent measures its peers again during a run.
const ClockInterval = 5 * time.Second

// watchClocks measures spec's peers every interval (20 probes each) until ctx ends and
// returns every measurement.
func watchClocks(ctx context.Context, spec *Spec, c clock, interval time.Duration) []ClockSample {
	var out []ClockSample
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
		if got, err := probePeers(ctx, spec, c, 20, time.Second); err == nil {
			out = append(out, got...)
		}
	}
}

// agentRun runs this machine's part of spec.Run with the netns run logic (the slice,
// its hosts' daemons, its switches' samples) and leaves its results in RunDir.
func agentRun(ctx context.Context, spec *Spec, c clock, log *slog.Logger) error {
	out := RunDir(spec.Lab)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	dir := filepath.Dir(exe)
	b := netns.Backend{
		Lab:   netns.Options{Switchd: filepath.Join(dir, "switchd"), Topology: spec.Topology, SwitchdArgs: spec.SwitchdArgs, Log: log},
		Hostd: filepath.Join(dir, "hostd"),
		Part:  &netns.Part{Slice: &spec.Slice, Epoch: monoAt(spec.Start, c), WireEpoch: spec.Start},
	}
	// The peers' clocks and the tunnels are measured again all through the run: a
	// drift that outgrows a cut link's delay makes the run degraded.
	pctx, stopProbes := context.WithCancel(ctx)
	probes := make(chan []ClockSample, 1)
	go func() { probes <- watchClocks(pctx, spec, c, ClockInterval) }()
	run, rerr := b.Run(ctx, spec.Plan, spec.Run.Scenario, emulator.RunOptions{OutDir: out, Capture: spec.Run.Capture})
	stopProbes()
	if err := netns.WriteJSON(filepath.Join(out, spec.Machine+"."+clocksFile), <-probes); err != nil {
		rerr = errors.Join(rerr, err)
	}
	if run != nil {
		if err := netns.WriteJSON(filepath.Join(out, partFile), run); err != nil {
			rerr = errors.Join(rerr, err)
		}
	}
	msg := ""
	if rerr != nil {
		msg = rerr.Error()
	}
	if err := os.WriteFile(filepath.Join(out, doneFile), []byte(msg), 0o644); err != nil {
		return errors.Join(rerr, err)
	}
	return rerr
}

// Run executes sc on p across the Swarm's machines: the lab placed as for Up, a shared
// start far enough ahead for every machine to bring its part up, each machine running
// its part (Agent), and the parts' results copied back into opts.OutDir and merged.
// The lab is always removed at the end. A machine lost during the run is named; the
// results of the others are kept.
func (b Backend) Run(ctx context.Context, p *plan.Plan, sc *scenario.Scenario, opts emulator.RunOptions) (*results.Run, error) {
	if sc.Duration <= 0 {
		return nil, fmt.Errorf("swarm: scenario %s: duration must be > 0, got %v", sc.Name, sc.Duration)
	}
	o := b.Options
	o.SwitchdArgs = append(append([]string(nil), o.SwitchdArgs...), opts.SwitchdArgs...)
	if opts.Place != nil {
		o.Place = opts.Place
	}
	if opts.ClockOffsets != nil {
		o.ClockOffsets = opts.ClockOffsets
	}
	o.Progress = opts.Setup
	out := opts.OutDir
	if out == "" {
		d, err := os.MkdirTemp("", "reef-"+p.Lab+"-")
		if err != nil {
			return nil, fmt.Errorf("swarm: %w", err)
		}
		out = d
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("swarm: %w", err)
	}
	t0 := time.Now()
	l, err := place(ctx, p, o)
	if err != nil {
		return nil, err
	}
	captures := map[int][]string{}
	for _, c := range opts.Capture {
		node, _, _ := strings.Cut(c, ":")
		mi, ok := l.pl.Node[node]
		if !ok {
			return nil, fmt.Errorf("swarm: --capture %s: no node %q", c, node)
		}
		captures[mi] = append(captures[mi], c)
	}
	lead := b.Lead
	if lead <= 0 {
		// Tasks start in a few seconds on an idle machine; each machine then brings
		// its part up as netns does.
		lead = 15*time.Second + time.Duration(len(p.Hosts)+len(p.Switches))*100*time.Millisecond
	}
	start := time.Now().Add(lead).UnixNano()
	err = l.start(ctx, o, start, func(mi int) *RunSpec { return &RunSpec{Scenario: sc, Capture: captures[mi]} })
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := Down(context.WithoutCancel(ctx), p.Lab); derr != nil {
			err = errors.Join(err, fmt.Errorf("swarm: down: %w", derr))
		}
	}()
	if time.Now().UnixNano() > start {
		return nil, fmt.Errorf("swarm: the machines were not ready by the run's start (lead %v): a busy machine? raise the lead", lead)
	}

	// Wait for every part, reporting progress; a lost machine ends the wait for it.
	parts := make([]*results.Run, len(l.pl.Machines))
	var errs []error
	limit := time.Unix(0, start).Add(time.Duration(sc.Duration) + 60*time.Second)
	done := make([]bool, len(l.pl.Machines))
	stopping := false
	for left := len(done); left > 0; {
		if opts.Progress != nil {
			reached := min(max(units.Time(time.Now().UnixNano()-start), 0), sc.Duration)
			opts.Progress(reached, sc.Duration)
		}
		down := l.downMachines(ctx)
		for mi := range done {
			if done[mi] {
				continue
			}
			var ok bool
			var err error
			if why, lost := down[mi]; lost {
				ok, err = true, lostErr(l.pl.Machines[mi].Name, errors.New(why))
			} else {
				ok, err = l.collect(ctx, mi, out, &parts[mi])
			}
			if err != nil || ok {
				if err != nil {
					errs = append(errs, err)
					if strings.Contains(err.Error(), " was lost ") && !stopping {
						// The run cannot hold without it: the others stop now and
						// keep what they measured.
						slog.Warn("machine lost; stopping the run on the others", "machine", l.pl.Machines[mi].Name, "err", err)
						stopping = true
						l.stopParts(ctx, done)
					}
				}
				done[mi] = true
				left--
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(limit) {
			for mi := range done {
				if !done[mi] {
					errs = append(errs, fmt.Errorf("swarm: machine %s: its part of the run did not finish %v after the run's end", l.pl.Machines[mi].Name, 60*time.Second))
				}
			}
			break
		}
		select {
		case <-ctx.Done():
			errs = append(errs, ctx.Err())
			left = 0
		case <-time.After(250 * time.Millisecond):
		}
	}
	run := merge(l, sc, parts)
	run.Tunnels = l.tunnels(out)
	run.WallTime = units.Time(time.Since(t0))
	if opts.Progress != nil {
		opts.Progress(run.Duration, sc.Duration)
	}
	return run, errors.Join(errs...)
}

// collect checks whether machine mi's part of the run is over and, if so, copies its
// files into out and reads its results. It returns an error naming the machine when
// its task is gone (the machine was lost) or its part failed.
func (l *lab) collect(ctx context.Context, mi int, out string, part **results.Run) (bool, error) {
	m := l.pl.Machines[mi]
	// A frozen machine's engine never answers: every call here is bounded
	// (EngineCallLimit).
	cctx, cancel := context.WithTimeout(ctx, EngineCallLimit)
	defer cancel()
	id, running, err := l.container(cctx, mi)
	if err == nil && !running {
		err = fmt.Errorf("swarm: machine %s: its task is not running", m.Name)
	}
	if err == nil {
		err = l.engines[mi].Ping(cctx)
	}
	if err != nil {
		return true, lostErr(m.Name, err)
	}
	var msg []byte
	var finished bool
	if err := l.engines[mi].CopyFrom(cctx, id, filepath.Join(RunDir(l.p.Lab), doneFile), func(_ string, r io.Reader) error {
		finished = true
		msg, err = io.ReadAll(r)
		return err
	}); err != nil || !finished {
		return false, nil // not yet
	}
	err = l.engines[mi].CopyFrom(ctx, id, RunDir(l.p.Lab), func(name string, r io.Reader) error {
		base := filepath.Base(name)
		if base == doneFile {
			return nil
		}
		dst := filepath.Join(out, base)
		if base == partFile {
			dst = filepath.Join(out, m.Name+"."+partFile)
		}
		f, err := os.Create(dst)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		return errors.Join(err, f.Close())
	})
	if err != nil {
		return true, fmt.Errorf("swarm: machine %s: copy its results: %w", m.Name, err)
	}
	if b, err := os.ReadFile(filepath.Join(out, m.Name+"."+partFile)); err == nil {
		var r results.Run
		if err := json.Unmarshal(b, &r); err == nil {
			*part = &r
		}
	}
	if len(msg) > 0 {
		return true, fmt.Errorf("swarm: machine %s: %s", m.Name, msg)
	}
	return true, nil
}

// LostAfter is how long the manager must report a machine's node not ready before the
// run takes the machine for lost (a stopped engine is noticed at once, by its socket).
// On a loaded machine the manager misses heartbeats and reports nodes down for a second
// or two, even its own: measured here at a load of 8 with 1 s heartbeats.
const LostAfter = 8 * time.Second

// stopParts ends the run early on every machine not done: its host daemons stop (as on
// Ctrl-C) and its part finishes with what it measured.
func (l *lab) stopParts(ctx context.Context, done []bool) {
	for mi := range done {
		if done[mi] {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, EngineCallLimit)
		if id, running, err := l.container(cctx, mi); err == nil && running {
			_, _ = l.engines[mi].ExecAttached(cctx, id, []string{"pkill", "-TERM", "-x", "hostd"}, nil, nil, nil)
		}
		cancel()
	}
}

// downMachines asks the manager which of the lab's machines it has not heard from for
// LostAfter (Swarm's heartbeat: a frozen machine, a cut underlay), with why.
func (l *lab) downMachines(ctx context.Context) map[int]string {
	cctx, cancel := context.WithTimeout(ctx, EngineCallLimit)
	defer cancel()
	nodes, err := l.mgr.Nodes(cctx)
	if err != nil {
		return nil // the manager's own trouble is not a machine's
	}
	if l.downSince == nil {
		l.downSince = map[int]time.Time{}
	}
	down := map[int]string{}
	for mi, m := range l.pl.Machines {
		for _, n := range nodes {
			if n.ID != m.NodeID {
				continue
			}
			if n.Status.State == "ready" {
				delete(l.downSince, mi)
				continue
			}
			since, ok := l.downSince[mi]
			if !ok {
				l.downSince[mi] = time.Now()
				continue
			}
			if d := time.Since(since); d >= LostAfter {
				down[mi] = fmt.Sprintf("the Swarm has reported its node %s for %v", n.Status.State, d.Round(time.Second))
			}
		}
	}
	return down
}

// merge puts the parts together as one run: each flow from its source host's machine
// (where it was sent and acknowledged), hosts and ports in plan order.
func merge(l *lab, sc *scenario.Scenario, parts []*results.Run) *results.Run {
	run := &results.Run{Backend: BackendName, Scenario: sc.Name, Duration: sc.Duration}
	flows := map[uint32]results.Flow{}
	hosts := map[string]results.Host{}
	ports := map[string][]results.Port{}
	for mi, part := range parts {
		if part == nil {
			run.Duration = 0 // a part is missing: what is kept is incomplete
			continue
		}
		run.Duration = min(run.Duration, part.Duration)
		for _, f := range part.Flows {
			if l.pl.Node[f.Src] == mi {
				flows[f.ID] = f
			}
		}
		for _, h := range part.Hosts {
			hosts[h.Name] = h
		}
		for _, pr := range part.Ports {
			ports[pr.Switch] = append(ports[pr.Switch], pr)
		}
	}
	for _, f := range sc.Flows {
		rf, ok := flows[f.ID]
		if !ok {
			rf = results.Flow{ID: f.ID, Name: f.Name, Group: f.Group, Src: f.Src, Dst: f.Dst, CC: f.CC, Size: f.Size, Start: f.Start}
		}
		run.Flows = append(run.Flows, rf)
	}
	for _, h := range l.p.Hosts {
		if hr, ok := hosts[h.Config.Name]; ok {
			run.Hosts = append(run.Hosts, hr)
		}
	}
	for _, s := range l.p.Switches {
		if ps, ok := ports[s.Config.Name]; ok {
			run.Ports = append(run.Ports, ps...)
			continue
		}
		for i, pc := range s.Config.Ports {
			run.Ports = append(run.Ports, results.Port{Switch: s.Config.Name, Port: i, Name: pc.Name, Peer: pc.Peer, Rate: pc.Rate})
		}
	}
	return run
}

// tunnels is what each machine measured of the machines its cut links lead to: at
// the start, and the worst margin a later measurement of transit and offset asked for
// with the start's jitter (out holds the agents' <machine>.clocks.json).
func (l *lab) tunnels(out string) []results.Tunnel {
	var tunnels []results.Tunnel
	for mi, r := range l.ready {
		for _, c := range r.Clocks {
			least := units.Never
			for i := range l.pl.Cut {
				lk := l.p.Links[i]
				a, b := l.pl.Machines[l.pl.Node[lk.A.Node]].Name, l.pl.Machines[l.pl.Node[lk.B.Node]].Name
				if (a == r.Machine && b == c.Peer) || (b == r.Machine && a == c.Peer) {
					least = min(least, lk.Delay)
				}
			}
			if least == units.Never {
				continue
			}
			worst := c.Margin()
			var during []ClockSample
			if b, err := os.ReadFile(filepath.Join(out, r.Machine+"."+clocksFile)); err == nil && json.Unmarshal(b, &during) == nil {
				// During the run the probes share the CPUs with the daemons: what they
				// wait for is their own scheduling as much as the tunnel (measured: 6–9
				// ms at p90 in one probe round of three). The least round trip and
				// the offset taken from it are robust to that, so a drift shows; the
				// jitter stays the one measured at the start.
				for _, d := range during {
					if d.Peer == c.Peer {
						worst = max(worst, d.Transit+max(d.Offset, -d.Offset)+c.Jitter)
					}
				}
			}
			tunnels = append(tunnels, results.Tunnel{From: l.pl.Machines[mi].Name, To: c.Peer, Offset: units.Time(c.Offset),
				Transit: units.Time(c.Transit), Jitter: units.Time(c.Jitter), MinDelay: least, WorstMargin: units.Time(worst)})
		}
	}
	return tunnels
}
