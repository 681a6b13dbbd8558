package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"reef/emulator"
	"reef/emulator/docker"
	"reef/emulator/netns"
	"reef/emulator/plan"
)

// ReadyFile is where a machine's agent says its part of the lab is up (AgentReady), in
// its container.
func ReadyFile(lab string) string { return filepath.Join(netns.DefaultRunDir, lab, "agent.json") }

// AgentReady is what an agent reports once its part of the lab is up.
type AgentReady struct {
	Machine string `json:"machine"`
	// Clocks are the agent's measurements of its peers' clocks and the underlay.
	Clocks []ClockSample `json:"clocks,omitempty"`
	// Warnings are what the agent found wrong without refusing the lab (a cut link
	// shorter than the tunnel, on a lab brought up without a run).
	Warnings []string `json:"warnings,omitempty"`
}

// lab is a Swarm lab being brought up or run: the placement and the controller's
// clients.
type lab struct {
	p       *plan.Plan // with the cut links' delays moved to ingress (CutDelays)
	pl      *Placement
	mgr     *docker.Client
	engines []*docker.Client // by machine index
	marker  Marker
	dir     string
	ready   []AgentReady // by machine index, once started
	// downSince is when the manager first reported each machine's node not ready
	// (while a run waits for its parts).
	downSince map[int]time.Time
}

// Up brings p up across the Swarm's machines and leaves it up; see the package doc. On
// any error it removes everything it made.
func Up(ctx context.Context, p *plan.Plan, o Options) (*Marker, error) {
	l, err := place(ctx, p, o)
	if err != nil {
		return nil, err
	}
	if err := l.start(ctx, o, time.Now().UnixNano(), nil); err != nil {
		return nil, err
	}
	return &l.marker, nil
}

// place finds the machines, places p on them and checks every machine can run it.
func place(ctx context.Context, p *plan.Plan, o Options) (*lab, error) {
	if err := netns.CheckPlan(p); err != nil {
		return nil, err
	}
	mgrAddr := managerAddr(o.Manager)
	mgr, err := docker.NewClientAt(mgrAddr)
	if err != nil {
		return nil, err
	}
	ms, err := Machines(ctx, mgr)
	if err != nil {
		return nil, err
	}
	pl, err := Place(p, ms, o.Place)
	if err != nil {
		return nil, err
	}
	for m := range o.ClockOffsets {
		if !hasMachine(pl.Machines, m) {
			return nil, fmt.Errorf("swarm: clock offset for %s: the lab has no part on machine %q (machines used: %s)", m, m, names(pl.Machines))
		}
	}
	// Each switch's config is changed for the cut links: work on a copy.
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("swarm: %w", err)
	}
	var cp plan.Plan
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("swarm: %w", err)
	}
	CutDelays(&cp, pl)
	l := &lab{p: &cp, pl: pl, mgr: mgr, dir: filepath.Join(netns.DefaultRunDir, p.Lab)}
	for _, m := range pl.Machines {
		ec, err := docker.NewClientAt(m.Engine)
		if err != nil {
			return nil, fmt.Errorf("swarm: machine %s: %w", m.Name, err)
		}
		if err := ec.Ping(ctx); err != nil {
			return nil, fmt.Errorf("swarm: machine %s: its engine (%s) does not answer: %w", m.Name, m.Engine, err)
		}
		ok, err := ec.ImageExists(ctx, docker.AgentImage)
		if err != nil {
			return nil, fmt.Errorf("swarm: machine %s: %w", m.Name, err)
		}
		if !ok {
			return nil, fmt.Errorf("swarm: machine %s has no %s image (no registry is used): run reef image build --swarm", m.Name, docker.AgentImage)
		}
		l.engines = append(l.engines, ec)
	}
	l.marker = Marker{Lab: p.Lab, Manager: mgrAddr, Machines: pl.Machines, Node: pl.Node, Placement: describe(p, pl)}
	return l, nil
}

