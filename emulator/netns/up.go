package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"reef/afpacket"
	"reef/emulator"
	"reef/emulator/plan"
	"reef/internal/cpuset"
	"reef/switchd/shard"
	"reef/units"
)

// Defaults for where labs keep their state and their per-namespace /etc files.
const (
	DefaultRunDir = "/run/reef"
	DefaultEtcDir = "/etc/netns"
)

// LabNet is the range host addresses come from (RFC 2544 benchmarking space); hosts
// route all of it to their ToR.
var LabNet = netip.MustParsePrefix("198.18.0.0/15")

// Gateway is the next hop every host routes LabNet through. No node owns it: a permanent
// neighbour entry maps it to the host's ToR port MAC, so the host never ARPs.
var Gateway = netip.MustParseAddr("198.19.255.254")

// Options tune Up.
type Options struct {
	// Switchd is the switchd binary; "" finds or builds it (see FindSwitchd).
	Switchd string
	// Topology names the file the plan came from (shown by List).
	Topology string
	// Workers bounds how many namespaces or links are set up at once (default 8).
	Workers int
	// ReadyTimeout bounds the wait for every switchd to open its ports (default 20s).
	ReadyTimeout time.Duration
	// RingFrames sizes each switch port's RX ring (0: switchd's default).
	RingFrames int
	// SwitchdArgs are extra arguments for every switchd (e.g. "--rt-priority", "10").
	SwitchdArgs []string
	// Shards is how many switch daemons run the lab's switches (plan.Partition): the
	// links between two switches of one shard are carried in memory, with no veth. 0
	// means DefaultShards.
	Shards int
	// Log receives progress (default slog.Default()).
	Log *slog.Logger
	// Progress, when set, is told how far Up has come, stage by stage (nodes, links,
	// hosts, switches), one call at a time: a terminal shows it (reef up).
	Progress func(emulator.UpProgress)
	// Epoch, when non-zero, is the lab's time zero (CLOCK_MONOTONIC ns) instead of the
	// moment Up starts (a lab across machines starts from one shared instant).
	Epoch int64
	// WireEpoch, when non-zero, is the same instant on the clock the daemons' release
	// trailers carry (afpacket.Clock.SetWireEpoch): a lab across machines gives its
	// shared start time, so a frame's Due means the same on both sides of a tunnel.
	WireEpoch int64
	// Slice, when set, brings up one machine's part of the plan only (a lab spread over
	// several machines: emulator/swarm); Shards is then ignored.
	Slice *Slice
	// Unplaced leaves the daemons wherever the scheduler puts them, as labs that share
	// the machine's CPUs want (a class's, each bounded). Otherwise, when the machine has
	// more CPUs than the lab has shards and no other lab is up, each shard gets a CPU of
	// its own and the hosts the rest (placeCPUs). A slice of a lab across machines is
	// never placed.
	Unplaced bool
}

// A Slice is the part of a lab one machine carries: its nodes, the lab-wide partition
// (so its shards keep their names), and a Tunnel for every link cut between this
// machine and another.
type Slice struct {
	// Nodes are the hosts and switches on this machine; a shard's switches are all on
	// one machine, and a host is on its ToR's.
	Nodes map[string]bool `json:"nodes"`
	// Partition is the whole lab's.
	Partition plan.Partition `json:"partition"`
	// Tunnels carry the cut links, by index in the plan's Links.
	Tunnels map[int]Tunnel `json:"tunnels"`
}

// Has reports whether node is on the slice's machine (every node when s is nil).
func (s *Slice) Has(node string) bool { return s == nil || s.Nodes[node] }

// Lab is a lab that is up.
type Lab struct {
	// Name is the lab's name; Dir its state directory.
	Name string
	Dir  string
	// Epoch is the lab's time zero (CLOCK_MONOTONIC ns), shared by its daemons.
	Epoch int64
	// WireEpoch is Options.WireEpoch (0: the trailers carry CLOCK_MONOTONIC).
	WireEpoch int64
	// Plan is what the lab was built from.
	Plan *plan.Plan
	// State is the lab's intent log as written when Up finished.
	State State
	// Partition is how the switches were placed in shards.
	Partition plan.Partition
}

