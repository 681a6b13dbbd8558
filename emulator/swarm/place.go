package swarm

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"sort"
	"strings"

	"reef/emulator/netns"
	"reef/emulator/plan"
	"reef/units"
)

// Node labels reef reads on a Swarm's nodes.
const (
	// LabelMachine names the machine a node is: reef places by it (never by hostname,
	// which two machines may share).
	LabelMachine = "reef.machine"
	// LabelEngine is the address of the node's own engine ("unix:///run/m2.sock"): the
	// controller reaches it for exec, captures and results, which the manager does not
	// proxy.
	LabelEngine = "reef.engine"
)

// Machine is one Swarm node reef may place on.
type Machine struct {
	Name   string     `json:"name"`
	NodeID string     `json:"node_id"`
	Engine string     `json:"engine"`
	Addr   netip.Addr `json:"addr"`
	// CPUs the node has (from the engine).
	CPUs int `json:"cpus"`
}

// Placement is where a lab's pieces run: each shard (a switch daemon with its
// switches) on one machine, each host on its ToR's machine, and a tunnel for each
// switch-to-switch link whose ends are on two machines.
type Placement struct {
	// Machines are the machines used, by index.
	Machines []Machine `json:"machines"`
	// Partition is the lab's shards.
	Partition plan.Partition `json:"partition"`
	// ShardMachine is the machine of each shard.
	ShardMachine []int `json:"shard_machine"`
	// Node maps each host and switch to its machine.
	Node map[string]int `json:"node"`
	// Cut lists the links between machines, by index in the plan's Links, with the
	// VNI each carries on the underlay.
	Cut map[int]uint32 `json:"cut"`
}

// Place splits p over machines by their CPUs: a machine gets as many shards as the
// netns backend would run on it (one per two CPUs, at least one), and the lab is cut
// into that many in all (plan.Partition, which keeps a fat-tree pod or a leaf with its
// hosts together and cuts as few links as it can), consecutive shards on one machine,
// unless place names another machine for a shard (shard name → machine name). A
// machine may get no shard when the plan has fewer switches. It refuses a cut link
// that must stay within one machine (a host's link, or a lossless one: PFC's pause
// frames would cross the tunnel late).
func Place(p *plan.Plan, machines []Machine, place map[string]string) (*Placement, error) {
	if len(machines) == 0 {
		return nil, errors.New("swarm: no machine to place on (label the Swarm's nodes " + LabelMachine + "=NAME)")
	}
	if len(p.Switches) == 0 {
		return nil, errors.New("swarm: the lab has no switch to place")
	}
	var owner []int // machine of each shard, before place
	for i, m := range machines {
		for range max(1, m.CPUs/2) {
			owner = append(owner, i)
		}
	}
	part := p.Partition(len(owner))
	pl := &Placement{Partition: part, Node: map[string]int{}, Cut: map[int]uint32{}}
	byName := map[string]int{}
	for i, m := range machines {
		byName[m.Name] = i
	}
	used := map[int]int{} // machine index in machines → index in pl.Machines
	for k := range part.Shards {
		// Fewer shards than asked (a small lab): spread them over the machines.
		mi := owner[k*len(owner)/len(part.Shards)]
		if want, ok := place[plan.ShardName(k)]; ok {
			j, ok := byName[want]
			if !ok {
				return nil, fmt.Errorf("swarm: --place %s=%s: no machine %q (machines: %s)", plan.ShardName(k), want, want, names(machines))
			}
			mi = j
		}
		if _, ok := used[mi]; !ok {
			used[mi] = len(pl.Machines)
			pl.Machines = append(pl.Machines, machines[mi])
		}
		pl.ShardMachine = append(pl.ShardMachine, used[mi])
	}
	for s := range place {
		if !strings.HasPrefix(s, "shard") || !validShard(s, len(part.Shards)) {
			return nil, fmt.Errorf("swarm: --place %s=…: no shard %q (the lab has %d: shard1 … shard%d)", s, s, len(part.Shards), len(part.Shards))
		}
	}
	for i, s := range p.Switches {
		pl.Node[s.Config.Name] = pl.ShardMachine[part.Of[i]]
	}
	for _, h := range p.Hosts {
		l := p.Links[h.Link]
		tor := l.A
		if tor.IsHost {
			tor = l.B
		}
		pl.Node[h.Config.Name] = pl.Node[tor.Node]
	}
	base := labVNIBase(p.Lab)
	for i, l := range p.Links {
		if pl.Node[l.A.Node] == pl.Node[l.B.Node] {
			continue
		}
		where := fmt.Sprintf("link %s:%s—%s:%s", l.A.Node, l.A.Iface, l.B.Node, l.B.Iface)
		if l.A.IsHost || l.B.IsHost {
			return nil, fmt.Errorf("swarm: %s: a host's link stays within one machine", where)
		}
		for _, e := range []plan.Endpoint{l.A, l.B} {
			sw, _ := p.SwitchByName(e.Node)
			if sw.Config.Ports[e.Port].PFC.Enabled {
				return nil, fmt.Errorf("swarm: %s: lossless (PFC) links stay within one machine; place %s and %s together (--place)", where, l.A.Node, l.B.Node)
			}
		}
		if i >= 1<<12 {
			return nil, fmt.Errorf("swarm: %s: more than 4096 links; the VNI plan has room for 4096 per lab", where)
		}
		pl.Cut[i] = base | uint32(i+1)
	}
	return pl, nil
}

