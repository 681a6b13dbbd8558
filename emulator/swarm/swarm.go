// Package swarm is reef's backend for labs that span machines: Docker Swarm places the
// pieces, VXLAN carries the links the placement cuts, and each machine keeps its own
// clock.
//
// Where it sits in the flow:
//
//	reef up/run --backend swarm
//	  controller (this package): Place → one Swarm config (the Spec) and one service per
//	  machine, pinned there by the node label reef.machine, never restarted
//	    └─ task on each machine: `reef agent` (Agent), host network, NET_ADMIN/SYS_ADMIN
//	         netns.Up of the machine's Slice: namespaces, veths, the shards' switchd,
//	         a VXLAN device per cut link (netns.Tunnel), the hosts' daemons during a run
//	  reef exec / results: the machine's own engine (node label reef.engine): exec in
//	  the task's container, files copied out of it
//
// Swarm does what it is good at (membership, placement by label, noticing a lost
// node); reef does the links and the timing. Everything a lab has on a machine lives
// inside its task's container (namespaces are mounted in the container's mount
// namespace, daemons are its processes), so removing the service, or losing the
// machine, removes it all.
package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"reef/emulator"
	"reef/emulator/docker"
	"reef/emulator/netns"
	"reef/emulator/plan"
)

// BackendName is the Swarm backend's registered name.
const BackendName = "swarm"

// Labels on the services, configs and containers of a lab.
const (
	LabelLab = "reef.lab"
	// LabelRole marks what reef made ("machine": a lab's task on one machine).
	LabelRole = "reef.role"
)

// SpecPath is where the agent finds its Spec in its container (a Swarm config).
const SpecPath = "/reef-spec.json"

// MarkerFile in the controller's lab directory records where the lab runs.
const MarkerFile = "swarm.json"

// Spec is what the agent on one machine is handed.
type Spec struct {
	Lab     string `json:"lab"`
	Machine string `json:"machine"`
	// Addr is the machine's underlay address (tunnels and clock probes use it).
	Addr netip.Addr `json:"addr"`
	// Start is the lab's time zero on every machine's clock (CLOCK_REALTIME ns): each
	// machine derives its own epoch from it, and release trailers carry times from it.
	Start    int64       `json:"start"`
	Plan     *plan.Plan  `json:"plan"`
	Slice    netns.Slice `json:"slice"`
	Topology string      `json:"topology,omitempty"`
	// SwitchdArgs are extra arguments for the machine's switch daemons.
	SwitchdArgs []string `json:"switchd_args,omitempty"`
	// Peers are the other machines this one has tunnels to (the clock probe measures
	// each).
	Peers []Peer `json:"peers,omitempty"`
	// ClockOffset is added to this machine's clock (tests inject an offset between
	// machines this way: one VM has one clock).
	ClockOffset time.Duration `json:"clock_offset,omitempty"`
	// Run, when set, is the run this machine takes part in.
	Run *RunSpec `json:"run,omitempty"`
}

// Peer is another machine of the lab.
type Peer struct {
	Name string     `json:"name"`
	Addr netip.Addr `json:"addr"`
}

// Marker is what the controller keeps of a Swarm lab (MarkerFile).
type Marker struct {
	Lab string `json:"lab"`
	// Manager is the engine the controller talked to.
	Manager   string         `json:"manager"`
	Machines  []Machine      `json:"machines"`
	Node      map[string]int `json:"node"`
	Services  []string       `json:"services"`
	Configs   []string       `json:"configs"`
	Placement string         `json:"placement"`
	// Warnings are the agents' (AgentReady.Warnings).
	Warnings []string `json:"warnings,omitempty"`
}

// Options tune Up.
type Options struct {
	// Manager is the Swarm manager's engine ("": $REEF_SWARM, else $DOCKER_HOST, else
	// the machine's default socket).
	Manager string
	// Place pins shards to machines (shard name → machine name).
	Place map[string]string
	// ClockOffsets moves machines' clocks (machine name → offset), to test what an
	// offset does.
	ClockOffsets map[string]time.Duration
	// Topology, SwitchdArgs and Progress as for netns.
	Topology    string
	SwitchdArgs []string
	Progress    func(emulator.UpProgress)
	// ReadyTimeout bounds the wait for every machine's part (default 60 s).
	ReadyTimeout time.Duration
}