// DefaultShards is how many shards a lab's switches run in when Options.Shards is 0:
// one per two CPUs the machine has (at least one), since as many host daemons run
// beside them (one per shard's hosts). Measured on a 2-core machine, poseidon-multihop
// (cc=poseidon, M=2, N=4) at ten times its netns rate (1 Gbit/s links): one shard and
// one host daemon kept fidelity ok (p99 lateness 0.33 ms, skew 0.37 of its bound),
// two of each were degraded (1.4 ms, skew 4.0x), a daemon per switch and per host
// degraded (4.1 ms).
func DefaultShards() int { return max(1, runtime.NumCPU()/2) }

// ShardStates names each shard of part with its switches, for a lab's State.
func ShardStates(p *plan.Plan, part *plan.Partition) []Shard {
	var out []Shard
	for k, sh := range part.Shards {
		s := Shard{Name: plan.ShardName(k)}
		for _, i := range sh {
			s.Switches = append(s.Switches, p.Switches[i].Config.Name)
		}
		out = append(out, s)
	}
	return out
}

// InMemory reports whether l joins two switches of the same shard (no veth: the
// shard's daemon carries it in memory).
func InMemory(l *plan.Link, p *plan.Plan, part *plan.Partition) bool {
	if l.A.IsHost || l.B.IsHost {
		return false
	}
	a, b := switchIndex(p, l.A.Node), switchIndex(p, l.B.Node)
	return a >= 0 && b >= 0 && part.Of[a] == part.Of[b]
}

func switchIndex(p *plan.Plan, name string) int {
	for i := range p.Switches {
		if p.Switches[i].Config.Name == name {
			return i
		}
	}
	return -1
}

// NSName is the network namespace of node in lab.
func NSName(lab, node string) string { return "reef-" + lab + "-" + node }

// NS returns the network namespace name of node.
func (l *Lab) NS(node string) string { return NSName(l.Name, node) }

// SwitchdArgs is the command line of the switch daemon running shard cfg (written at
// cfgPath) in this lab, its datapath bound to cpus when the lab placed it there
// (placeCPUs), o.SwitchdArgs last. Only the datapath thread is bound: the daemon's other
// threads (captures, statistics) run where the scheduler finds room, since under the
// datapath's SCHED_FIFO on a CPU of its own they could wait there for tens of
// milliseconds.
func (l *Lab) SwitchdArgs(cfg *shard.Config, cfgPath string, o Options, cpus []int) []string {
	args := []string{"--shard", cfgPath, "--epoch", strconv.FormatInt(l.Epoch, 10),
		"--stats", l.StatsPath("{node}"), "--ready-fd", "3"}
	if len(cpus) > 0 {
		args = append(args, "--cpus", cpuset.List(cpus))
	}
	if len(cfg.Links) > 0 {
		args = append(args, "--tap-socket", TapSocket(l.Dir, cfg.Name))
	}
	if o.RingFrames > 0 {
		args = append(args, "--ring-frames", strconv.Itoa(o.RingFrames))
	}
	return append(append(args, l.wireArgs()...), o.SwitchdArgs...)
}

// wireArgs is the daemons' --wire-epoch flag, if the lab has a wire epoch.
func (l *Lab) wireArgs() []string {
	if l.WireEpoch == 0 {
		return nil
	}
	return []string{"--wire-epoch", strconv.FormatInt(l.WireEpoch, 10)}
}

