package topo

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"reef/emulator/internal/yamlpos"
	"reef/units"
)

// Generator kinds.
const (
	GenDumbbell    = "dumbbell"
	GenParkingLot  = "parking-lot"
	GenReversePath = "reverse-path"
	GenLeafSpine   = "leaf-spine"
	GenFatTree     = "fat-tree"
)

// Reverse-path bottleneck placements.
const (
	// BottleneckDownlink: reverse senders send to the victim's sender, so the queue forms
	// on its downlink (s1→h1), which carries the victim's ACKs.
	BottleneckDownlink = "downlink"
	// BottleneckCore: reverse senders send to sinks next to the victim's sender, so the
	// queue forms on the inter-switch link in the receiver→sender direction (s2→s1).
	BottleneckCore = "core"
)

// MaxGeneratedHosts bounds a generator's size.
const MaxGeneratedHosts = 100000

// Generator is a generator's resolved parameters. Only the fields of Kind are used.
// Every kind also takes names, a map renaming generated nodes ({h1: vsrc, s1: tor0});
// groups follow the new names.
//
//   - dumbbell: HostsLeft hosts h1…hL on s1, HostsRight hosts on s2, s1–s2 the
//     bottleneck (YAML: hosts (each side) or hosts_left and hosts_right; default 2 each).
//     Classes host, bottleneck. Groups left, right.
//   - parking-lot: a chain s1–s2–…–sHops; switch si has HostsPerSwitch[i-1] hosts,
//     numbered switch by switch (YAML: hops ≥ 2, and hosts (each switch, default 1) or
//     hosts_per_switch: [..]). Classes host, chain. A victim from s1 to sHops crosses
//     every chain link; cross traffic between neighbours loads one link each (Poseidon
//     §6.6: hops 3, hosts_per_switch [1+M, M+N, 1] gives L1 = s1→s2, L2 = s2→s3).
//   - reverse-path: h1 (victim sender) on s1, h2 (victim receiver) on s2, and
//     ReverseSenders hosts h3… on s2 (YAML: reverse_senders, default 4; bottleneck:
//     downlink (default) or core). With downlink the reverse flows go to h1 and queue on
//     s1→h1, which carries the victim's ACKs; with core, ReverseSenders sink hosts on s1
//     receive them and the queue forms on s2→s1 (Poseidon §6.7). Classes host, core.
//     Groups victim-src, victim-dst, reverse-src, reverse-dst.
//   - leaf-spine: Leaves leaves each with HostsPerLeaf hosts, every leaf linked to every
//     spine (Spines equal-cost paths between leaves: MSwift's n paths). Classes host,
//     uplink. Unless classes.uplink.rate is set, the uplink rate is
//     host rate × hosts_per_leaf / (spines × oversubscription), oversubscription default 1.
//   - fat-tree: the k-ary three-tier fat tree (k even): k pods of k/2 ToRs (tor1…) and
//     k/2 aggregation switches (agg1…), (k/2)² cores (core1…), k/2 hosts per ToR; agg j
//     of every pod links to cores j·k/2+1 … (j+1)·k/2. Classes host, tor-agg, agg-core.
//     Groups pod1…podK.
type Generator struct {
	Kind             string
	HostsLeft        int
	HostsRight       int
	Hops             int
	HostsPerSwitch   []int
	ReverseSenders   int
	Bottleneck       string
	Spines           int
	Leaves           int
	HostsPerLeaf     int
	Oversubscription float64
	K                int
}

// generated is a generator's output before link parameters are resolved.
type generated struct {
	spec    Generator
	nodes   []Node
	links   []Link
	groups  map[string][]string
	classes []string
}

// genKeys are the YAML keys each kind accepts (besides kind).
var genKeys = map[string][]string{
	GenDumbbell:    {"hosts", "hosts_left", "hosts_right"},
	GenParkingLot:  {"hops", "hosts", "hosts_per_switch"},
	GenReversePath: {"reverse_senders", "bottleneck"},
	GenLeafSpine:   {"spines", "leaves", "hosts_per_leaf", "oversubscription"},
	GenFatTree:     {"k"},
}