func hasMachine(ms []Machine, name string) bool {
	for _, m := range ms {
		if m.Name == name {
			return true
		}
	}
	return false
}

// start writes the controller's record of the lab, creates one config and one service
// per machine, and waits until every machine's agent reports its part up (with run,
// each machine's part of that run). On error it removes what it made.
//
// start is the lab's time zero (CLOCK_REALTIME ns).
func (l *lab) start(ctx context.Context, o Options, start int64, run func(mi int) *RunSpec) (err error) {
	p := l.p
	if _, err := os.Stat(filepath.Join(l.dir, "state.json")); err == nil {
		return fmt.Errorf("swarm: lab %q is already up (reef down %s)", p.Lab, p.Lab)
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return fmt.Errorf("swarm: %w", err)
	}
	st := netns.State{Lab: p.Lab, Backend: BackendName, Created: time.Now().UTC(), Topology: o.Topology, Shards: netns.ShardStates(p, &l.pl.Partition)}
	for _, h := range p.Hosts {
		st.Namespaces = append(st.Namespaces, netns.NodeNS{Node: h.Config.Name, NS: netns.NSName(p.Lab, h.Config.Name)})
	}
	for _, s := range p.Switches {
		st.Namespaces = append(st.Namespaces, netns.NodeNS{Node: s.Config.Name, NS: netns.NSName(p.Lab, s.Config.Name), Switch: true})
	}
	if err := netns.WriteJSON(filepath.Join(l.dir, MarkerFile), &l.marker); err != nil {
		return fmt.Errorf("swarm: %w", err)
	}
	if err := netns.WriteState(l.dir, &st); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if derr := Down(context.WithoutCancel(ctx), p.Lab); derr != nil {
				err = errors.Join(err, fmt.Errorf("swarm: cleanup after failed up: %w", derr))
			}
		}
	}()
	count := emulator.NewUpCounter(o.Progress)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	services := make([]string, len(l.pl.Machines))
	err = netns.Parallel(ctx, len(l.pl.Machines), len(l.pl.Machines), count.Count("machines", len(l.pl.Machines), func(mi int) error {
		m := l.pl.Machines[mi]
		spec := Spec{Lab: p.Lab, Machine: m.Name, Addr: m.Addr, Start: start, Plan: p, Slice: l.pl.Slice(p, mi), Topology: o.Topology,
			SwitchdArgs: o.SwitchdArgs, ClockOffset: o.ClockOffsets[m.Name]}
		for mj, peer := range l.pl.Machines {
			if mj != mi {
				spec.Peers = append(spec.Peers, Peer{Name: peer.Name, Addr: peer.Addr})
			}
		}
		if run != nil {
			spec.Run = run(mi)
		}
		data, err := json.Marshal(&spec)
		if err != nil {
			return fmt.Errorf("swarm: %w", err)
		}
		labels := map[string]string{LabelLab: p.Lab, LabelRole: "machine", LabelMachine: m.Name}
		cfgID, err := l.mgr.CreateConfig(ctx, ServiceName(p.Lab, m.Name)+"-"+stamp, labels, data)
		if err != nil {
			return err
		}
		var s docker.ServiceSpec
		s.Name = ServiceName(p.Lab, m.Name)
		s.Labels = labels
		s.Mode.Replicated.Replicas = 1
		t := &s.TaskTemplate
		t.ContainerSpec.Image = docker.AgentImage
		t.ContainerSpec.Args = []string{"agent", "--spec", SpecPath}
		t.ContainerSpec.Labels = labels
		t.ContainerSpec.Hostname = m.Name
		// What the agent does needs: namespaces and mounts (SYS_ADMIN), links and
		// addresses (NET_ADMIN), packet sockets (NET_RAW), real-time priority where
		// the engine grants it (SYS_NICE), renicing its daemons' threads. A service
		// cannot be privileged, and need not be.
		t.ContainerSpec.CapabilityAdd = []string{"CAP_NET_ADMIN", "CAP_SYS_ADMIN", "CAP_NET_RAW", "CAP_SYS_NICE", "CAP_IPC_LOCK"}
		t.ContainerSpec.StopGrace = int64(20 * time.Second)
		t.ContainerSpec.Mounts = []docker.Mount{{Type: "bind", Source: "/sys/fs/cgroup", Target: HostCgroup}}
		var ref docker.ConfigRef
		ref.File.Name, ref.File.UID, ref.File.GID, ref.File.Mode = SpecPath, "0", "0", 0o444
		ref.ConfigID, ref.ConfigName = cfgID, ServiceName(p.Lab, m.Name)+"-"+stamp
		t.ContainerSpec.Configs = []docker.ConfigRef{ref}
		// A lost machine is a fault to report, not to hide: never restart.
		t.RestartPolicy.Condition = "none"
		t.Placement.Constraints = []string{"node.labels." + LabelMachine + "==" + m.Name}
		t.Networks = append(t.Networks, struct {
			Target string `json:"Target"`
		}{"host"})
		id, err := l.mgr.CreateService(ctx, &s)
		if err != nil {
			return err
		}
		services[mi] = id
		return nil
	}))
	l.marker.Services = services
	_ = netns.WriteJSON(filepath.Join(l.dir, MarkerFile), &l.marker)
	if err != nil {
		return err
	}
	timeout := o.ReadyTimeout
	if timeout <= 0 {
		timeout = 60*time.Second + time.Duration(len(p.Hosts)+len(p.Switches))*200*time.Millisecond
	}
	ready := make([]AgentReady, len(l.pl.Machines))
	// The first machine that fails ends the wait for the others: its error is the
	// lab's.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err = netns.Parallel(ctx, len(l.pl.Machines), len(l.pl.Machines), count.Count("machines ready", len(l.pl.Machines), func(mi int) error {
		r, err := l.waitReady(wctx, mi, time.Now().Add(timeout))
		ready[mi] = r
		if err != nil && wctx.Err() != nil && ctx.Err() == nil {
			return nil // another machine failed first
		}
		if err != nil {
			cancel()
		}
		return err
	}))
	if err != nil {
		return err
	}
	l.ready = ready
	for _, r := range ready {
		l.marker.Warnings = append(l.marker.Warnings, r.Warnings...)
	}
	if err := netns.WriteJSON(filepath.Join(l.dir, MarkerFile), &l.marker); err != nil {
		return fmt.Errorf("swarm: %w", err)
	}
	st.Ready = true
	return netns.WriteState(l.dir, &st)
}