// StatsPath returns where switch node writes its statistics (JSON).
func (l *Lab) StatsPath(node string) string { return filepath.Join(l.Dir, node+".stats.json") }

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// Up brings p up: a named network namespace per node, a veth pair per link (offloads
// off on both ends), host addresses, routes, neighbours and tbf shaping, and one switchd
// per switch. On any error it removes everything it made and returns the error.
func Up(ctx context.Context, p *plan.Plan, o Options) (lab *Lab, err error) {
	if err := checkPlan(p); err != nil {
		return nil, err
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 20 * time.Second
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	bin := o.Switchd
	if bin == "" && len(p.Switches) > 0 {
		if bin, err = FindSwitchd(); err != nil {
			return nil, err
		}
	}
	if o.Shards <= 0 {
		o.Shards = DefaultShards()
	}
	var part plan.Partition
	if o.Slice != nil {
		part = o.Slice.Partition
	} else {
		part = p.Partition(o.Shards)
	}
	t0 := time.Now()
	dir := filepath.Join(DefaultRunDir, p.Lab)
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err == nil {
		return nil, fmt.Errorf("netns: lab %q is already up (reef down %s)", p.Lab, p.Lab)
	}
	nodes := make([]NodeNS, 0, len(p.Hosts)+len(p.Switches))
	for _, h := range p.Hosts {
		if o.Slice.Has(h.Config.Name) {
			nodes = append(nodes, NodeNS{Node: h.Config.Name, NS: NSName(p.Lab, h.Config.Name)})
		}
	}
	for _, s := range p.Switches {
		if o.Slice.Has(s.Config.Name) {
			nodes = append(nodes, NodeNS{Node: s.Config.Name, NS: NSName(p.Lab, s.Config.Name), Switch: true})
		}
	}
	for _, n := range nodes {
		if _, err := os.Lstat(filepath.Join(NetnsDir, n.NS)); err == nil {
			return nil, fmt.Errorf("netns: namespace %s already exists and is not this lab's", n.NS)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	if err := ensureNetnsDir(); err != nil {
		return nil, err
	}
	tune()

	// The intent log: every name is on disk before anything carrying it exists.
	sf := &stateFile{path: filepath.Join(dir, "state.json")}
	sf.st = State{Lab: p.Lab, Created: time.Now().UTC(), Epoch: afpacket.MonotonicNow(), Topology: o.Topology, Namespaces: nodes}
	if o.Epoch != 0 {
		sf.st.Epoch = o.Epoch
	}
	sf.st.Shards = ShardStates(p, &part)
	if o.Slice != nil {
		sf.st.Shards = slices.DeleteFunc(sf.st.Shards, func(s Shard) bool { return !o.Slice.Has(s.Switches[0]) })
	}
	if err := PlaceCPUs(&sf.st, o.Unplaced || o.Slice != nil); err != nil {
		return nil, err
	}
	for _, h := range p.Hosts {
		if !o.Slice.Has(h.Config.Name) {
			continue
		}
		sf.st.EtcDirs = append(sf.st.EtcDirs, filepath.Join(DefaultEtcDir, NSName(p.Lab, h.Config.Name)))
	}
	if err := sf.update(func(*State) {}); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("netns: write state: %w", err)
	}
	lab = &Lab{Name: p.Lab, Dir: dir, Epoch: sf.st.Epoch, WireEpoch: o.WireEpoch, Plan: p, Partition: part}
	handles := make(map[string]*nsHandle, len(nodes))
	var hmu sync.Mutex
	defer func() {
		for _, h := range handles {
			h.close()
		}
		if err != nil {
			if derr := Down(context.WithoutCancel(ctx), p.Lab); derr != nil {
				err = errors.Join(err, fmt.Errorf("netns: cleanup after failed up: %w", derr))
			}
			lab = nil
		}
	}()

	count := emulator.NewUpCounter(o.Progress)
	// Namespaces.
	err = parallel(ctx, len(nodes), o.Workers, count.Count("nodes", len(nodes), func(i int) error {
		sys := map[string]string{
			"net.ipv6.conf.all.disable_ipv6":     "1",
			"net.ipv6.conf.default.disable_ipv6": "1",
		}
		h, err := createNamed(nodes[i].NS, sys)
		if err != nil {
			return err
		}
		hmu.Lock()
		handles[nodes[i].Node] = h
		hmu.Unlock()
		return nil
	}))
	if err != nil {
		return nil, err
	}
	log.Debug("namespaces up", "lab", p.Lab, "n", len(nodes), "elapsed", time.Since(t0))

	// Links: both ends created directly inside their namespaces, then offloads off, up;
	// none for a link inside a shard.
	err = parallel(ctx, len(p.Links), o.Workers, count.Count("links", len(p.Links), func(i int) error {
		l := &p.Links[i]
		if InMemory(l, p, &part) {
			return nil
		}
		ha, hb := handles[l.A.Node], handles[l.B.Node]
		if o.Slice != nil && (ha != nil || hb != nil) && (ha == nil || hb == nil) {
			t, ok := o.Slice.Tunnels[i]
			if !ok {
				return fmt.Errorf("netns: link %s:%s—%s:%s leaves this machine but has no tunnel", l.A.Node, l.A.Iface, l.B.Node, l.B.Iface)
			}
			if ha != nil {
				return wireTunnel(l, l.A, ha, t)
			}
			return wireTunnel(l, l.B, hb, t)
		}
		if o.Slice != nil && ha == nil && hb == nil {
			return nil // another machine's
		}
		if ha == nil || hb == nil {
			return fmt.Errorf("netns: link %s:%s—%s:%s: unknown node", l.A.Node, l.A.Iface, l.B.Node, l.B.Iface)
		}
		return wireLink(l, ha, hb)
	}))
	if err != nil {
		return nil, err
	}
	log.Debug("links up", "lab", p.Lab, "n", len(p.Links), "elapsed", time.Since(t0))

	// Hosts: address, route via the fake gateway, permanent neighbour, tbf, /etc/hosts.
	hostsFile := hostsFile(p)
	err = parallel(ctx, len(p.Hosts), o.Workers, count.Count("hosts", len(p.Hosts), func(i int) error {
		if !o.Slice.Has(p.Hosts[i].Config.Name) {
			return nil
		}
		return setupHost(p, &p.Hosts[i], handles[p.Hosts[i].Config.Name], hostsFile, sf.st.HostCPUs)
	}))
	if err != nil {
		return nil, err
	}

	// Switch daemons.
	if err := startSwitches(ctx, lab, sf, handles, bin, o, log, count); err != nil {
		return nil, err
	}
	if err := sf.update(func(s *State) { s.Ready = true }); err != nil {
		return nil, fmt.Errorf("netns: write state: %w", err)
	}
	lab.State = sf.st
	log.Info("lab up", "lab", p.Lab, "hosts", len(p.Hosts), "switches", len(p.Switches),
		"links", len(p.Links), "shards", len(part.Shards), "in_memory_links", inMemoryLinks(p, &part),
		"elapsed", time.Since(t0).Round(time.Millisecond))
	return lab, nil
}

// ifaceMAC is the MAC an endpoint's interface gets. Hosts get the planner's MAC. A switch
// port's interface gets a different one (bit 7 of byte 4 flipped): frames the switch's
// neighbours address to the planner's MAC then reach the switch namespace's kernel stack
// as PACKET_OTHERHOST, which drops them on its first check instead of routing them, while
// switchd, whose AF_PACKET taps run before the stack, sees every frame and sends with the
// planner's MAC.
func ifaceMAC(e plan.Endpoint) net.HardwareAddr {
	m := e.MAC
	if !e.IsHost {
		m[4] ^= 0x80
	}
	return net.HardwareAddr(m[:])
}

func checkPlan(p *plan.Plan) error {
	if p == nil {
		return errors.New("netns: no plan")
	}
	if !nameRE.MatchString(p.Lab) {
		return fmt.Errorf("netns: lab name %q: want letters, digits, '-', '_' or '.'", p.Lab)
	}
	seen := map[string]bool{}
	check := func(n string) error {
		if !nameRE.MatchString(n) {
			return fmt.Errorf("netns: node name %q: want letters, digits, '-', '_' or '.'", n)
		}
		if seen[n] {
			return fmt.Errorf("netns: node %q appears twice", n)
		}
		seen[n] = true
		return nil
	}
	for _, h := range p.Hosts {
		if err := check(h.Config.Name); err != nil {
			return err
		}
		if h.Config.Addr == Gateway {
			return fmt.Errorf("netns: host %s: address %s is reserved for the hosts' gateway", h.Config.Name, Gateway)
		}
	}
	for _, s := range p.Switches {
		if err := check(s.Config.Name); err != nil {
			return err
		}
	}
	for _, l := range p.Links {
		for _, e := range []plan.Endpoint{l.A, l.B} {
			if len(e.Iface) == 0 || len(e.Iface) >= unix.IFNAMSIZ {
				return fmt.Errorf("netns: %s:%s: interface names must be 1..15 bytes", e.Node, e.Iface)
			}
		}
	}
	return nil
}

func hostsFile(p *plan.Plan) []byte {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n")
	for _, h := range p.Hosts {
		fmt.Fprintf(&b, "%s\t%s\n", h.Config.Addr, h.Config.Name)
	}
	return []byte(b.String())
}

func setupHost(p *plan.Plan, h *plan.Host, nh *nsHandle, hosts []byte, cpus []int) error {
	c := &h.Config
	wrap := func(what string, err error) error { return fmt.Errorf("netns: host %s: %s: %w", c.Name, what, err) }
	etc := filepath.Join(DefaultEtcDir, NSName(p.Lab, c.Name))
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return wrap("etc dir", err)
	}
	if err := os.WriteFile(filepath.Join(etc, "hosts"), hosts, 0o644); err != nil {
		return wrap("hosts file", err)
	}
	lk, err := nh.nl.LinkByName(c.Iface)
	if err != nil {
		return wrap(c.Iface, err)
	}
	if !c.Addr.Is4() {
		return wrap("address", fmt.Errorf("%s is not IPv4", c.Addr))
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: c.Addr.AsSlice(), Mask: net.CIDRMask(32, 32)}}
	if err := nh.nl.AddrAdd(lk, addr); err != nil {
		return wrap("address "+c.Addr.String(), err)
	}
	gw := net.IP(Gateway.AsSlice())
	if err := nh.nl.NeighSet(&netlink.Neigh{LinkIndex: lk.Attrs().Index, Family: netlink.FAMILY_V4,
		State: netlink.NUD_PERMANENT, IP: gw, HardwareAddr: net.HardwareAddr(c.GatewayMAC[:])}); err != nil {
		return wrap("gateway neighbour", err)
	}
	dst := &net.IPNet{IP: LabNet.Addr().AsSlice(), Mask: net.CIDRMask(LabNet.Bits(), 32)}
	// The device MTU has room for reef's release trailer (DeviceMTU); the kernel's own
	// traffic keeps the link's MTU: path MTU locked, MSS advertised from it.
	mtu := routeMTU(c.MTU)
	if err := nh.nl.RouteAdd(&netlink.Route{LinkIndex: lk.Attrs().Index, Dst: dst, Gw: gw,
		Flags: int(netlink.FLAG_ONLINK), Src: c.Addr.AsSlice(), MTU: mtu, MTULock: true, AdvMSS: mtu - 40}); err != nil {
		return wrap("route", err)
	}
	if c.Rate > 0 {
		if err := nh.nl.QdiscAdd(tbfFor(lk.Attrs().Index, c.Rate, c.MTU, p.Links[h.Link].Buffer)); err != nil {
			return wrap("tbf", err)
		}
	}
	if len(cpus) > 0 {
		return steerReceive(nh.fd, cpus)
	}
	return nil
}