func (r *resolver) generate(raw *rawGenerator) *generated {
	gp := yamlpos.At("generator")
	keys, ok := genKeys[raw.Kind]
	if !ok {
		r.errorf(gp.With("kind"), "%q: want one of dumbbell, parking-lot, reverse-path, leaf-spine, fat-tree", raw.Kind)
		return nil
	}
	bad := false
	for _, k := range mapKeys(r.root, gp) {
		if k != "kind" && k != "names" && !slices.Contains(keys, k) {
			r.errorf(gp.With(k), "not a parameter of generator %s; want %s", raw.Kind, strings.Join(keys, ", "))
			bad = true
		}
	}
	// count reads an optional count parameter with a default and a minimum.
	count := func(v *int, name string, def, min int) int {
		if v == nil {
			return def
		}
		if *v < min || *v > MaxGeneratedHosts {
			r.errorf(gp.With(name), "must be in [%d, %d], got %d", min, MaxGeneratedHosts, *v)
			bad = true
			return def
		}
		return *v
	}
	// limit checks the generated hosts and nodes against the address plan, reporting
	// at field.
	limit := func(field yamlpos.Path, hosts, nodes int) bool {
		if msg := planLimit(hosts, nodes); msg != "" {
			r.errorf(field, "%s", msg)
			return true
		}
		return false
	}
	g := &generated{groups: map[string][]string{}}
	g.spec.Kind = raw.Kind
	line := r.fieldLine(gp)
	b := builder{g: g, line: line}
	switch raw.Kind {
	case GenDumbbell:
		if raw.Hosts != nil && (raw.HostsLeft != nil || raw.HostsRight != nil) {
			r.errorf(gp.With("hosts"), "set hosts (each side) or hosts_left/hosts_right, not both")
			bad = true
		}
		each := count(raw.Hosts, "hosts", 2, 1)
		g.spec.HostsLeft = count(raw.HostsLeft, "hosts_left", each, 1)
		g.spec.HostsRight = count(raw.HostsRight, "hosts_right", each, 1)
		hosts := g.spec.HostsLeft + g.spec.HostsRight
		bad = limit(gp.With(firstSet([]string{"hosts", "hosts_left", "hosts_right"}, raw.Hosts != nil, raw.HostsLeft != nil)), hosts, hosts+2) || bad
		if bad {
			return nil
		}
		b.dumbbell()
	case GenParkingLot:
		hops := count(raw.Hops, "hops", 0, 2)
		if raw.Hops == nil {
			r.errorf(gp, "parking-lot needs hops (switches in the chain, ≥ 2)")
			bad = true
		}
		if raw.Hosts != nil && raw.HostsPerSwitch != nil {
			r.errorf(gp.With("hosts"), "set hosts (each switch) or hosts_per_switch, not both")
			bad = true
		}
		each := count(raw.Hosts, "hosts", 1, 0)
		per := raw.HostsPerSwitch
		if per == nil {
			per = slices.Repeat([]int{each}, max(hops, 0))
		} else if len(per) != hops && !bad {
			r.errorf(gp.With("hosts_per_switch"), "has %d entries; want one per switch (hops = %d)", len(per), hops)
			bad = true
		}
		total := 0
		for i, n := range per {
			if n < 0 || n > MaxGeneratedHosts {
				r.errorf(gp.With("hosts_per_switch", i), "must be in [0, %d], got %d", MaxGeneratedHosts, n)
				bad = true
			}
			total += n
		}
		if total > MaxGeneratedHosts {
			r.errorf(gp.With("hosts_per_switch"), "gives %d hosts; at most %d", total, MaxGeneratedHosts)
			bad = true
		}
		bad = limit(gp.With(firstSet([]string{"hosts_per_switch", "hosts", "hops"}, raw.HostsPerSwitch != nil, raw.Hosts != nil)), total, total+hops) || bad
		if !bad && total == 0 {
			r.errorf(gp, "parking-lot has no hosts; set hosts or hosts_per_switch")
			bad = true
		}
		if bad {
			return nil
		}
		g.spec.Hops, g.spec.HostsPerSwitch = hops, slices.Clone(per)
		b.parkingLot()
	case GenReversePath:
		g.spec.ReverseSenders = count(raw.ReverseSenders, "reverse_senders", 4, 1)
		g.spec.Bottleneck = BottleneckDownlink
		if raw.Bottleneck != nil {
			switch *raw.Bottleneck {
			case BottleneckDownlink, BottleneckCore:
				g.spec.Bottleneck = *raw.Bottleneck
			default:
				r.errorf(gp.With("bottleneck"), "%q: want downlink or core", *raw.Bottleneck)
				bad = true
			}
		}
		hosts := 2 + g.spec.ReverseSenders
		if g.spec.Bottleneck == BottleneckCore {
			hosts += g.spec.ReverseSenders
		}
		bad = limit(gp.With("reverse_senders"), hosts, hosts+2) || bad
		if bad {
			return nil
		}
		b.reversePath()
	case GenLeafSpine:
		g.spec.Spines = count(raw.Spines, "spines", 2, 1)
		g.spec.Leaves = count(raw.Leaves, "leaves", 2, 1)
		g.spec.HostsPerLeaf = count(raw.HostsPerLeaf, "hosts_per_leaf", 2, 1)
		g.spec.Oversubscription = 1
		if raw.Oversubscription != nil {
			if o := *raw.Oversubscription; !(o > 0) || math.IsInf(o, 0) {
				r.errorf(gp.With("oversubscription"), "must be > 0, got %v", o)
				bad = true
			} else {
				g.spec.Oversubscription = o
			}
		}
		if n := g.spec.Leaves * max(g.spec.HostsPerLeaf, g.spec.Spines); n > MaxGeneratedHosts {
			r.errorf(gp, "leaves × max(hosts_per_leaf, spines) = %d; at most %d", n, MaxGeneratedHosts)
			bad = true
		}
		hosts := g.spec.Leaves * g.spec.HostsPerLeaf
		bad = limit(gp, hosts, hosts+g.spec.Leaves+g.spec.Spines) || bad
		if bad {
			return nil
		}
		b.leafSpine()
	case GenFatTree:
		k := count(raw.K, "k", 4, 2)
		if raw.K == nil {
			r.errorf(gp, "fat-tree needs k (the switch radix, even, ≥ 2)")
			bad = true
		} else if k%2 != 0 {
			r.errorf(gp.With("k"), "must be even, got %d", k)
			bad = true
		} else if k*k*k/4 > MaxGeneratedHosts {
			r.errorf(gp.With("k"), "k=%d gives %d hosts; at most %d", k, k*k*k/4, MaxGeneratedHosts)
			bad = true
		} else {
			bad = limit(gp.With("k"), k*k*k/4, k*k*k/4+5*k*k/4) || bad
		}
		if bad {
			return nil
		}
		g.spec.K = k
		b.fatTree()
	}
	r.rename(g, raw.Names)
	return g
}

