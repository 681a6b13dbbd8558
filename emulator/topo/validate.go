package topo

import (
	"fmt"
	"strings"

	"reef/switchd"
)

// Validate checks a resolved topology: unique, well-formed node names; links between
// existing, distinct nodes; every host with exactly one link, to a switch; a connected
// graph; link values (rate > 0, delay ≥ 0, MTU in range, buffer ≥ one full frame, PFC xon < xoff);
// switch features. Load and Parse call it; call it yourself on a Topology built in code.
// Problems are joined, each naming t.File, the line and the field.
func (t *Topology) Validate() error {
	return joinUnique(t.validate(true))
}

// validate is Validate; the loader checks the lab name itself (with its line).
func (t *Topology) validate(checkName bool) []error {
	file := t.File
	if file == "" {
		file = "topology"
	}
	var errs []error
	add := func(line int, field, format string, args ...any) {
		errs = append(errs, posError(file, line, field, fmt.Sprintf(format, args...)))
	}
	if checkName && (t.Name == "" || len(t.Name) > MaxLabName || !labNameRE.MatchString(t.Name)) {
		add(0, "name", "%q: want [a-z0-9-], 1 to %d characters", t.Name, MaxLabName)
	}
	byName := make(map[string]*Node, len(t.Nodes))
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if first, dup := byName[n.Name]; dup {
			add(n.Line, n.Field+".name", "duplicate node name %q (first defined at line %d by %s)", n.Name, first.Line, first.Field)
			continue
		}
		byName[n.Name] = n
		if len(n.Name) > MaxNodeName || !nodeNameRE.MatchString(n.Name) {
			add(n.Line, n.Field+".name", "%q: want [a-z0-9-], 1 to %d characters, not starting or ending with '-'", n.Name, MaxNodeName)
		}
		if n.Kind != Host && n.Kind != Switch {
			add(n.Line, n.Field+".kind", "%q: want host or switch", n.Kind)
		}
		if n.Kind == Switch {
			errs = append(errs, n.Features.check(file, n)...)
		}
	}
	errs = append(errs, t.planLimits(file)...)
	degree := map[string][]string{}
	adj := map[string][]string{}
	missing := false
	for _, l := range t.Links {
		where := l.Field
		desc := "link " + l.A + "–" + l.B
		if l.Field == "generator" && l.Class != "" {
			desc = "class " + l.Class
		}
		okEnds := true
		for _, e := range []struct{ field, name string }{{"a", l.A}, {"b", l.B}} {
			if _, ok := byName[e.name]; !ok {
				add(l.Line, where+"."+e.field, "node %q is not defined; want one of the nodes", e.name)
				okEnds, missing = false, true
			}
		}
		if okEnds && l.A == l.B {
			add(l.Line, where, "links %s to itself", l.A)
			okEnds = false
		}
		switch {
		case l.Rate <= 0:
			add(l.Line, where+".rate", "%s: must be > 0, got %v", desc, l.Rate)
		case l.Delay < 0:
			add(l.Line, where+".delay", "%s: must be ≥ 0, got %v", desc, l.Delay)
		case l.MTU < MinMTU || l.MTU > MaxMTU:
			add(l.Line, where+".mtu", "%s: must be in [%d, %d] bytes, got %d", desc, MinMTU, MaxMTU, l.MTU)
		case int64(l.Buffer) < int64(switchd.MaxFrame(l.MTU)):
			add(l.Line, where+".buffer", "%s: buffer %v holds no full frame (the MTU, %d B, with an Ethernet header and a VLAN tag); want buffer ≥ %d B",
				desc, l.Buffer, l.MTU, switchd.MaxFrame(l.MTU))
		case l.PFC.Enabled && (l.PFC.XOff <= 0 || l.PFC.XOn >= l.PFC.XOff || l.PFC.XOn < 0):
			add(l.Line, where+".pfc", "%s: want 0 ≤ xon < xoff, got xon %v, xoff %v", desc, l.PFC.XOn, l.PFC.XOff)
		}
		if !okEnds {
			continue
		}
		degree[l.A] = append(degree[l.A], where)
		degree[l.B] = append(degree[l.B], where)
		adj[l.A] = append(adj[l.A], l.B)
		adj[l.B] = append(adj[l.B], l.A)
		for _, pair := range [][2]string{{l.A, l.B}, {l.B, l.A}} {
			if byName[pair[0]].Kind == Host && byName[pair[1]].Kind == Host {
				add(l.Line, where, "links host %s to host %s; a host links to a switch", pair[0], pair[1])
				break
			}
		}
	}
	isolated := map[string]bool{}
	doneHost := map[string]bool{}
	for _, n := range t.Nodes {
		if n.Kind != Host || doneHost[n.Name] {
			continue
		}
		doneHost[n.Name] = true
		switch d := degree[n.Name]; {
		case len(d) == 0:
			add(n.Line, n.Field, "host %s has no link; a host has exactly one link", n.Name)
			isolated[n.Name] = true
		case len(d) > 1:
			add(n.Line, n.Field, "host %s has %d links (%s); a host has exactly one link", n.Name, len(d), strings.Join(d, ", "))
		}
	}
	if !missing && len(t.Nodes) > 0 {
		seen := map[string]bool{t.Nodes[0].Name: true}
		queue := []string{t.Nodes[0].Name}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, m := range adj[n] {
				if !seen[m] {
					seen[m] = true
					queue = append(queue, m)
				}
			}
		}
		var cut []string
		line, field := 0, ""
		for _, n := range t.Nodes {
			if !seen[n.Name] && !isolated[n.Name] {
				if cut == nil {
					line, field = n.Line, n.Field
				}
				cut = append(cut, n.Name)
			}
		}
		if len(cut) > 0 {
			list := cut
			more := ""
			if len(list) > 8 {
				list, more = list[:8], fmt.Sprintf(" and %d more", len(cut)-8)
			}
			add(line, field, "graph is disconnected: %s%s cannot reach %s; want every node connected", strings.Join(list, ", "), more, t.Nodes[0].Name)
		}
	}
	return errs
}