// tbfFor shapes a host's NIC to rate: a bucket of two frames or 200 µs of traffic,
// whichever is larger, and a queue of the link's buffer (at least 64 KB). The bucket is
// sized for the timer: tbf releases at most a bucket per watchdog wakeup, and on a busy
// machine those come 50–100 µs late, so a bucket of a frame or two would cap the rate far
// below the link's. Bursts up to the bucket leave the host back to back.
func tbfFor(ifindex int, rate units.Rate, mtu int, buffer units.Bytes) *netlink.Tbf {
	if mtu <= 0 {
		mtu = 1500
	}
	bps := uint64(rate / 8)
	burst := max(uint64(2*(mtu+14)), uint64(rate.BytesIn(200*units.Microsecond)))
	limit := max(uint64(buffer), 64<<10)
	return &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: ifindex, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		Rate:       bps,
		Limit:      uint32(limit),
		Buffer:     netlink.Xmittime(bps, uint32(burst)),
	}
}

// tune raises the per-CPU backlog veth delivers into, so bursts are not dropped there.
// It writes the root namespace's sysctl and never lowers it.
func tune() {
	const key = "/proc/sys/net/core/netdev_max_backlog"
	b, err := os.ReadFile(key)
	if err != nil {
		return
	}
	if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v < 10000 {
		_ = os.WriteFile(key, []byte("10000"), 0o644)
	}
}