// firstSet returns the first key whose parameter is set, else the last key: the
// parameter a message about the generator's size names.
func firstSet(keys []string, set ...bool) string {
	for i, ok := range set {
		if ok {
			return keys[i]
		}
	}
	return keys[len(keys)-1]
}

// rename applies generator.names (old → new) to the generated nodes, links and groups.
func (r *resolver) rename(g *generated, names map[string]string) {
	if len(names) == 0 {
		return
	}
	known := map[string]bool{}
	for _, n := range g.nodes {
		known[n.Name] = true
	}
	for _, old := range mapKeys(r.root, yamlpos.At("generator", "names")) {
		if !known[old] {
			r.errorf(yamlpos.At("generator", "names", old), "no generated node %q to rename", old)
		}
	}
	to := func(n string) string {
		if v, ok := names[n]; ok {
			return v
		}
		return n
	}
	for i := range g.nodes {
		g.nodes[i].Name = to(g.nodes[i].Name)
	}
	for i := range g.links {
		g.links[i].A, g.links[i].B = to(g.links[i].A), to(g.links[i].B)
	}
	for k, hosts := range g.groups {
		for i := range hosts {
			hosts[i] = to(hosts[i])
		}
		if nk := to(k); nk != k {
			delete(g.groups, k)
			g.groups[nk] = hosts
		}
	}
}

// leafSpineRates sets the uplink rate from the oversubscription ratio unless the file
// sets classes.uplink.rate (then oversubscription must not be set).
func (r *resolver) leafSpineRates(t *Topology, raw *rawFile) {
	g := t.Generator
	uplinkSet := false
	if c, ok := raw.Classes["uplink"]; ok && c.Rate != nil {
		uplinkSet = true
	}
	if uplinkSet {
		if raw.Generator.Oversubscription != nil {
			r.errorf(yamlpos.At("generator", "oversubscription"), "set either oversubscription or classes.uplink.rate, not both")
		}
		g.Oversubscription = 0 // derived below for information
	}
	var hostRate units.Rate
	for _, l := range t.Links {
		if l.Class == "host" && l.Field == "generator" {
			hostRate = l.Rate
			break
		}
	}
	if uplinkSet {
		for _, l := range t.Links {
			if l.Class == "uplink" {
				g.Oversubscription = float64(hostRate) * float64(g.HostsPerLeaf) / (float64(l.Rate) * float64(g.Spines))
				break
			}
		}
		return
	}
	up := units.Rate(math.Round(float64(hostRate) * float64(g.HostsPerLeaf) / (float64(g.Spines) * g.Oversubscription)))
	if up <= 0 {
		r.errorf(yamlpos.At("generator", "oversubscription"), "gives an uplink rate of %v; want > 0", up)
		return
	}
	for i := range t.Links {
		if t.Links[i].Class == "uplink" {
			t.Links[i].Rate = up
		}
	}
}