func validShard(s string, n int) bool {
	for k := range n {
		if plan.ShardName(k) == s {
			return true
		}
	}
	return false
}

// labVNIBase spreads labs over the 24-bit VNI space, 4096 links each, so two labs
// sharing machines do not reuse a VNI (VNI 0 stays unused).
func labVNIBase(lab string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(lab))
	return (h.Sum32()%4095 + 1) << 12
}

func names(ms []Machine) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// CutDelays moves each cut link's propagation delay from the sending port's egress
// (Due = departure + delay) to the receiving port's ingress, on both sides: frames then
// cross the tunnel as soon as they leave the queue, carrying their departure as their
// Due, and the receiving switch computes their arrival from it. The tunnel's transit
// (and the machines' clock offset) is hidden inside the emulated delay instead of being
// added to it, so a cut changes no result while the delay covers it (Margin).
func CutDelays(p *plan.Plan, pl *Placement) {
	for i := range pl.Cut {
		l := p.Links[i]
		for _, e := range []plan.Endpoint{l.A, l.B} {
			sw, _ := p.SwitchByName(e.Node)
			pc := &sw.Config.Ports[e.Port]
			pc.IngressDelay += pc.Delay
			pc.Delay = 0
		}
	}
}

// Slice is machine m's part of the placement as the netns backend brings it up there.
func (pl *Placement) Slice(p *plan.Plan, m int) netns.Slice {
	s := netns.Slice{Nodes: map[string]bool{}, Partition: pl.Partition, Tunnels: map[int]netns.Tunnel{}}
	for n, mi := range pl.Node {
		if mi == m {
			s.Nodes[n] = true
		}
	}
	for i, vni := range pl.Cut {
		l := p.Links[i]
		a, b := pl.Node[l.A.Node], pl.Node[l.B.Node]
		switch m {
		case a:
			s.Tunnels[i] = netns.Tunnel{VNI: vni, Local: pl.Machines[a].Addr, Remote: pl.Machines[b].Addr}
		case b:
			s.Tunnels[i] = netns.Tunnel{VNI: vni, Local: pl.Machines[b].Addr, Remote: pl.Machines[a].Addr}
		}
	}
	return s
}

// MinCutDelay returns the smallest emulated delay of a cut link and that link's
// description ("" when nothing is cut).
func (pl *Placement) MinCutDelay(p *plan.Plan) (units.Time, string) {
	best, where := units.Never, ""
	for i := range pl.Cut {
		l := p.Links[i]
		if l.Delay < best || (l.Delay == best && where > linkName(l)) {
			best, where = l.Delay, linkName(l)
		}
	}
	return best, where
}

func linkName(l plan.Link) string {
	return fmt.Sprintf("%s:%s—%s:%s", l.A.Node, l.A.Iface, l.B.Node, l.B.Iface)
}