// container returns the id of machine mi's task container, or an error that says why
// there is none (with the task's error and the container's log when it failed).
func (l *lab) container(ctx context.Context, mi int) (id string, running bool, err error) {
	m := l.pl.Machines[mi]
	tasks, err := l.mgr.Tasks(ctx, l.marker.Services[mi])
	if err != nil {
		return "", false, err
	}
	for _, t := range tasks {
		cid := t.Status.ContainerStatus.ContainerID
		switch t.Status.State {
		case "running":
			return cid, true, nil
		case "failed", "rejected", "complete", "shutdown", "orphaned":
			msg := t.Status.Err
			if msg == "" {
				msg = t.Status.Message
			}
			var log []byte
			if cid != "" {
				log, _ = l.engines[mi].Logs(ctx, cid)
			}
			return cid, false, fmt.Errorf("swarm: machine %s: its task %s (%s); its log says:\n%s", m.Name, t.Status.State, msg, tail(log))
		}
	}
	return "", false, nil
}

// lostOr returns err, or, when machine mi's engine no longer answers, an error that
// says the machine was lost.
func (l *lab) lostOr(ctx context.Context, mi int, err error) error {
	pctx, cancel := context.WithTimeout(ctx, EngineCallLimit)
	defer cancel()
	if perr := l.engines[mi].Ping(pctx); perr != nil {
		return lostErr(l.pl.Machines[mi].Name, perr)
	}
	return fmt.Errorf("swarm: machine %s: %w", l.pl.Machines[mi].Name, err)
}

