// Package topo is reef's topology model: the nodes, links and switch features of one lab,
// loaded from a YAML file (topologies/*.yaml) or an experiment file that embeds one,
// expanded from a generator when the file uses one, and validated. It is the first step
// of a run: topo → plan (emulator/plan) → backend.
//
// Loading is pure: no root, no netlink, no network. Every problem in a file is reported,
// each naming the file, line and field and saying what was expected (an *Error), joined
// with errors.Join in line order. YAML syntax errors, unknown fields and wrong types
// stop decoding at the first one (goccy/go-yaml reports one), as "file:line:col: msg".
//
// # Usage
//
//	t, err := topo.Load("topologies/fat-tree-k4.yaml")
//	if err != nil { return err } // file:line: field: problem, one per line
//	p, err := plan.Build(t, plan.Options{Seed: 1})
//
// # File format (every key, for illustration)
//
//	name: fat-tree-k4          # lab name: [a-z0-9-], at most 12 characters
//	defaults:                  # link defaults (built-in: 1Gbps, 10us, 100KB, MTU 1500)
//	  rate: 100Mbps
//	  delay: 10us
//	  buffer: 100KB
//	  mtu: 1500
//	  pfc: {xoff: 60KB, xon: 30KB}   # optional: lossless links (PFC on switch ingress;
//	                                 # xon defaults to xoff/2)
//	classes:                   # optional link classes: override the defaults per class
//	  bottleneck: {rate: 50Mbps}
//	nodes:                     # explicit nodes …
//	  - {name: h1, kind: host}
//	  - {name: s1, kind: switch}
//	links:                     # … and links: brief form or long form
//	  - [h1, s1]
//	  - {a: s1, b: s2, class: bottleneck, delay: 5us}
//	generator:                 # … or a generator (nodes and links then add to it)
//	  kind: fat-tree
//	  k: 4
//	  names: {h1: vsrc}        # optional: rename generated nodes
//	overrides:                 # change generated (or explicit) links; a and b may be
//	  - {a: agg1, b: core1, delay: 100us}   # globs, class narrows to one class
//	  - {class: host, buffer: 1MB}
//	switches:                  # per-switch features by name or glob
//	  "*": {ecn: {mode: step, k: 30KB}, int: {mode: mpd, mpd_unit: 256ns}, lb: {mode: ecmp}}
//
// A link's parameters are inherited along one path: built-in defaults → defaults →
// class (classes[link class]) → the link's own fields → overrides, in file order.
// Switch feature blocks apply glob entries first, in file order, then exact names; each
// of ecn, int and lb is replaced whole by a later matching entry.
//
// Generators (see Generator for every parameter) name hosts h1…hN and switches by role
// and index (s1, tor1, agg1, core1, leaf1, spine1), and label their links with classes
// (host for host links, plus bottleneck, chain, core, uplink, tor-agg, agg-core) so a
// file can set each tier's rate, delay and buffer under classes.
//
// # Limitations
//
// Nodes have no per-node interface names: hosts have one interface (eth0) and switch
// ports are numbered p1…pN in link order by the planner.
package topo

import (
	"slices"

	"reef/switchd"
	"reef/units"
)

// Kind is a node's kind.
type Kind string

// Node kinds.
const (
	Host   Kind = "host"
	Switch Kind = "switch"
)

// Topology is one validated lab: nodes and links with every parameter resolved.
type Topology struct {
	// Name is the lab's name; it prefixes every object a backend creates.
	Name string
	// File is the file the topology was read from (for messages).
	File string
	// Generator is the generator the file used, nil for explicit topologies.
	Generator *Generator
	// Nodes in a stable order: generated nodes first, then the file's nodes.
	Nodes []Node
	// Links in a stable order: generated links first, then the file's links. Switch
	// ports are numbered in this order.
	Links []Link
	// Groups names sets of hosts: one group per switch with hosts (the switch's name:
	// its hosts), plus the generator's roles (dumbbell: left, right; reverse-path:
	// victim-src, victim-dst, reverse-src, reverse-dst; fat-tree: pod1…podK).
	Groups map[string][]string
}

// Node is one host or switch.
type Node struct {
	Name string
	Kind Kind
	// Features are the switch's resolved features (zero for hosts).
	Features Features
	// Line is where the node was defined (its entry in nodes, or the generator).
	Line int
	// Field names the node's definition for messages ("nodes[3]", "generator").
	Field string
}

// Features are the per-switch pipeline features a file sets under switches.
type Features struct {
	ECN switchd.ECNConfig
	INT switchd.INTConfig
	LB  switchd.LBConfig
}

// DefaultFeatures are a switch's features when no switches entry matches it: no ECN,
// no INT, per-flow ECMP.
var DefaultFeatures = Features{
	ECN: switchd.ECNConfig{Mode: switchd.ECNOff},
	INT: switchd.INTConfig{Mode: switchd.INTOff},
	LB:  switchd.LBConfig{Mode: switchd.LBECMP},
}

// DefaultMPDUnit is the MPD unit used when a file turns on INT mode mpd without
// mpd_unit (Poseidon's 256 ns; an experiment's time scale multiplies it).
const DefaultMPDUnit = 256 * units.Nanosecond

// Params are a link's parameters; they hold in both directions.
type Params struct {
	Rate   units.Rate
	Delay  units.Time
	Buffer units.Bytes
	MTU    int
	// PFC is the lossless configuration applied to the switch ends of the link.
	PFC switchd.PFCConfig
}

// DefaultParams are the built-in link defaults a file's defaults block overrides.
var DefaultParams = Params{
	Rate:   units.Gbps,
	Delay:  10 * units.Microsecond,
	Buffer: 100 * units.Kilobyte,
	MTU:    1500,
}

// Link is a full-duplex link between nodes A and B.
type Link struct {
	A, B string
	// Class is the link's class (generator tier or the file's class), "" for none.
	Class string
	Params
	// Line is where the link was defined (its entry in links, or the generator).
	Line int
	// Field names the link's definition for messages ("links[2]", "generator").
	Field string
}

// NodeByName returns the node called name.
func (t *Topology) NodeByName(name string) (*Node, bool) {
	for i := range t.Nodes {
		if t.Nodes[i].Name == name {
			return &t.Nodes[i], true
		}
	}
	return nil, false
}

// Hosts returns the host names in node order.
func (t *Topology) Hosts() []string { return t.names(Host) }

// Switches returns the switch names in node order.
func (t *Topology) Switches() []string { return t.names(Switch) }

func (t *Topology) names(k Kind) []string {
	var out []string
	for _, n := range t.Nodes {
		if n.Kind == k {
			out = append(out, n.Name)
		}
	}
	return out
}

// Scale returns a copy of t with every link delay multiplied by τ and every link rate
// divided by τ (DESIGN principle 4: paper units in, laptop units out). Buffers, MTUs,
// and feature thresholds in bytes are unchanged; INT MPD units and flowlet gaps (times)
// are multiplied by τ.
func (t *Topology) Scale(ts units.TimeScale) *Topology {
	c := *t
	c.Nodes = slices.Clone(t.Nodes)
	c.Links = slices.Clone(t.Links)
	for i := range c.Links {
		l := &c.Links[i]
		l.Delay = ts.Time(l.Delay)
		l.Rate = ts.Rate(l.Rate)
	}
	for i := range c.Nodes {
		f := &c.Nodes[i].Features
		f.INT.MPDUnit = ts.Time(f.INT.MPDUnit)
		f.LB.FlowletGap = ts.Time(f.LB.FlowletGap)
	}
	return &c
}
