package hostd

import (
	"net/netip"

	"reef/units"
)

// Config is everything one host needs, produced by the planner (emulator/plan).
type Config struct {
	// Name is the host's node name ("h1").
	Name string `json:"name"`
	// Iface is the host's interface ("eth0"), MAC its address, GatewayMAC the MAC of the
	// switch port it is wired to (every frame the host sends goes there).
	Iface      string  `json:"iface"`
	MAC        [6]byte `json:"mac"`
	GatewayMAC [6]byte `json:"gateway_mac"`
	// Addr is the host's IPv4 address.
	Addr netip.Addr `json:"addr"`
	// Rate is the host NIC's rate (the host link's rate); MTU its MTU.
	Rate units.Rate `json:"rate"`
	MTU  int        `json:"mtu"`
}
