package netns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"reef/afpacket"
	"reef/emulator"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/hostd"
	"reef/hostd/daemon"
	"reef/switchd/shard"
	"reef/units"
)

// BackendName is the netns backend's registered name.
const BackendName = "netns"

func init() { emulator.Register(Backend{}) }

// Backend runs scenarios on real network namespaces: Up the lab with its switch daemons,
// one hostd per host that sends or receives, wait for the run's duration, collect what
// the daemons measured, Down the lab. Every daemon of a run shares one epoch (the run's
// time zero, a little in the future when the lab comes up), so the flows' start times,
// the switches' timeline events and every sample are in the same run time as on sim.
type Backend struct {
	// Lab tunes the lab (switchd binary, workers, extra switchd flags); the zero value
	// is fine.
	Lab Options
	// Hostd is the hostd binary ("": FindDaemon("hostd")).
	Hostd string
	// Lead is how far in the future the run's time zero is picked before Up starts
	// (0: 1 s plus 50 ms per node). A lab that is not ready by then is retried once with
	// twice the lead.
	Lead time.Duration
	// Lifecycle brings the lab up and down (zero value: Up and Down; see Lifecycle).
	Lifecycle Lifecycle
	// Part, when set, makes Run run one machine's part of a run that spans machines
	// (emulator/swarm): its slice of the lab, its hosts, its switches' samples.
	Part *Part
}

// Part is one machine's share of a run across machines. The machines agree on the
// run's time zero through a shared start time, each converting it to its own
// CLOCK_MONOTONIC (Epoch), and their daemons' release trailers carry times from that
// shared start (WireEpoch, see afpacket.Clock.SetWireEpoch).
type Part struct {
	Slice *Slice
	// Epoch is the run's (and the slice's) time zero on this machine's CLOCK_MONOTONIC.
	Epoch int64
	// WireEpoch is the same instant on the shared clock.
	WireEpoch int64
}

// Name returns "netns".
func (Backend) Name() string { return BackendName }

// Describe says what the backend runs on and needs.
func (Backend) Describe() string {
	return "real packets: a network namespace per node, veth links, switchd and hostd daemons (default; needs root)"
}

// Run executes sc on p in namespaces; see the type's doc. Cancelling ctx stops the run
// early (the host daemons write what they measured so far) and returns those results with
// ctx.Err(). The lab is always torn down.
func (b Backend) Run(ctx context.Context, p *plan.Plan, sc *scenario.Scenario, opts emulator.RunOptions) (*results.Run, error) {
	if sc.Duration <= 0 {
		return nil, fmt.Errorf("netns: scenario %s: duration must be > 0, got %v", sc.Name, sc.Duration)
	}
	r, err := prepareRun(b, p, sc, opts)
	if err != nil {
		return nil, err
	}
	lead := b.Lead
	if lead <= 0 {
		lead = time.Second + time.Duration(len(p.Hosts)+len(p.Switches))*50*time.Millisecond
	}
	for attempt := 0; ; attempt++ {
		run, err := r.once(ctx, lead)
		if errors.Is(err, errLate) && attempt == 0 && ctx.Err() == nil && b.Part == nil {
			r.log.Warn("lab was not ready by the run's start; retrying with a longer lead", "lab", p.Lab, "lead", lead)
			lead *= 2
			continue
		}
		return run, err
	}
}

var errLate = errors.New("netns: the lab was not ready by the run's start")

// runState is one run's fixed inputs.
type runState struct {
	b      Backend
	p      *plan.Plan
	sc     *scenario.Scenario
	opts   emulator.RunOptions
	out    string // absolute OutDir
	hostd  string
	log    *slog.Logger
	jobs   map[string]*daemon.Job // by host, for every host in a flow
	hosts  []string               // plan order
	events []shard.PortEvent
}

