package switchd

import (
	"net/netip"

	"reef/units"
)

// Config is everything one switch needs, produced by the planner (emulator/plan) and
// handed to the daemon as JSON or to the sim backend as a value. Port indices used in
// Routes and Pins index Ports.
type Config struct {
	// Name is the switch's node name ("tor1").
	Name string `json:"name"`
	// Ports are the switch's ports, in a fixed order.
	Ports []PortConfig `json:"ports"`
	// Routes map destination prefixes to ECMP groups of ports (longest prefix wins).
	Routes []Route `json:"routes"`
	// Pins force matching flows onto one port, overriding load balancing (a background
	// flow pinned to one path, as in the MSwift scenarios).
	Pins []Pin `json:"pins,omitempty"`
	// LB is how a packet picks among the ports of its route's group.
	LB LBConfig `json:"lb"`
	// ECN is the switch-wide marking policy; a port may override it.
	ECN ECNConfig `json:"ecn"`
	// INT is the switch's in-band telemetry mode.
	INT INTConfig `json:"int"`
	// Seed drives the switch's random choices (spraying, RED, tie-breaks).
	Seed uint64 `json:"seed"`
	// Buffers is the number of frame buffers allocated when the switch is built (0:
	// enough for every port's full queue and flight, at most 1024); more are allocated
	// when a burst needs them. A daemon wants them up front, off its packet path; the
	// sim, which builds every switch of a lab for each run, sets a few.
	Buffers int `json:"-"`
	// Snap, when > 0, is how many bytes of each frame the switch stores: a frame is
	// held truncated after its headers, and its length (what it costs in time, buffer
	// and counters) is the Ethernet header plus its IPv4 total length (wire.FrameLen).
	// The sim stores frames so, as its payloads carry nothing: a frame takes a few
	// hundred bytes of memory, not an MTU. It must hold every frame's headers
	// (wire.MaxHeaders of the lab's INT slots; at least wire.MinSnap); 0 stores whole
	// frames, as a daemon must.
	Snap int `json:"-"`
}

// PortConfig describes one port and the link behind it. Rate, Delay and Buffer shape the
// egress direction (switch → peer). IngressDelay is applied to frames arriving on the port
// before they enter the pipeline: it carries the propagation delay of a link whose far
// end (a host) shapes only the rate.
type PortConfig struct {
	// Name is the interface name in the switch's namespace ("p1").
	Name string `json:"name"`
	// MAC is this port's MAC; PeerMAC the MAC frames leaving the port are sent to.
	MAC     [6]byte `json:"mac"`
	PeerMAC [6]byte `json:"peer_mac"`
	// Peer names the node and interface at the far end ("h1:eth0"), for display.
	Peer string `json:"peer"`
	// PeerIsHost is true when the far end is a host.
	PeerIsHost bool `json:"peer_is_host"`
	// Rate is the egress link rate, Delay its one-way propagation delay, Buffer the
	// egress queue's capacity in bytes (tail drop beyond it), MTU the link's MTU.
	Rate   units.Rate  `json:"rate"`
	Delay  units.Time  `json:"delay"`
	Buffer units.Bytes `json:"buffer"`
	MTU    int         `json:"mtu"`
	// IngressDelay delays frames arriving on this port (see the type's doc).
	IngressDelay units.Time `json:"ingress_delay"`
	// ECN overrides the switch's marking policy for this port when non-nil.
	ECN *ECNConfig `json:"ecn,omitempty"`
	// PFC configures priority flow control on this port's ingress (off when zero).
	PFC PFCConfig `json:"pfc"`
}

// Route sends packets for Prefix out of one of Ports (an ECMP group when more than one).
type Route struct {
	Prefix netip.Prefix `json:"prefix"`
	Ports  []int        `json:"ports"`
}

// Pin sends packets matching Src, Dst (and SrcPort when non-zero) out of Port.
type Pin struct {
	Src     netip.Addr `json:"src"`
	Dst     netip.Addr `json:"dst"`
	SrcPort uint16     `json:"src_port,omitempty"`
	Port    int        `json:"port"`
}

// LB modes.
const (
	LBECMP     = "ecmp"     // per flow, 5-tuple hash
	LBSpray    = "spray"    // per packet, uniform random
	LBAdaptive = "adaptive" // per packet, least-loaded quantised queue, random tie-break
	LBFlowlet  = "flowlet"  // per flowlet, new choice after an idle gap
)

// LBConfig selects load balancing.
type LBConfig struct {
	// Mode is one of ecmp (default), spray, adaptive, flowlet.
	Mode string `json:"mode"`
	// FlowletGap is the idle gap that starts a new flowlet (flowlet mode).
	FlowletGap units.Time `json:"flowlet_gap,omitempty"`
	// Quantum is the queue quantisation step for adaptive routing (mswift.md §4): the
	// level of a port is backlog / Quantum. Zero uses htsim's four levels by fraction of
	// the port's buffer (below 5 %, 10 %, 20 %, and above).
	Quantum units.Bytes `json:"quantum,omitempty"`
}

// ECN modes.
const (
	ECNOff  = "off"
	ECNStep = "step" // mark when the queue exceeds K (DCTCP)
	ECNRED  = "red"  // mark with probability rising from 0 at Min to PMax at Max
)

// ECNConfig is a marking policy on the instantaneous egress queue at enqueue.
type ECNConfig struct {
	Mode string      `json:"mode"`
	K    units.Bytes `json:"k,omitempty"`
	Min  units.Bytes `json:"min,omitempty"`
	Max  units.Bytes `json:"max,omitempty"`
	PMax float64     `json:"pmax,omitempty"`
}

// INT modes.
const (
	INTOff  = "off"
	INTMPD  = "mpd"  // Poseidon: 16-bit max-per-hop queueing delay
	INTHPCC = "hpcc" // per-hop records (queue length, tx bytes, timestamp, link rate)
)

// INTConfig selects the switch's INT mode.
type INTConfig struct {
	Mode string `json:"mode"`
	// MPDUnit is the time one unit of the 16-bit MPD field stands for (e.g. 256ns in
	// the paper; scaled by the experiment's time scale).
	MPDUnit units.Time `json:"mpd_unit,omitempty"`
}

// PFCConfig turns on lossless operation for a port's ingress: when the bytes that
// arrived on this port and still wait in the switch exceed XOff, the upstream is paused
// until they fall below XOn.
type PFCConfig struct {
	Enabled bool        `json:"enabled"`
	XOff    units.Bytes `json:"xoff,omitempty"`
	XOn     units.Bytes `json:"xon,omitempty"`
}