// planLimits checks the topology against the limits of the address plan: the node
// that first exceeds one is named (the loader checks a generator's parameters first, so
// generated nodes alone never exceed them), and so is a switch with more than MaxSwitchPorts links.
func (t *Topology) planLimits(file string) []error {
	var errs []error
	hosts := 0
	for i, n := range t.Nodes {
		if n.Kind == Host {
			hosts++
		}
		if msg := planLimit(hosts, i+1); msg != "" {
			errs = append(errs, posError(file, n.Line, n.Field, fmt.Sprintf("node %s is node %d and host %d: the topology %s", n.Name, i+1, hosts, msg)))
			break
		}
	}
	ports := map[string]int{}
	for _, l := range t.Links {
		for _, e := range []string{l.A, l.B} {
			if ports[e]++; ports[e] == MaxSwitchPorts+1 {
				errs = append(errs, posError(file, l.Line, l.Field, fmt.Sprintf("node %s has more than %d links; a switch has at most %d ports (a MAC carries the port number in 16 bits)", e, MaxSwitchPorts, MaxSwitchPorts)))
			}
		}
	}
	return errs
}

// check validates resolved features (the YAML path checks the same when loading).
func (f Features) check(file string, n *Node) []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, posError(file, n.Line, n.Field, fmt.Sprintf("switch %s: %s: ", n.Name, field)+fmt.Sprintf(format, args...)))
	}
	switch f.ECN.Mode {
	case switchd.ECNOff, "":
	case switchd.ECNStep:
		if f.ECN.K <= 0 {
			add("ecn.k", "must be > 0, got %v", f.ECN.K)
		}
	case switchd.ECNRED:
		if f.ECN.Min < 0 || f.ECN.Max <= f.ECN.Min {
			add("ecn", "want 0 ≤ min < max, got min %v max %v", f.ECN.Min, f.ECN.Max)
		}
		if !(f.ECN.PMax > 0 && f.ECN.PMax <= 1) {
			add("ecn.pmax", "must be in (0, 1], got %v", f.ECN.PMax)
		}
	default:
		add("ecn.mode", "%q: want off, step or red", f.ECN.Mode)
	}
	switch f.INT.Mode {
	case switchd.INTOff, switchd.INTHPCC, "":
	case switchd.INTMPD:
		if f.INT.MPDUnit <= 0 {
			add("int.mpd_unit", "must be > 0, got %v", f.INT.MPDUnit)
		}
	default:
		add("int.mode", "%q: want off, mpd or hpcc", f.INT.Mode)
	}
	switch f.LB.Mode {
	case switchd.LBECMP, switchd.LBSpray, switchd.LBAdaptive, "":
	case switchd.LBFlowlet:
		if f.LB.FlowletGap <= 0 {
			add("lb.flowlet_gap", "must be > 0, got %v", f.LB.FlowletGap)
		}
	default:
		add("lb.mode", "%q: want ecmp, spray, adaptive or flowlet", f.LB.Mode)
	}
	return errs
}

// Limits of the address plan (emulator/plan assigns addresses and MACs from them).
const (
	// MaxHosts is the number of host addresses in the plan's 198.18.0.0/15 (its network
	// and broadcast addresses are not used).
	MaxHosts = 1<<17 - 2
	// MaxNodes is the number of nodes whose MACs are distinct: a MAC carries the node's
	// index in 16 bits.
	MaxNodes = 1 << 16
	// MaxSwitchPorts is the most ports one switch can have: a MAC carries the port's
	// number (1…N) in 16 bits.
	MaxSwitchPorts = 1<<16 - 1
)

// planLimit says which limit of the address plan hosts hosts and nodes nodes in all
// exceed, or "" when they fit.
func planLimit(hosts, nodes int) string {
	switch {
	case hosts > MaxHosts:
		return fmt.Sprintf("gives %d hosts; the address plan (198.18.0.0/15) has %d host addresses", hosts, MaxHosts)
	case nodes > MaxNodes:
		return fmt.Sprintf("gives %d nodes; the address plan numbers at most %d nodes (a MAC carries the node index in 16 bits)", nodes, MaxNodes)
	}
	return ""
}