// builder appends generated nodes and links.
type builder struct {
	g     *generated
	line  int
	hosts int
}

func (b *builder) node(name string, k Kind) string {
	b.g.nodes = append(b.g.nodes, Node{Name: name, Kind: k, Line: b.line, Field: "generator"})
	return name
}

func (b *builder) host() string {
	b.hosts++
	return b.node("h"+strconv.Itoa(b.hosts), Host)
}

func (b *builder) link(a, c, class string) {
	b.g.links = append(b.g.links, Link{A: a, B: c, Class: class, Line: b.line, Field: "generator"})
}

func (b *builder) group(name string, hosts ...string) {
	b.g.groups[name] = append(b.g.groups[name], hosts...)
}

func indexed(prefix string, i int) string { return prefix + strconv.Itoa(i) }

func (b *builder) dumbbell() {
	s := b.g.spec
	b.g.classes = []string{"host", "bottleneck"}
	s1, s2 := b.node("s1", Switch), b.node("s2", Switch)
	for range s.HostsLeft {
		h := b.host()
		b.group("left", h)
		b.link(h, s1, "host")
	}
	for range s.HostsRight {
		h := b.host()
		b.group("right", h)
		b.link(h, s2, "host")
	}
	b.link(s1, s2, "bottleneck")
}

func (b *builder) parkingLot() {
	s := b.g.spec
	b.g.classes = []string{"host", "chain"}
	sw := make([]string, s.Hops)
	for i := range sw {
		sw[i] = b.node(indexed("s", i+1), Switch)
	}
	for i, n := range s.HostsPerSwitch {
		for range n {
			b.link(b.host(), sw[i], "host")
		}
	}
	for i := 0; i+1 < len(sw); i++ {
		b.link(sw[i], sw[i+1], "chain")
	}
}

func (b *builder) reversePath() {
	s := b.g.spec
	b.g.classes = []string{"host", "core"}
	s1, s2 := b.node("s1", Switch), b.node("s2", Switch)
	src, dst := b.host(), b.host()
	b.group("victim-src", src)
	b.group("victim-dst", dst)
	b.link(src, s1, "host")
	b.link(dst, s2, "host")
	for range s.ReverseSenders {
		h := b.host()
		b.group("reverse-src", h)
		b.link(h, s2, "host")
	}
	if s.Bottleneck == BottleneckCore {
		for range s.ReverseSenders {
			h := b.host()
			b.group("reverse-dst", h)
			b.link(h, s1, "host")
		}
	} else {
		b.group("reverse-dst", src)
	}
	b.link(s1, s2, "core")
}

func (b *builder) leafSpine() {
	s := b.g.spec
	b.g.classes = []string{"host", "uplink"}
	leaves := make([]string, s.Leaves)
	for i := range leaves {
		leaves[i] = b.node(indexed("leaf", i+1), Switch)
	}
	spines := make([]string, s.Spines)
	for i := range spines {
		spines[i] = b.node(indexed("spine", i+1), Switch)
	}
	for _, l := range leaves {
		for range s.HostsPerLeaf {
			b.link(b.host(), l, "host")
		}
	}
	for _, l := range leaves {
		for _, sp := range spines {
			b.link(l, sp, "uplink")
		}
	}
}

func (b *builder) fatTree() {
	k := b.g.spec.K
	half := k / 2
	b.g.classes = []string{"host", "tor-agg", "agg-core"}
	tors := make([]string, k*half)
	aggs := make([]string, k*half)
	cores := make([]string, half*half)
	for i := range tors {
		tors[i] = b.node(indexed("tor", i+1), Switch)
	}
	for i := range aggs {
		aggs[i] = b.node(indexed("agg", i+1), Switch)
	}
	for i := range cores {
		cores[i] = b.node(indexed("core", i+1), Switch)
	}
	for t, tor := range tors {
		for range half {
			h := b.host()
			b.group(fmt.Sprintf("pod%d", t/half+1), h)
			b.link(h, tor, "host")
		}
	}
	for pod := range k {
		for i := range half {
			for j := range half {
				b.link(tors[pod*half+i], aggs[pod*half+j], "tor-agg")
			}
		}
	}
	for pod := range k {
		for j := range half {
			for m := range half {
				b.link(aggs[pod*half+j], cores[j*half+m], "agg-core")
			}
		}
	}
}
