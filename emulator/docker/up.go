package docker

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
	"sync"
	"syscall"
	"time"

	"reef/afpacket"
	"reef/emulator"
	"reef/emulator/netns"
	"reef/emulator/plan"
	"reef/internal/cpuset"
)

// Labels every container of a lab carries; Down finds a lab's containers by LabelLab.
const (
	LabelLab  = "reef.lab"
	LabelNode = "reef.node"
	LabelRole = "reef.role" // "host" or "switch"
)

// MarkerFile in a lab's directory says the lab is a Docker lab (and lists its
// containers, names only: Down goes by label).
const MarkerFile = "docker.json"

// Options tune Up.
type Options struct {
	// Options are the netns knobs that apply (Topology, Workers, ReadyTimeout,
	// RingFrames, SwitchdArgs, Log); Switchd is ignored (the switchd image runs).
	netns.Options
	// HostImage is the image of every host without an entry in Images (default
	// HostdImage). Any image works: reef mounts its static daemons at /reef and runs
	// /reef/reefpause as the container's first process.
	HostImage string
	// Images maps host names to their image.
	Images map[string]string
	// SwitchImage is the switches' image (default SwitchdImage).
	SwitchImage string
}

// Marker is the content of MarkerFile.
type Marker struct {
	Lab        string   `json:"lab"`
	Containers []string `json:"containers"`
}

// ContainerName is the container of node in lab.
func ContainerName(lab, node string) string { return "reef-" + lab + "-" + node }

// IsLab reports whether lab is up (or half up) on Docker.
func IsLab(lab string) bool {
	_, err := os.Stat(filepath.Join(netns.DefaultRunDir, lab, MarkerFile))
	return err == nil
}