func managerAddr(o string) string {
	for _, a := range []string{o, os.Getenv("REEF_SWARM"), os.Getenv("DOCKER_HOST")} {
		if a != "" {
			return a
		}
	}
	return "unix:///var/run/docker.sock"
}

// Machines lists the Swarm's nodes that carry LabelMachine, ready and active, sorted by
// name.
func Machines(ctx context.Context, c *docker.Client) ([]Machine, error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("swarm: is the engine a Swarm manager? %w", err)
	}
	var out []Machine
	var skipped []string
	for _, n := range nodes {
		name := n.Spec.Labels[LabelMachine]
		if name == "" {
			continue
		}
		if n.Status.State != "ready" || (n.Spec.Availability != "" && n.Spec.Availability != "active") {
			skipped = append(skipped, fmt.Sprintf("%s (%s, %s)", name, n.Status.State, n.Spec.Availability))
			continue
		}
		addr, err := netip.ParseAddr(n.Status.Addr)
		if err != nil {
			return nil, fmt.Errorf("swarm: machine %s: address %q: %w", name, n.Status.Addr, err)
		}
		engine := n.Spec.Labels[LabelEngine]
		if engine == "" {
			return nil, fmt.Errorf("swarm: machine %s has no %s label: the controller reaches each machine's engine by it (docker node update --label-add %s=unix:///… %s)",
				name, LabelEngine, LabelEngine, n.ID)
		}
		out = append(out, Machine{Name: name, NodeID: n.ID, Engine: engine, Addr: addr, CPUs: int(n.Description.Resources.NanoCPUs / 1e9)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("swarm: two nodes are labelled %s=%s", LabelMachine, out[i].Name)
		}
	}
	if len(out) == 0 {
		msg := "swarm: no node is labelled " + LabelMachine + "=NAME (docker node update --label-add " + LabelMachine + "=m1 NODE)"
		if len(skipped) > 0 {
			msg += "; not ready: " + strings.Join(skipped, ", ")
		}
		return nil, errors.New(msg)
	}
	return out, nil
}

// ListMachines lists the machines of the Swarm whose manager is at manager ("": the
// default, see Options.Manager).
func ListMachines(ctx context.Context, manager string) ([]Machine, error) {
	c, err := docker.NewClientAt(managerAddr(manager))
	if err != nil {
		return nil, err
	}
	return Machines(ctx, c)
}

// ServiceName is lab's service on machine.
func ServiceName(lab, machine string) string { return "reef-" + lab + "-" + machine }

// ReadMarker reads the controller's record of a Swarm lab.
func ReadMarker(lab string) (*Marker, error) {
	b, err := os.ReadFile(filepath.Join(netns.DefaultRunDir, lab, MarkerFile))
	if err != nil {
		return nil, fmt.Errorf("swarm: lab %q: %w", lab, err)
	}
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("swarm: lab %q: %s: %w", lab, MarkerFile, err)
	}
	return &m, nil
}

// IsLab reports whether lab is a Swarm lab this controller brought up (or half up).
func IsLab(lab string) bool {
	_, err := os.Stat(filepath.Join(netns.DefaultRunDir, lab, MarkerFile))
	return err == nil
}

// describe says where the placement put what, one line per machine.
func describe(p *plan.Plan, pl *Placement) string {
	var b strings.Builder
	for mi, m := range pl.Machines {
		var sw, hosts []string
		for _, s := range p.Switches {
			if pl.Node[s.Config.Name] == mi {
				sw = append(sw, s.Config.Name)
			}
		}
		for _, h := range p.Hosts {
			if pl.Node[h.Config.Name] == mi {
				hosts = append(hosts, h.Config.Name)
			}
		}
		fmt.Fprintf(&b, "  %s (%s): switches %s; %d hosts\n", m.Name, m.Addr, strings.Join(sw, " "), len(hosts))
	}
	var cuts []string
	for i, vni := range pl.Cut {
		cuts = append(cuts, fmt.Sprintf("%s (VNI %d)", linkName(p.Links[i]), vni))
	}
	sort.Strings(cuts)
	if len(cuts) > 0 {
		fmt.Fprintf(&b, "  cut links, over VXLAN: %s\n", strings.Join(cuts, ", "))
	}
	return b.String()
}