// parallel runs fn(0..n-1) on up to workers goroutines and returns the first error
// (the others are joined to it); it stops handing out work after an error.
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	var (
		mu   sync.Mutex
		errs []error
		next int
		wg   sync.WaitGroup
	)
	for range min(n, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= n || len(errs) > 0 || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) == 0 && ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

// inMemoryLinks counts the plan's links carried inside a shard.
func inMemoryLinks(p *plan.Plan, part *plan.Partition) int {
	n := 0
	for i := range p.Links {
		if InMemory(&p.Links[i], p, part) {
			n++
		}
	}
	return n
}

// ShardConfig is the shard.Config of shard k of the lab's partition: its switches, the
// links between them (in memory) and every other port of theirs as an external port in
// the switch's own namespace.
func ShardConfig(lab string, p *plan.Plan, part *plan.Partition, k int) shard.Config {
	c := shard.Config{Name: plan.ShardName(k)}
	mine := map[string]bool{}
	for _, i := range part.Shards[k] {
		c.Switches = append(c.Switches, p.Switches[i].Config)
		mine[p.Switches[i].Config.Name] = true
	}
	for i := range p.Links {
		l := &p.Links[i]
		if InMemory(l, p, part) && mine[l.A.Node] {
			c.Links = append(c.Links, shard.Link{A: shard.End{Switch: l.A.Node, Port: l.A.Port}, B: shard.End{Switch: l.B.Node, Port: l.B.Port}})
			continue
		}
		for _, e := range []plan.Endpoint{l.A, l.B} {
			if !e.IsHost && mine[e.Node] && !InMemory(l, p, part) {
				c.Ports = append(c.Ports, shard.Port{End: shard.End{Switch: e.Node, Port: e.Port}, Iface: e.Iface,
					Netns: filepath.Join(NetnsDir, NSName(lab, e.Node))})
			}
		}
	}
	return c
}

