package netns

// Exported building blocks for backends that bring their own namespaces (emulator/docker):
// the namespace is a container's, adopted by PID under the lab's usual name, and then
// wired, addressed and shaped exactly as Up does for its own namespaces. Up still inlines
// the same steps; it can call WireLink and SetupHost instead once nobody else is editing
// it (the code is the same).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"reef/emulator/plan"
)

// NS is an open network namespace of a lab node: pinned while open, with a netlink
// handle and an ethtool socket created inside it.
type NS struct{ h *nsHandle }

// Close releases the namespace's handles (the namespace lives on while it is mounted or
// has processes).
func (n *NS) Close() { n.h.close() }

// AdoptPid makes the network namespace of process pid a named namespace name under
// NetnsDir (a bind mount, as `ip netns attach` does; it fails if name exists), so
// Exec, Command, Capture, Backend.Run and Down find it like one Up created, and opens
// it. IPv6 is left to the caller (a container's sysctls).
func AdoptPid(name string, pid int) (*NS, error) {
	if err := ensureNetnsDir(); err != nil {
		return nil, err
	}
	path := filepath.Join(NetnsDir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return nil, fmt.Errorf("netns: adopt %s: %w", name, err)
	}
	f.Close()
	src := "/proc/" + strconv.Itoa(pid) + "/ns/net"
	if err := unix.Mount(src, path, "none", unix.MS_BIND, ""); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("netns: adopt %s: bind %s: %w", name, src, err)
	}
	h := &nsHandle{name: name}
	if h.fd, err = openNamed(name); err != nil {
		deleteNamed(name)
		return nil, fmt.Errorf("netns: adopt %s: %w", name, err)
	}
	err = inNetns(h.fd, func() error {
		var err error
		if h.nl, err = netlink.NewHandle(); err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
		if h.ethFd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return fmt.Errorf("ethtool socket: %w", err)
		}
		lo, err := h.nl.LinkByName("lo")
		if err != nil {
			return fmt.Errorf("lo: %w", err)
		}
		return h.nl.LinkSetUp(lo)
	})
	if err != nil {
		h.close()
		deleteNamed(name)
		return nil, fmt.Errorf("netns: adopt %s: %w", name, err)
	}
	return &NS{h: h}, nil
}

// DeleteNamed unmounts and removes the named namespace name; a missing one is fine.
func DeleteNamed(name string) error { return deleteNamed(name) }

// WireLink creates link l's veth pair with both ends directly inside a and b (the
// planner's names, MACs and MTU; a switch port gets its shadow MAC), turns every offload
// off on both ends and brings them up: what Up does per link.
func WireLink(l *plan.Link, a, b *NS) error { return wireLink(l, a.h, b.h) }

// wireLink creates link l's veth pair with its ends directly inside ha and hb, turns
// every offload off on both ends and brings them up.
func wireLink(l *plan.Link, ha, hb *nsHandle) error {
	v := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: l.A.Iface, MTU: DeviceMTU(l.MTU), HardwareAddr: ifaceMAC(l.A),
			Namespace: netlink.NsFd(ha.fd), TxQLen: 1000},
		PeerName: l.B.Iface, PeerMTU: uint32(DeviceMTU(l.MTU)), PeerHardwareAddr: ifaceMAC(l.B),
		PeerNamespace: netlink.NsFd(hb.fd),
	}
	if err := netlink.LinkAdd(v); err != nil {
		return fmt.Errorf("netns: link %s:%s—%s:%s: %w", l.A.Node, l.A.Iface, l.B.Node, l.B.Iface, err)
	}
	for _, e := range []struct {
		h  *nsHandle
		ep plan.Endpoint
	}{{ha, l.A}, {hb, l.B}} {
		if err := offloadsOff(e.h.ethFd, e.ep.Iface); err != nil {
			return err
		}
		lk, err := e.h.nl.LinkByName(e.ep.Iface)
		if err != nil {
			return fmt.Errorf("netns: %s:%s: %w", e.ep.Node, e.ep.Iface, err)
		}
		if err := e.h.nl.LinkSetUp(lk); err != nil {
			return fmt.Errorf("netns: %s:%s up: %w", e.ep.Node, e.ep.Iface, err)
		}
	}
	return nil
}

// SetupHost gives host h in n what Up gives every host: its /32, the route to LabNet
// via Gateway, the permanent Gateway neighbour, tbf at the NIC's rate,
// /etc/netns/<namespace>/hosts (contents from HostsFile) and, when cpus are given (the
// lab's State.HostCPUs), its interfaces' receive work steered to them (RPS).
func SetupHost(p *plan.Plan, h *plan.Host, n *NS, hosts []byte, cpus []int) error {
	return setupHost(p, h, n.h, hosts, cpus)
}

// HostsFile is the /etc/hosts naming every host of p.
func HostsFile(p *plan.Plan) []byte { return hostsFile(p) }

// CheckPlan validates the names in p as Up does.
func CheckPlan(p *plan.Plan) error { return checkPlan(p) }

// Parallel runs fn(0..n-1) on up to workers goroutines and returns the errors joined; it
// stops handing out work after an error or when ctx ends.
func Parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	return parallel(ctx, n, workers, fn)
}

// Tune raises the root namespace's netdev backlog as Up does.
func Tune() { tune() }

// WriteState writes st as lab directory dir's intent log (state.json), atomically.
func WriteState(dir string, st *State) error {
	if err := writeJSON(filepath.Join(dir, "state.json"), st); err != nil {
		return fmt.Errorf("netns: write state: %w", err)
	}
	return nil
}

// WriteJSON replaces path atomically with v as indented JSON.
func WriteJSON(path string, v any) error { return writeJSON(path, v) }

// PacketSockets counts the AF_PACKET sockets open in the network namespace of pid
// (from /proc/<pid>/net/packet): a switchd in a container is ready when it has one per
// port.
func PacketSockets(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/packet")
	if err != nil {
		return 0, err
	}
	n := -1 // header line
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return max(n, 0), nil
}