// Up brings p up on Docker: one container per host (its image, network mode none) and
// per switch (switchd started inside it, see startSwitches), veth pairs created by the controller directly inside the containers'
// namespaces, and the same addresses, routes, neighbours, offloads and tbf as netns.Up.
// Each container's namespace is also mounted as reef-<lab>-<node> under /run/netns, so
// netns.Exec, netns.Capture and the run logic work on Docker labs unchanged. On any
// error it removes everything it made.
func Up(ctx context.Context, p *plan.Plan, o Options) (lab *netns.Lab, err error) {
	if err := netns.CheckPlan(p); err != nil {
		return nil, err
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 30 * time.Second
	}
	if o.HostImage == "" {
		o.HostImage = HostdImage
	}
	if o.SwitchImage == "" {
		o.SwitchImage = SwitchdImage
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	t0 := time.Now()
	c, err := NewClient()
	if err != nil {
		return nil, err
	}
	if err := c.Ping(ctx); err != nil {
		return nil, err
	}
	bins, err := StaticBinaries()
	if err != nil {
		return nil, err
	}
	if err := ensureImages(ctx, c, p, o, log); err != nil {
		return nil, err
	}
	dir := filepath.Join(netns.DefaultRunDir, p.Lab)
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err == nil {
		return nil, fmt.Errorf("docker: lab %q is already up (reef down %s)", p.Lab, p.Lab)
	}
	if left, err := c.List(ctx, LabelLab+"="+p.Lab); err == nil && len(left) > 0 {
		return nil, fmt.Errorf("docker: lab %q still has %d containers (reef down %s)", p.Lab, len(left), p.Lab)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	netns.Tune()

	// Intent log first: the marker (with every container name) and netns's state (every
	// namespace mount name), before anything carrying those names exists.
	mk := Marker{Lab: p.Lab}
	shards := o.Shards
	if shards <= 0 {
		shards = netns.DefaultShards()
	}
	part := p.Partition(shards)
	st := netns.State{Lab: p.Lab, Backend: BackendName, Created: time.Now().UTC(), Epoch: afpacket.MonotonicNow(), Topology: o.Topology,
		Shards: netns.ShardStates(p, &part)}
	for _, h := range p.Hosts {
		n := h.Config.Name
		mk.Containers = append(mk.Containers, ContainerName(p.Lab, n))
		st.Namespaces = append(st.Namespaces, netns.NodeNS{Node: n, NS: netns.NSName(p.Lab, n)})
		st.EtcDirs = append(st.EtcDirs, filepath.Join(netns.DefaultEtcDir, netns.NSName(p.Lab, n)))
	}
	for _, s := range p.Switches {
		n := s.Config.Name
		mk.Containers = append(mk.Containers, ContainerName(p.Lab, n))
		st.Namespaces = append(st.Namespaces, netns.NodeNS{Node: n, NS: netns.NSName(p.Lab, n), Switch: true})
	}
	// as on netns: a CPU for each shard, the rest for the host containers
	if err := netns.PlaceCPUs(&st, o.Unplaced); err != nil {
		return nil, err
	}
	if err := netns.WriteJSON(filepath.Join(dir, MarkerFile), &mk); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("docker: %w", err)
	}
	if err := netns.WriteState(dir, &st); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	lab = &netns.Lab{Name: p.Lab, Dir: dir, Epoch: st.Epoch, Plan: p, Partition: part}
	handles := map[string]*netns.NS{}
	pids := map[string]int{} // switch → its container's first process
	var hmu sync.Mutex
	defer func() {
		for _, h := range handles {
			h.Close()
		}
		if err != nil {
			if derr := Down(context.WithoutCancel(ctx), p.Lab); derr != nil {
				err = errors.Join(err, fmt.Errorf("docker: cleanup after failed up: %w", derr))
			}
			lab = nil
		}
	}()

	// Containers, in parallel: create, start, adopt the namespace.
	var extraHosts []string
	for _, h := range p.Hosts {
		extraHosts = append(extraHosts, h.Config.Name+":"+h.Config.Addr.String())
	}
	type node struct {
		name, image string
		sw          bool
	}
	var nodes []node
	for _, h := range p.Hosts {
		img := o.HostImage
		if im, ok := o.Images[h.Config.Name]; ok {
			img = im
		}
		nodes = append(nodes, node{h.Config.Name, img, false})
	}
	for _, s := range p.Switches {
		nodes = append(nodes, node{s.Config.Name, o.SwitchImage, true})
	}
	// Switch containers see the lab directory and the files a run hands switchd
	// (samples, events) at the same paths as the controller.
	switchBinds := []string{dir + ":" + dir}
	seen := map[string]bool{dir: true}
	for _, a := range o.SwitchdArgs {
		if filepath.IsAbs(a) && !seen[filepath.Dir(a)] {
			seen[filepath.Dir(a)] = true
			switchBinds = append(switchBinds, filepath.Dir(a)+":"+filepath.Dir(a))
		}
	}
	count := emulator.NewUpCounter(o.Progress)
	err = netns.Parallel(ctx, len(nodes), o.Workers, count.Count("nodes", len(nodes), func(i int) error {
		n := nodes[i]
		role := "host"
		if n.sw {
			role = "switch"
		}
		binds := []string{bins + ":/reef:ro"}
		if n.sw {
			binds = append(binds, switchBinds...)
		}
		cfg := &ContainerConfig{
			Image:      n.image,
			Entrypoint: []string{"/reef/reefpause"},
			Hostname:   n.name,
			Labels:     map[string]string{LabelLab: p.Lab, LabelNode: n.name, LabelRole: role},
			HostConfig: HostConfig{
				NetworkMode: "none",
				Binds:       binds,
				CapAdd:      []string{"NET_ADMIN", "NET_RAW"},
				Sysctls:     map[string]string{"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"},
				ExtraHosts:  extraHosts,
			},
		}
		if !n.sw && len(st.HostCPUs) > 0 {
			cfg.HostConfig.CpusetCpus = cpuset.List(st.HostCPUs)
		}
		cfg.HostConfig.RestartPolicy.Name = "no"
		id, err := c.Create(ctx, ContainerName(p.Lab, n.name), cfg)
		if err != nil {
			return err
		}
		if err := c.Start(ctx, id); err != nil {
			return err
		}
		pid, err := c.waitRunning(ctx, id)
		if err != nil {
			return err
		}
		h, err := netns.AdoptPid(netns.NSName(p.Lab, n.name), pid)
		if err != nil {
			return err
		}
		hmu.Lock()
		handles[n.name] = h
		pids[n.name] = pid
		hmu.Unlock()
		return nil
	}))
	if err != nil {
		return nil, err
	}
	log.Debug("containers up", "lab", p.Lab, "n", len(nodes), "elapsed", time.Since(t0))

	err = netns.Parallel(ctx, len(p.Links), o.Workers, count.Count("links", len(p.Links), func(i int) error {
		l := &p.Links[i]
		if netns.InMemory(l, p, &part) {
			return nil // carried by the shard's switchd
		}
		a, b := handles[l.A.Node], handles[l.B.Node]
		if a == nil || b == nil {
			return fmt.Errorf("docker: link %s:%s—%s:%s: unknown node", l.A.Node, l.A.Iface, l.B.Node, l.B.Iface)
		}
		return netns.WireLink(l, a, b)
	}))
	if err != nil {
		return nil, err
	}
	hosts := netns.HostsFile(p)
	err = netns.Parallel(ctx, len(p.Hosts), o.Workers, count.Count("hosts", len(p.Hosts), func(i int) error {
		return netns.SetupHost(p, &p.Hosts[i], handles[p.Hosts[i].Config.Name], hosts, st.HostCPUs)
	}))
	if err != nil {
		return nil, err
	}
	log.Debug("links and hosts up", "lab", p.Lab, "elapsed", time.Since(t0))

	if err := startSwitches(ctx, lab, &st, pids, bins, o, count); err != nil {
		return nil, err
	}
	st.Ready = true
	if err := netns.WriteState(dir, &st); err != nil {
		return nil, err
	}
	lab.State = st
	log.Info("lab up on docker", "lab", p.Lab, "hosts", len(p.Hosts), "switches", len(p.Switches),
		"links", len(p.Links), "shards", len(part.Shards), "elapsed", time.Since(t0).Round(time.Millisecond))
	return lab, nil
}

// ensureImages builds reef's images when a lab needs them and the engine lacks them,
// and checks that every user-named image exists.
func ensureImages(ctx context.Context, c *Client, p *plan.Plan, o Options, log *slog.Logger) error {
	need := map[string]bool{}
	if len(p.Switches) > 0 {
		need[o.SwitchImage] = true
	}
	for _, h := range p.Hosts {
		img := o.HostImage
		if im, ok := o.Images[h.Config.Name]; ok {
			img = im
		}
		need[img] = true
	}
	built := false
	for _, img := range sortedKeys(need) {
		ok, err := c.ImageExists(ctx, img)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if (img == SwitchdImage || img == HostdImage) && !built {
			log.Info("building reef's images", "images", []string{SwitchdImage, HostdImage})
			if _, err := BuildImages(ctx, c, ImageOptions{}); err != nil {
				return err
			}
			built = true
			continue
		}
		if img != SwitchdImage && img != HostdImage {
			return fmt.Errorf("docker: image %s is not in the engine (no registry is used: build or load it first)", img)
		}
	}
	return nil
}

// startSwitches writes each shard's config into the lab directory and starts its
// switchd inside the network, UTS and IPC namespaces of its first switch's container
// (nsenter); the daemon opens every external port in its own switch's namespace (the
// lab's /run/netns mounts). It runs the static build reef mounts at /reef (bins on the
// machine), so it always matches the controller; the image's own /switchd is for
// standalone use. The daemon stays in the controller's cgroups and in the machine's
// mount and PID namespaces, on purpose:
//   - on kernels with RT group scheduling (cgroup v1 cpu.rt_runtime_us) a container's
//     cgroup has no real-time budget, so switchd's SCHED_FIFO datapath thread fell back
//     to normal priority (measured: 18 instead of 91 Mbit/s through two switches at
//     100 Mbit/s on the loaded machine);
//   - inside the container's mount namespace /proc is the container's PID namespace's,
//     where switchd cannot find its own threads to renice them (nice stayed 0, and a
//     Poseidon run lost 12–20% of its victim's goodput against netns).
//
// It reports readiness on an inherited pipe, as on netns.
func startSwitches(ctx context.Context, lab *netns.Lab, st *netns.State, pids map[string]int, bins string, o Options, count *emulator.UpCounter) error {
	type started struct {
		shard string
		ready *os.File
	}
	var waits []started
	defer func() {
		for _, w := range waits {
			w.ready.Close()
		}
	}()
	for k := range lab.Partition.Shards {
		cfg, cfgPath, err := netns.WriteShardConfig(lab, k)
		if err != nil {
			return fmt.Errorf("docker: %w", err)
		}
		name := cfg.Name
		logPath := filepath.Join(lab.Dir, name+".log")
		logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("docker: %s log: %w", name, err)
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			logf.Close()
			return fmt.Errorf("docker: %s: %w", name, err)
		}
		first := cfg.Switches[0].Name
		args := append([]string{"-t", strconv.Itoa(pids[first]), "-u", "-i", "-n", "--", filepath.Join(bins, "switchd")},
			lab.SwitchdArgs(&cfg, cfgPath, o.Options, st.Shards[k].CPUs)...)
		cmd := exec.Command("nsenter", args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.ExtraFiles = []*os.File{pw}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = cmd.Start()
		pw.Close()
		logf.Close()
		if err != nil {
			pr.Close()
			return fmt.Errorf("docker: start switchd %s in %s: %w", name, ContainerName(lab.Name, first), err)
		}
		go cmd.Wait() // reap it if it dies while we live
		waits = append(waits, started{name, pr})
		// nsenter without -p execs the program: its PID is switchd's.
		for _, sc := range cfg.Switches {
			st.Daemons = append(st.Daemons, netns.Daemon{Node: sc.Name, Shard: name, Pid: cmd.Process.Pid, Stats: lab.StatsPath(sc.Name), Log: logPath})
		}
		if err := netns.WriteState(lab.Dir, st); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(o.ReadyTimeout)
	return netns.Parallel(ctx, len(waits), len(waits), count.Count("switch daemons", len(waits), func(i int) error {
		w := waits[i]
		_ = w.ready.SetReadDeadline(deadline)
		var b [1]byte
		if _, err := io.ReadFull(w.ready, b[:]); err != nil {
			tail, _ := os.ReadFile(filepath.Join(lab.Dir, w.shard+".log"))
			return fmt.Errorf("docker: switchd %s did not come up (%v); its log says:\n%s", w.shard, err, tailBytes(tail))
		}
		return nil
	}))
}

// Down removes lab: every container labelled with it, then what netns.Down
// removes (namespace mounts, /etc/netns files, processes started in the lab's
// namespaces, the lab directory). Going by label, it also cleans up after a killed Up;
// it never touches another lab's or anyone else's containers.
func Down(ctx context.Context, lab string) error {
	c, err := NewClient()
	if err != nil {
		return err
	}
	list, err := c.List(ctx, LabelLab+"="+lab)
	if err != nil {
		return err
	}
	_, serr := netns.ReadState(netns.DefaultRunDir, lab)
	if len(list) == 0 && serr != nil {
		return fmt.Errorf("docker: no lab %q is up (no containers labelled %s=%s, no state)", lab, LabelLab, lab)
	}
	var errs []error
	var mu sync.Mutex
	remove := func(list []ContainerSummary) {
		_ = netns.Parallel(ctx, len(list), 8, func(i int) error {
			ct := list[i]
			if ct.Labels[LabelLab] != lab { // the engine filtered; never trust it blindly
				return nil
			}
			if ct.Labels[LabelRole] == "switchd" {
				if logs, err := c.Logs(ctx, ct.ID); err == nil {
					_ = os.WriteFile(filepath.Join(netns.DefaultRunDir, lab, ct.Labels[LabelNode]+".log"), logs, 0o644)
				}
			}
			if err := c.Remove(ctx, ct.ID); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	// A killed Up may have left create requests in flight: the engine finishes them
	// after the controller died, so a container can appear after the first listing.
	// Remove until two listings 300 ms apart come back empty (at most 15 s).
	remove(list)
	for empty, deadline := 0, time.Now().Add(15*time.Second); empty < 2 && time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		more, err := c.List(ctx, LabelLab+"="+lab)
		if err != nil {
			errs = append(errs, err)
			break
		}
		if len(more) == 0 {
			empty++
			continue
		}
		empty = 0
		remove(more)
	}
	if serr == nil {
		if err := netns.Down(ctx, lab); err != nil {
			errs = append(errs, err)
		}
	} else if !strings.Contains(serr.Error(), "no lab") {
		errs = append(errs, serr)
	} else {
		os.RemoveAll(filepath.Join(netns.DefaultRunDir, lab))
	}
	return errors.Join(errs...)
}

// ReadMarker reads a Docker lab's marker file.
func ReadMarker(lab string) (*Marker, error) {
	b, err := os.ReadFile(filepath.Join(netns.DefaultRunDir, lab, MarkerFile))
	if err != nil {
		return nil, fmt.Errorf("docker: lab %q: %w", lab, err)
	}
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("docker: lab %q: %s: %w", lab, MarkerFile, err)
	}
	return &m, nil
}