// WriteShardConfig writes the config of shard k of lab's partition into the lab's
// directory as <shard>.shard.json (what its switchd reads), and each of its switches'
// as <node>.json (what reef stats, capture and the dashboard read of a switch). It
// returns the config and its path.
func WriteShardConfig(lab *Lab, k int) (shard.Config, string, error) {
	cfg := ShardConfig(lab.Name, lab.Plan, &lab.Partition, k)
	for i := range cfg.Switches {
		if err := writeJSON(filepath.Join(lab.Dir, cfg.Switches[i].Name+".json"), &cfg.Switches[i]); err != nil {
			return cfg, "", fmt.Errorf("netns: switch %s config: %w", cfg.Switches[i].Name, err)
		}
	}
	path := filepath.Join(lab.Dir, cfg.Name+".shard.json")
	if err := writeJSON(path, &cfg); err != nil {
		return cfg, "", fmt.Errorf("netns: %s config: %w", cfg.Name, err)
	}
	return cfg, path, nil
}

// shardCPUs are the CPUs the shard called name was placed on (none: not placed).
func shardCPUs(shards []Shard, name string) []int {
	for _, s := range shards {
		if s.Name == name {
			return s.CPUs
		}
	}
	return nil
}

// startSwitches writes each shard's config and starts its switchd inside the
// namespace of its first switch, then waits until every daemon reports that its ports
// are open.
func startSwitches(ctx context.Context, lab *Lab, sf *stateFile, handles map[string]*nsHandle, bin string, o Options, log *slog.Logger, count *emulator.UpCounter) error {
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
	for k, sh := range lab.Partition.Shards {
		if !o.Slice.Has(lab.Plan.Switches[sh[0]].Config.Name) {
			continue // another machine's
		}
		cfg, cfgPath, err := WriteShardConfig(lab, k)
		if err != nil {
			return err
		}
		name := cfg.Name
		logPath := filepath.Join(lab.Dir, name+".log")
		logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("netns: %s log: %w", name, err)
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			logf.Close()
			return fmt.Errorf("netns: %s: %w", name, err)
		}
		cmd := exec.Command(bin, lab.SwitchdArgs(&cfg, cfgPath, o, shardCPUs(sf.st.Shards, name))...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.ExtraFiles = []*os.File{pw}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		cmd.Dir = lab.Dir
		err = inNetns(handles[cfg.Switches[0].Name].fd, cmd.Start)
		pw.Close()
		logf.Close()
		if err != nil {
			pr.Close()
			return fmt.Errorf("netns: start switchd for %s: %w", name, err)
		}
		go cmd.Wait() // reap it if it dies while we live
		waits = append(waits, started{name, pr})
		if err := sf.update(func(st *State) {
			for _, sc := range cfg.Switches {
				st.Daemons = append(st.Daemons, Daemon{Node: sc.Name, Shard: name, Pid: cmd.Process.Pid, Stats: lab.StatsPath(sc.Name), Log: logPath})
			}
		}); err != nil {
			return fmt.Errorf("netns: write state: %w", err)
		}
	}
	deadline := time.Now().Add(o.ReadyTimeout)
	return parallel(ctx, len(waits), len(waits), count.Count("switch daemons", len(waits), func(i int) error {
		w := waits[i]
		_ = w.ready.SetReadDeadline(deadline)
		var b [1]byte
		if _, err := io.ReadFull(w.ready, b[:]); err != nil {
			tail, _ := os.ReadFile(filepath.Join(lab.Dir, w.shard+".log"))
			if len(tail) > 2000 {
				tail = tail[len(tail)-2000:]
			}
			return fmt.Errorf("netns: switchd %s did not come up (%v); its log says:\n%s", w.shard, err, tail)
		}
		return nil
	}))
}