func prepareRun(b Backend, p *plan.Plan, sc *scenario.Scenario, opts emulator.RunOptions) (*runState, error) {
	log := b.Lab.Log
	if log == nil {
		log = slog.Default()
	}
	out := opts.OutDir
	if out == "" {
		d, err := os.MkdirTemp("", "reef-"+p.Lab+"-")
		if err != nil {
			return nil, fmt.Errorf("netns: %w", err)
		}
		out = d
	}
	out, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	r := &runState{b: b, p: p, sc: sc, opts: opts, out: out, log: log, jobs: map[string]*daemon.Job{}}
	hostOpts, err := sc.HostOptions(p)
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	job := func(name string) (*daemon.Job, error) {
		if j, ok := r.jobs[name]; ok {
			return j, nil
		}
		hp, ok := p.HostByName(name)
		if !ok {
			return nil, fmt.Errorf("netns: no host %q in the plan", name)
		}
		j := &daemon.Job{Host: hp.Config, MPDUnit: hostOpts.MPDUnit, Tuning: hostOpts.Tuning, Seed: sc.Seed, Duration: sc.Duration,
			SampleInterval: sc.SampleInterval, Edges: sc.WindowEdges(), RTPriority: hostRTPriority}
		r.jobs[name] = j
		return j, nil
	}
	networkRTT, err := sc.NetworkRTT(p)
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	seen := map[uint32]bool{}
	for i := range sc.Flows {
		f := &sc.Flows[i]
		if seen[f.ID] {
			return nil, fmt.Errorf("netns: flow %s: id %d used twice", f.Name, f.ID)
		}
		seen[f.ID] = true
		src, err := job(f.Src)
		if err != nil {
			return nil, fmt.Errorf("netns: flow %s: %w", f.Name, err)
		}
		if _, err := job(f.Dst); err != nil {
			return nil, fmt.Errorf("netns: flow %s: %w", f.Name, err)
		}
		h, err := hostd.New(src.Host, hostOpts)
		if err != nil {
			return nil, fmt.Errorf("netns: flow %s: %w", f.Name, err)
		}
		hf, err := f.Resolve(p, h.FlowEnv(f.INTHops).PacketSize)
		if err != nil {
			return nil, fmt.Errorf("netns: %w", err)
		}
		hf.NetworkRTT = networkRTT
		// Build the flow once here, so a bad algorithm or parameter fails before
		// anything is created.
		spec, err := hf.Spec(h, sc.Seed)
		if err != nil {
			return nil, fmt.Errorf("netns: flow %s: %w", f.Name, err)
		}
		if err := h.AddFlow(spec); err != nil {
			return nil, fmt.Errorf("netns: flow %s: %w", f.Name, err)
		}
		src.Flows = append(src.Flows, hf)
		if f.Stop > 0 && f.Stop < sc.Duration {
			src.Edges = append(src.Edges, f.Stop) // the flow's goodput ends there
		}
	}
	for _, hp := range p.Hosts {
		if _, ok := r.jobs[hp.Config.Name]; ok && b.part().Has(hp.Config.Name) {
			r.hosts = append(r.hosts, hp.Config.Name)
		}
	}
	for i, ev := range sc.Events {
		if ev.Link < 0 || ev.Link >= len(p.Links) {
			return nil, fmt.Errorf("netns: event %d: link index %d out of range", i, ev.Link)
		}
		switch ev.Kind {
		case scenario.EventRate, scenario.EventDown, scenario.EventUp:
		default:
			return nil, fmt.Errorf("netns: event %d: unknown kind %q", i, ev.Kind)
		}
		l := p.Links[ev.Link]
		for _, end := range []plan.Endpoint{l.A, l.B} {
			if end.IsHost {
				continue // a host NIC keeps its rate; the switch side of the link shapes it
			}
			r.events = append(r.events, shard.PortEvent{Switch: end.Node, Port: end.Port, At: ev.At, Kind: ev.Kind, Rate: ev.Rate})
		}
	}
	if r.b.Lab.Switchd == "" && len(p.Switches) > 0 {
		// Found (or built) now, before the run's epoch is picked.
		if r.b.Lab.Switchd, err = FindDaemon("switchd"); err != nil {
			return nil, err
		}
	}
	if len(r.jobs) > 0 {
		bin := b.Hostd
		if bin == "" {
			if bin, err = FindDaemon("hostd"); err != nil {
				return nil, err
			}
		}
		r.hostd = bin
	}
	return r, nil
}

// part is the Slice of the machine's part of a run (nil: the whole lab).
func (b Backend) part() *Slice {
	if b.Part == nil {
		return nil
	}
	return b.Part.Slice
}

// hostRTPriority is the host daemons' SCHED_FIFO priority: the switch daemons' default
// (switchd --rt-priority 10).
const hostRTPriority = 10

// hostProc is one running host daemon and the hosts it runs.
type hostProc struct {
	name  string   // the daemon's name: its first host's, or its group's
	hosts []string // the hosts it runs
	outs  []string // each host's output file
	cmd   *exec.Cmd
	done  chan struct{}
	err   error
}

// durations formats ts as a comma-separated list of Go durations (a flag's value).
func durations(ts []units.Time) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = time.Duration(t).String()
	}
	return strings.Join(out, ",")
}

