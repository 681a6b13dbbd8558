package shard

import (
	"reef/afpacket"
	"reef/emulator/results"
	"reef/switchd"
	"reef/units"
)

// This file holds the switch daemon's file contracts besides its Config: what it reads
// for a run (PortEvent) and what it writes (Report, Samples). The controller (the netns
// and docker backends), `reef stats` and the dashboard read them from here.

// Report is what a switch's stats file holds ({node}.stats.json), rewritten every stats
// interval and a last time on exit.
type Report struct {
	Node string `json:"node"`
	// Shard names the daemon that runs the switch.
	Shard string `json:"shard,omitempty"`
	// Time is the lab time of the snapshot.
	Time units.Time `json:"time"`
	// Final is true for the snapshot written on exit.
	Final bool `json:"final"`
	// Ports are the pipeline's counters, in port order.
	Ports []switchd.PortStats `json:"ports"`
	// Driver holds the I/O driver's counters: its wakeups (shared by the shard's
	// switches) and, in Ports, those of this switch's external ports only.
	Driver afpacket.Stats `json:"driver"`
}

// PortEvent is a timeline event for one switch port, in run time (a link's rate
// changing, a link going down or up), as the daemon reads it from its --events file.
type PortEvent struct {
	Switch string     `json:"switch"`
	Port   int        `json:"port"`
	At     units.Time `json:"at"`
	Kind   string     `json:"kind"`
	Rate   units.Rate `json:"rate,omitempty"`
}

// PortEvent kinds.
const (
	EventRate = "rate"
	EventDown = "down"
	EventUp   = "up"
)

// Samples is what the daemon writes to a switch's --samples file ({node}.samples.json)
// on exit: every port's time series, final counters and lateness.
type Samples struct {
	Node  string         `json:"node"`
	Time  units.Time     `json:"time"`
	Ports []results.Port `json:"ports"`
}