// EngineCallLimit bounds each call to a machine's engine where a frozen machine (one
// that takes the call and never answers) must not hold up the rest.
const EngineCallLimit = 5 * time.Second

// bounded calls f with ctx limited to EngineCallLimit.
func bounded(ctx context.Context, f func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, EngineCallLimit)
	defer cancel()
	return f(cctx)
}

// lostErr says machine was lost, and why.
func lostErr(machine string, why error) error {
	return fmt.Errorf("swarm: machine %s was lost (%v); the results of the other machines are kept", machine, why)
}

// waitReady waits until machine mi's agent has written its ready file, and reads it.
func (l *lab) waitReady(ctx context.Context, mi int, deadline time.Time) (AgentReady, error) {
	m := l.pl.Machines[mi]
	for {
		id, running, err := l.container(ctx, mi)
		if err != nil {
			return AgentReady{}, l.lostOr(ctx, mi, err)
		}
		if running {
			var r AgentReady
			var got bool
			err := l.engines[mi].CopyFrom(ctx, id, ReadyFile(l.p.Lab), func(_ string, rd io.Reader) error {
				got = true
				return json.NewDecoder(rd).Decode(&r)
			})
			if err == nil && got {
				return r, nil
			}
			if err != nil && !docker.IsNotFound(errors.Unwrap(err)) && !strings.Contains(err.Error(), "HTTP 404") {
				return AgentReady{}, l.lostOr(ctx, mi, err)
			}
		}
		if time.Now().After(deadline) {
			state := "no task running"
			if running {
				state = "its agent has not reported ready"
			}
			return AgentReady{}, fmt.Errorf("swarm: machine %s: not up after the wait (%s)", m.Name, state)
		}
		select {
		case <-ctx.Done():
			return AgentReady{}, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func tail(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return strings.TrimRight(string(b), "\n")
}

// Down removes lab from every machine: its services and configs (the engines then
// stop the tasks, and with each task's container everything the lab had on that
// machine), then waits until no container of the lab is left on any machine. A machine
// that cannot be reached is named and the controller's record kept, so `reef down`
// finishes the job when the machine is back.
func Down(ctx context.Context, labName string) error {
	m, err := ReadMarker(labName)
	if err != nil {
		return fmt.Errorf("swarm: no lab %q is up: %w", labName, err)
	}
	mgr, err := docker.NewClientAt(m.Manager)
	if err != nil {
		return err
	}
	var errs []error
	services, err := mgr.Services(ctx, LabelLab+"="+labName)
	if err != nil {
		errs = append(errs, err)
	}
	for _, s := range services {
		if s.Spec.Labels[LabelLab] != labName {
			continue
		}
		if err := mgr.RemoveService(ctx, s.ID); err != nil {
			errs = append(errs, err)
		}
	}
	// Each machine's containers of the lab go when their engine stops the task. A
	// machine the manager cannot tell (its underlay cut) keeps its container: after
	// 15 s its own engine removes it. A container of a machine nobody reaches stays
	// until that machine is back. A frozen machine's engine takes calls and never
	// answers: each call to a machine's engine is bounded, so that one machine cannot
	// hold up the others.
	deadline := time.Now().Add(15 * time.Second)
	for _, mc := range m.Machines {
		ec, err := docker.NewClientAt(mc.Engine)
		if err == nil {
			err = bounded(ctx, ec.Ping)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("swarm: machine %s cannot be reached (%v): its part of lab %s stays until it is back; run reef down %s again then", mc.Name, err, labName, labName))
			continue
		}
		for {
			var left []docker.ContainerSummary
			err := bounded(ctx, func(ctx context.Context) (err error) {
				left, err = ec.List(ctx, LabelLab+"="+labName)
				return err
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("swarm: machine %s: %w", mc.Name, err))
				break
			}
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				for _, ct := range left {
					if ct.Labels[LabelLab] == labName {
						if err := bounded(ctx, func(ctx context.Context) error { return ec.Remove(ctx, ct.ID) }); err != nil {
							errs = append(errs, fmt.Errorf("swarm: machine %s: %w", mc.Name, err))
						}
					}
				}
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// Configs last: the engine refuses to remove one a service still uses.
	cfgs, err := mgr.Configs(ctx, LabelLab+"="+labName)
	if err != nil {
		errs = append(errs, err)
	}
	for _, id := range cfgs {
		if err := mgr.RemoveConfig(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(filepath.Join(netns.DefaultRunDir, labName)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Exec runs argv in node of a Swarm lab: in the task container of the node's machine,
// through that machine's engine, inside the node's namespace (reef nsexec), with
// stdio attached. A non-zero exit comes back as an *emulator.ExitError.
func Exec(ctx context.Context, labName, node string, argv []string, stdio emulator.Stdio) error {
	if len(argv) == 0 {
		return errors.New("swarm: exec: no command")
	}
	return onMachineOf(ctx, labName, node, append([]string{"/reef/reef", "nsexec", netns.NSName(labName, node), "--"}, argv...), stdio)
}

// onMachineOf runs argv in the task container of node's machine, through that
// machine's engine, with stdio attached; a non-zero exit comes back as an
// *emulator.ExitError.
func onMachineOf(ctx context.Context, labName, node string, argv []string, stdio emulator.Stdio) error {
	m, err := ReadMarker(labName)
	if err != nil {
		return err
	}
	mi, ok := m.Node[node]
	if !ok {
		var nodes []string
		for n := range m.Node {
			nodes = append(nodes, n)
		}
		return fmt.Errorf("swarm: lab %q has no node %q; nodes: %s", labName, node, strings.Join(slices.Sorted(slices.Values(nodes)), " "))
	}
	mc := m.Machines[mi]
	ec, err := docker.NewClientAt(mc.Engine)
	if err != nil {
		return err
	}
	id, err := runningContainer(ctx, ec, labName, mc.Name)
	if err != nil {
		return err
	}
	code, err := ec.ExecAttached(ctx, id, argv, stdio.In, stdio.Out, stdio.Err)
	if err != nil {
		return fmt.Errorf("swarm: exec for %s on machine %s: %w", node, mc.Name, err)
	}
	if code != 0 {
		return &emulator.ExitError{Code: code}
	}
	return nil
}

// runningContainer is lab's running task container on machine's engine ec.
func runningContainer(ctx context.Context, ec *docker.Client, labName, machine string) (string, error) {
	list, err := ec.List(ctx, LabelLab+"="+labName)
	if err != nil {
		return "", err
	}
	for _, ct := range list {
		if ct.State == "running" && ct.Labels[LabelLab] == labName {
			return ct.ID, nil
		}
	}
	return "", fmt.Errorf("swarm: lab %q has no running container on machine %s (is the machine up? reef ls)", labName, machine)
}

// Capture writes a pcapng capture of target (NODE or NODE:PORT, as reef capture takes)
// of a Swarm lab to w: reef capture runs in the task container of the node's machine
// and streams its file back through that machine's engine. d bounds it (0: until ctx
// ends).
func Capture(ctx context.Context, labName, target string, d time.Duration, w io.Writer, errw io.Writer) error {
	node, _, _ := strings.Cut(target, ":")
	args := []string{"capture", target, "-o", "/dev/stdout"}
	if d > 0 {
		args = append(args, "--duration", d.String())
	}
	return Delegate(ctx, labName, node, args, emulator.Stdio{Out: w, Err: errw})
}

// Delegate runs `reef ARGS --lab LAB` in the task container of node's machine, with
// stdio attached: the commands that read what a machine's part of the lab keeps there
// (reef capture, reef stats) run where it is.
func Delegate(ctx context.Context, labName, node string, args []string, stdio emulator.Stdio) error {
	return onMachineOf(ctx, labName, node, append(append([]string{"/reef/reef"}, args...), "--lab", labName), stdio)
}