// once brings the lab up with the run's epoch lead in the future, runs it and tears it
// down.
func (r *runState) once(ctx context.Context, lead time.Duration) (run *results.Run, err error) {
	t0 := time.Now()
	epoch := afpacket.MonotonicNow() + lead.Nanoseconds()
	if pt := r.b.Part; pt != nil {
		epoch = pt.Epoch
	}
	eventsPath := filepath.Join(r.out, "events.json")
	if err := writeJSON(eventsPath, r.events); err != nil {
		return nil, fmt.Errorf("netns: events: %w", err)
	}
	uo := r.b.Lab
	if r.opts.Shards > 0 {
		uo.Shards = r.opts.Shards
	}
	uo.Unplaced = uo.Unplaced || r.opts.Unplaced
	uo.SwitchdArgs = append(append(append([]string(nil), uo.SwitchdArgs...), r.opts.SwitchdArgs...),
		"--run-epoch", strconv.FormatInt(epoch, 10),
		"--samples", filepath.Join(r.out, "{node}.samples.json"),
		"--sample-interval", time.Duration(r.sc.SampleInterval).String(),
		"--edges", durations(r.sc.WindowEdges()),
		"--events", eventsPath)
	if pt := r.b.Part; pt != nil {
		uo.Slice, uo.Epoch, uo.WireEpoch = pt.Slice, epoch, pt.WireEpoch
	}
	uo.Progress = r.opts.Setup
	for _, s := range r.p.Switches { // stale samples from an earlier attempt
		os.Remove(filepath.Join(r.out, s.Config.Name+".samples.json"))
	}
	lab, err := r.b.Lifecycle.up(ctx, r.p, uo)
	if err != nil {
		return nil, err
	}
	var procs []*hostProc
	defer func() {
		for _, hp := range procs {
			if hp.cmd.Process != nil {
				_ = hp.cmd.Process.Kill()
				<-hp.done
			}
		}
		r.keepSwitchLogs(lab)
		if derr := r.b.Lifecycle.down(context.WithoutCancel(ctx), lab.Name); derr != nil {
			err = errors.Join(err, fmt.Errorf("netns: down: %w", derr))
		}
	}()

	var caps []*captureProc
	defer func() {
		for _, c := range caps {
			if cerr := c.stop(); cerr != nil {
				r.log.Warn("capture", "target", c.target, "err", cerr)
			}
		}
	}()
	for _, target := range r.opts.Capture {
		c, err := r.startCapture(ctx, lab, target)
		if err != nil {
			return nil, err
		}
		caps = append(caps, c)
	}

	procs, err = r.startHosts(lab, epoch)
	if err != nil {
		return nil, err
	}
	if left := time.Duration(epoch - afpacket.MonotonicNow()); left < 10*time.Millisecond {
		return nil, fmt.Errorf("%w (lead %v, %v short)", errLate, lead, -left)
	}
	r.log.Debug("lab ready", "lab", lab.Name, "elapsed", time.Since(t0), "starts in", time.Duration(epoch-afpacket.MonotonicNow()))

	// Wait for the host daemons to finish (they stop at the run's duration on their
	// own), reporting progress; Ctrl-C stops them early.
	var runErr error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	limit := time.Now().Add(time.Duration(epoch-afpacket.MonotonicNow()) + time.Duration(r.sc.Duration) + 30*time.Second)
	stopped := false
	for !allDone(procs) {
		select {
		case <-ctx.Done():
			if !stopped {
				runErr = ctx.Err()
				stopAll(procs)
				stopped = true
			}
		case <-tick.C:
		}
		if r.opts.Progress != nil {
			reached := min(max(units.Time(afpacket.MonotonicNow()-epoch), 0), r.sc.Duration)
			r.opts.Progress(reached, r.sc.Duration)
		}
		if time.Now().After(limit) && !stopped {
			runErr = fmt.Errorf("netns: host daemons still running %v after the run's end", 30*time.Second)
			stopAll(procs)
			stopped = true
		}
	}
	wall := units.Time(afpacket.MonotonicNow() - epoch)

	// Switches: SIGTERM, wait for their samples.
	swErr := r.stopSwitches(lab)
	run = &results.Run{Backend: r.b.Lifecycle.name(), Scenario: r.sc.Name, Duration: min(max(wall, 0), r.sc.Duration),
		WallTime: units.Time(time.Since(t0))}
	aerr := r.assemble(run, procs)
	if r.opts.Progress != nil {
		r.opts.Progress(run.Duration, r.sc.Duration)
	}
	return run, errors.Join(runErr, aerr, swErr)
}

func allDone(procs []*hostProc) bool {
	for _, p := range procs {
		select {
		case <-p.done:
		default:
			return false
		}
	}
	return true
}

