// Package plan turns a validated topology into a Plan: addresses, MACs, routes with
// ECMP groups, the per-port link parameters each switch needs, and the per-host
// configuration. Every backend (sim, netns, docker) consumes the same Plan.
package plan

import (
	"net/netip"

	"reef/hostd"
	"reef/switchd"
	"reef/units"
)

// Plan is one lab, ready to instantiate.
type Plan struct {
	// Lab is the lab's name; every object a backend creates carries it.
	Lab string `json:"lab"`
	// Hosts and Switches in a stable order (the topology file's, or the generator's).
	Hosts    []Host   `json:"hosts"`
	Switches []Switch `json:"switches"`
	// Links in the topology's order.
	Links []Link `json:"links"`
	// Seed is the seed the plan was built with (switch seeds derive from it).
	Seed uint64 `json:"seed"`

	// g is the routing graph path queries use, built on the first (see graphOf).
	g *graph
}

// Host is one host node.
type Host struct {
	Config hostd.Config `json:"config"`
	// Link is the index in Plan.Links of the host's only link.
	Link int `json:"link"`
}

// Switch is one switch node.
type Switch struct {
	Config switchd.Config `json:"config"`
}

// Endpoint is one end of a link.
type Endpoint struct {
	Node   string  `json:"node"`
	Iface  string  `json:"iface"`
	MAC    [6]byte `json:"mac"`
	IsHost bool    `json:"is_host"`
	// Port is the index of this end in its switch's Config.Ports (-1 for hosts).
	Port int `json:"port"`
}

// Link is a full-duplex link; its parameters hold in both directions.
type Link struct {
	A, B   Endpoint
	Rate   units.Rate  `json:"rate"`
	Delay  units.Time  `json:"delay"`
	Buffer units.Bytes `json:"buffer"`
	MTU    int         `json:"mtu"`
}

// HostByName returns the host called name.
func (p *Plan) HostByName(name string) (*Host, bool) {
	// The routing graph indexes the hosts by name: the analysis looks a host up for
	// every flow of every fair-share call, thousands of times on a large fabric.
	if i, ok := graphOf(p).hosts[name]; ok {
		return &p.Hosts[i], true
	}
	return nil, false
}

// SwitchByName returns the switch called name.
func (p *Plan) SwitchByName(name string) (*Switch, bool) {
	for i := range p.Switches {
		if p.Switches[i].Config.Name == name {
			return &p.Switches[i], true
		}
	}
	return nil, false
}

// HostAddr returns the address of host name.
func (p *Plan) HostAddr(name string) (netip.Addr, bool) {
	h, ok := p.HostByName(name)
	if !ok {
		return netip.Addr{}, false
	}
	return h.Config.Addr, true
}
