package netns

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"reef/emulator/plan"
)

// TunnelPort is the UDP port reef's VXLAN tunnels use between machines: not the IANA
// 4789, which Docker Swarm's own overlay networks hold (containerlab makes the same
// choice).
const TunnelPort = 14789

// TunnelOverhead is what VXLAN adds on the underlay to every frame: outer IPv4 (20),
// UDP (8), VXLAN (8) and the inner Ethernet header (14).
const TunnelOverhead = 50

// A Tunnel carries one link cut between two machines: a kernel VXLAN device on each
// machine, created in the machine's own namespace (whose underlay it sends on) and
// moved into the namespace of the link's local end under the link's interface name.
type Tunnel struct {
	// VNI identifies the link on the underlay; it is unique among the labs that share
	// the two machines.
	VNI uint32 `json:"vni"`
	// Local and Remote are the two machines' underlay addresses.
	Local  netip.Addr `json:"local"`
	Remote netip.Addr `json:"remote"`
	// Port is the UDP destination port (0: TunnelPort).
	Port int `json:"port,omitempty"`
}

// wireTunnel creates the local end e of cut link l: a VXLAN device to t.Remote with the
// link's device MTU, moved into e's namespace h under e's interface name, offloads off,
// up. The underlay (the device routing to t.Remote) must have room for the device's
// frames plus TunnelOverhead: a smaller one would fragment or drop them silently, the
// failure users of tunnelled labs meet most.
func wireTunnel(l *plan.Link, e plan.Endpoint, h *nsHandle, t Tunnel) error {
	where := fmt.Sprintf("netns: link %s:%s—%s:%s (VNI %d to %s)", l.A.Node, l.A.Iface, l.B.Node, l.B.Iface, t.VNI, t.Remote)
	if !t.Local.Is4() || !t.Remote.Is4() {
		return fmt.Errorf("%s: underlay addresses %s and %s must be IPv4", where, t.Local, t.Remote)
	}
	routes, err := netlink.RouteGet(t.Remote.AsSlice())
	if err != nil || len(routes) == 0 {
		return fmt.Errorf("%s: no route to the other machine: %v", where, err)
	}
	ul, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return fmt.Errorf("%s: underlay device: %w", where, err)
	}
	if need := DeviceMTU(l.MTU) + TunnelOverhead; ul.Attrs().MTU < need {
		return fmt.Errorf("%s: the underlay %s has MTU %d; the link needs %d (its MTU %d, reef's trailer and VXLAN's %d bytes): raise the underlay's MTU or lower the link's",
			where, ul.Attrs().Name, ul.Attrs().MTU, need, routeMTU(l.MTU), TunnelOverhead)
	}
	port := t.Port
	if port == 0 {
		port = TunnelPort
	}
	tmp := fmt.Sprintf("rvx%d", t.VNI)
	vx := &netlink.Vxlan{
		LinkAttrs:    netlink.LinkAttrs{Name: tmp, MTU: DeviceMTU(l.MTU), HardwareAddr: ifaceMAC(e), TxQLen: 1000},
		VxlanId:      int(t.VNI),
		VtepDevIndex: ul.Attrs().Index,
		SrcAddr:      net.IP(t.Local.AsSlice()),
		Group:        net.IP(t.Remote.AsSlice()),
		Port:         port,
		Learning:     false,
	}
	if err := netlink.LinkAdd(vx); err != nil {
		return fmt.Errorf("%s: create: %w", where, err)
	}
	if err := netlink.LinkSetNsFd(vx, h.fd); err != nil {
		_ = netlink.LinkDel(vx)
		return fmt.Errorf("%s: move into %s: %w", where, e.Node, err)
	}
	lk, err := h.nl.LinkByName(tmp)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if err := h.nl.LinkSetName(lk, e.Iface); err != nil {
		return fmt.Errorf("%s: rename to %s: %w", where, e.Iface, err)
	}
	if err := offloadsOff(h.ethFd, e.Iface); err != nil {
		return err
	}
	if err := h.nl.LinkSetUp(lk); err != nil {
		return fmt.Errorf("%s: up: %w", where, err)
	}
	return nil
}