func stopAll(procs []*hostProc) {
	for _, p := range procs {
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
}

// hostGroups splits the run's hosts among host daemons: with the switches in shards,
// one daemon per shard runs the hosts whose ToR is in it; otherwise (a lab without a
// partition, as on Docker) one daemon per host. Each group is named after its shard
// (hosts1 for shard1's hosts), so the parts of a run across machines name theirs apart.
func (r *runState) hostGroups(lab *Lab) (groups [][]string, names []string) {
	if len(lab.Partition.Shards) == 0 {
		for _, h := range r.hosts {
			groups = append(groups, []string{h})
			names = append(names, h)
		}
		return groups, names
	}
	byShard := make([][]string, len(lab.Partition.Shards))
	for _, h := range r.hosts {
		k := 0
		if hp, ok := r.p.HostByName(h); ok {
			l := r.p.Links[hp.Link]
			tor := l.A
			if tor.IsHost {
				tor = l.B
			}
			if i := switchIndex(r.p, tor.Node); i >= 0 {
				k = lab.Partition.Of[i]
			}
		}
		byShard[k] = append(byShard[k], h)
	}
	for k, g := range byShard {
		switch {
		case len(g) == 1:
			groups, names = append(groups, g), append(names, g[0])
		case len(g) > 1:
			groups, names = append(groups, g), append(names, fmt.Sprintf("hosts%d", k+1))
		}
	}
	return groups, names
}

// startHosts writes each host daemon's group file and starts it in its first host's
// namespace, then waits until every one has its interfaces open.
func (r *runState) startHosts(lab *Lab, epoch int64) ([]*hostProc, error) {
	var (
		procs []*hostProc
		ready []*os.File
	)
	defer func() {
		for _, f := range ready {
			f.Close()
		}
	}()
	groups, names := r.hostGroups(lab)
	for gi, group := range groups {
		name := names[gi]
		hp := &hostProc{name: name, hosts: group, done: make(chan struct{})}
		var members []daemon.Member
		for _, h := range group {
			out := filepath.Join(r.out, h+".out.json")
			os.Remove(out)
			hp.outs = append(hp.outs, out)
			members = append(members, daemon.Member{Job: r.jobs[h], Netns: filepath.Join(NetnsDir, lab.NS(h)), Out: out})
		}
		groupPath := filepath.Join(r.out, name+".group.json")
		if err := writeJSON(groupPath, members); err != nil {
			return procs, fmt.Errorf("netns: host daemon %s: %w", name, err)
		}
		logf, err := os.Create(filepath.Join(r.out, name+".hostd.log"))
		if err != nil {
			return procs, fmt.Errorf("netns: host daemon %s log: %w", name, err)
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			logf.Close()
			return procs, fmt.Errorf("netns: host daemon %s: %w", name, err)
		}
		cmd := exec.Command(r.hostd, append([]string{"--group", groupPath, "--epoch", strconv.FormatInt(epoch, 10), "--ready-fd", "3"}, lab.wireArgs()...)...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.ExtraFiles = []*os.File{pw}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		cmd.Dir = r.out
		fd, err := openNamed(lab.NS(group[0]))
		if err == nil {
			err = startOn(fd, lab.State.HostCPUs, cmd.Start)
			syscallClose(fd)
		}
		pw.Close()
		logf.Close()
		if err != nil {
			pr.Close()
			return procs, fmt.Errorf("netns: start hostd for %s: %w", name, err)
		}
		hp.cmd = cmd
		go func() { hp.err = cmd.Wait(); close(hp.done) }()
		procs = append(procs, hp)
		ready = append(ready, pr)
	}
	deadline := time.Now().Add(20 * time.Second)
	for i, f := range ready {
		_ = f.SetReadDeadline(deadline)
		var b [1]byte
		if _, err := io.ReadFull(f, b[:]); err != nil {
			return procs, fmt.Errorf("netns: hostd %s did not come up (%v); its log says:\n%s", procs[i].name, err,
				tail(filepath.Join(r.out, procs[i].name+".hostd.log")))
		}
	}
	return procs, nil
}

// stopSwitches sends SIGTERM to every switch daemon and waits (up to 10 s) until each
// has written its switches' samples files and exited. A daemon that was already gone
// (it died or was killed during the run) is named, with its switches, at once.
func (r *runState) stopSwitches(lab *Lab) error {
	type daemon struct {
		pid   int
		name  string
		nodes []string
		dead  bool
	}
	var (
		ds    []*daemon
		byPid = map[int]*daemon{}
	)
	for _, d := range lab.State.Daemons {
		x, ok := byPid[d.Pid]
		if !ok {
			name := d.Shard
			if name == "" {
				name = d.Node
			}
			x = &daemon{pid: d.Pid, name: name, dead: syscall.Kill(d.Pid, 0) != nil}
			byPid[d.Pid] = x
			ds = append(ds, x)
		}
		x.nodes = append(x.nodes, d.Node)
	}
	for _, x := range ds {
		if !x.dead {
			_ = syscall.Kill(x.pid, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	var errs []error
	for _, x := range ds {
		if x.dead {
			errs = append(errs, fmt.Errorf("netns: switchd %s (switches %s) died during the run; their ports have no samples",
				x.name, strings.Join(x.nodes, ", ")))
			continue
		}
		for _, node := range x.nodes {
			path := filepath.Join(r.out, node+".samples.json")
			for {
				_, serr := os.Stat(path)
				gone := syscall.Kill(x.pid, 0) != nil
				if serr == nil && gone {
					break
				}
				if time.Now().After(deadline) || (gone && serr != nil) {
					errs = append(errs, fmt.Errorf("netns: switchd %s did not write %s and exit within 10s", x.name, path))
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	return errors.Join(errs...)
}

// keepSwitchLogs copies the switch daemons' logs (one per shard) into the results
// directory before Down removes the lab's directory.
func (r *runState) keepSwitchLogs(lab *Lab) {
	kept := map[string]bool{}
	for _, d := range lab.State.Daemons {
		name := d.Node
		if d.Shard != "" {
			name = d.Shard
		}
		if kept[name] {
			continue
		}
		kept[name] = true
		if b, err := os.ReadFile(d.Log); err == nil {
			_ = os.WriteFile(filepath.Join(r.out, name+".switchd.log"), b, 0o644)
		}
	}
}

// assemble fills run from the host outputs and switch samples: flows in scenario order,
// ports in plan order.
func (r *runState) assemble(run *results.Run, procs []*hostProc) error {
	var errs []error
	flows := map[uint32]results.Flow{}
	hosts := map[string]results.Host{}
	for _, hp := range procs {
		for k, host := range hp.hosts {
			b, err := os.ReadFile(hp.outs[k])
			if err != nil {
				errs = append(errs, fmt.Errorf("netns: hostd %s wrote no output for %s (%v); its log says:\n%s", hp.name, host, hp.err,
					tail(filepath.Join(r.out, hp.name+".hostd.log"))))
				continue
			}
			var o daemon.Output
			if err := json.Unmarshal(b, &o); err != nil {
				errs = append(errs, fmt.Errorf("netns: hostd %s output: %w", host, err))
				continue
			}
			for _, f := range o.Flows {
				flows[f.ID] = f
			}
			var lost int64 // at the host's NIC, outside the model
			for _, p := range o.Driver.Ports {
				lost += int64(p.Lost())
			}
			rate := r.jobs[host].Host.Rate
			hosts[host] = results.Host{Name: host, Rate: rate, Lateness: o.Lateness, Skew: o.Skew,
				StaleTimers: int64(o.Stats.StaleTimers), Stalled: o.Driver.ResumedTime, Lost: lost}
		}
	}
	for _, h := range r.hosts { // plan order, whatever daemon ran them
		if hr, ok := hosts[h]; ok {
			run.Hosts = append(run.Hosts, hr)
		}
	}
	for _, f := range r.sc.Flows {
		rf, ok := flows[f.ID]
		if !ok {
			rf = results.Flow{ID: f.ID, Name: f.Name, Group: f.Group, Src: f.Src, Dst: f.Dst, CC: f.CC, Size: f.Size, Start: f.Start}
		}
		run.Flows = append(run.Flows, rf)
	}
	for _, sp := range r.p.Switches {
		name := sp.Config.Name
		if !r.b.part().Has(name) {
			continue // another machine's
		}
		var s shard.Samples
		b, err := os.ReadFile(filepath.Join(r.out, name+".samples.json"))
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil || len(s.Ports) != len(sp.Config.Ports) {
			if err == nil {
				err = fmt.Errorf("%d ports, want %d", len(s.Ports), len(sp.Config.Ports))
			}
			errs = append(errs, fmt.Errorf("netns: switch %s samples: %w", name, err))
			for i, pc := range sp.Config.Ports {
				run.Ports = append(run.Ports, results.Port{Switch: name, Port: i, Name: pc.Name, Peer: pc.Peer, Rate: pc.Rate})
			}
			continue
		}
		run.Ports = append(run.Ports, s.Ports...)
	}
	return errors.Join(errs...)
}

// tail returns the last 2000 bytes of a file.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
