package sim

import (
	"fmt"
	"net/netip"

	"reef/emulator/plan"
	"reef/hostd"
	"reef/switchd"
	"reef/units"
)

// testHost attaches a host to switch Sw (index into a chain of switches) with its own
// link parameters.
type testHost struct {
	Name   string
	Sw     int
	Rate   units.Rate
	Delay  units.Time
	Buffer units.Bytes // the switch's egress buffer toward the host
}

// chainPlan builds a plan for hosts hanging off a chain of nsw switches s1-s2-…; the
// chain links have rate, delay and buffer. It is a small planner for these tests only:
// every host gets a /32 route out of the port toward it.
func chainPlan(nsw int, rate units.Rate, delay units.Time, buffer units.Bytes, hosts []testHost, mtu int) *plan.Plan {
	p := &plan.Plan{Lab: "t"}
	mac := func(i int) [6]byte { return [6]byte{2, 0, 0, 0, byte(i >> 8), byte(i)} }
	macN := 1
	addr := map[string]netip.Addr{}
	for i, h := range hosts {
		addr[h.Name] = netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)})
	}
	sws := make([]switchd.Config, nsw)
	for i := range sws {
		sws[i] = switchd.Config{Name: fmt.Sprintf("s%d", i+1), LB: switchd.LBConfig{Mode: switchd.LBECMP}}
	}
	addPort := func(sw int, pc switchd.PortConfig) int {
		pc.Name = fmt.Sprintf("p%d", len(sws[sw].Ports)+1)
		pc.MAC = mac(macN)
		macN++
		pc.MTU = mtu
		sws[sw].Ports = append(sws[sw].Ports, pc)
		return len(sws[sw].Ports) - 1
	}
	// chain links: right port of s_i, left port of s_{i+1}
	right := make([]int, nsw)
	left := make([]int, nsw)
	for i := 0; i+1 < nsw; i++ {
		a := addPort(i, switchd.PortConfig{Peer: sws[i+1].Name, Rate: rate, Delay: delay, Buffer: buffer})
		b := addPort(i+1, switchd.PortConfig{Peer: sws[i].Name, Rate: rate, Delay: delay, Buffer: buffer})
		sws[i].Ports[a].PeerMAC = sws[i+1].Ports[b].MAC
		sws[i+1].Ports[b].PeerMAC = sws[i].Ports[a].MAC
		right[i], left[i+1] = a, b
		p.Links = append(p.Links, plan.Link{
			A:    plan.Endpoint{Node: sws[i].Name, Iface: sws[i].Ports[a].Name, MAC: sws[i].Ports[a].MAC, Port: a},
			B:    plan.Endpoint{Node: sws[i+1].Name, Iface: sws[i+1].Ports[b].Name, MAC: sws[i+1].Ports[b].MAC, Port: b},
			Rate: rate, Delay: delay, Buffer: buffer, MTU: mtu})
	}
	hostPort := map[string]int{}
	for _, h := range hosts {
		hm := mac(macN)
		macN++
		pi := addPort(h.Sw, switchd.PortConfig{Peer: h.Name + ":eth0", PeerIsHost: true, PeerMAC: hm,
			Rate: h.Rate, Delay: h.Delay, IngressDelay: h.Delay, Buffer: h.Buffer})
		hostPort[h.Name] = pi
		p.Hosts = append(p.Hosts, plan.Host{Config: hostd.Config{Name: h.Name, Iface: "eth0", MAC: hm,
			GatewayMAC: sws[h.Sw].Ports[pi].MAC, Addr: addr[h.Name], Rate: h.Rate, MTU: mtu},
			Link: len(p.Links)})
		p.Links = append(p.Links, plan.Link{
			A:    plan.Endpoint{Node: h.Name, Iface: "eth0", MAC: hm, IsHost: true, Port: -1},
			B:    plan.Endpoint{Node: sws[h.Sw].Name, Iface: sws[h.Sw].Ports[pi].Name, MAC: sws[h.Sw].Ports[pi].MAC, Port: pi},
			Rate: h.Rate, Delay: h.Delay, Buffer: h.Buffer, MTU: mtu})
	}
	for i := range sws {
		for _, h := range hosts {
			port := hostPort[h.Name]
			switch {
			case h.Sw > i:
				port = right[i]
			case h.Sw < i:
				port = left[i]
			}
			sws[i].Routes = append(sws[i].Routes, switchd.Route{Prefix: netip.PrefixFrom(addr[h.Name], 32), Ports: []int{port}})
		}
		p.Switches = append(p.Switches, plan.Switch{Config: sws[i]})
	}
	return p
}
