package main

// This file adds what a run needs from a switch daemon besides forwarding: the per-port
// time series (sampled on the datapath thread every --sample-interval of run time) and
// the scenario's timeline events (link rate changes, links going down and up), applied
// at their run times from the datapath thread. Both hang off runNode, which wraps the
// switch as the driver's node, so the pipeline is only ever touched by one thread.

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"reef/emulator/netns"
	"reef/emulator/results"
	"reef/switchd"
	"reef/units"
)

var (
	samplesPath    = flag.String("samples", "", "write the run's per-port samples and final counters (JSON) here on exit; {node} is replaced by the switch's name")
	sampleInterval = flag.Duration("sample-interval", 0, "sample every port this often (run time); 0: no time series")
	runEpoch       = flag.Int64("run-epoch", -1, "the run's time zero, CLOCK_MONOTONIC ns (default: --epoch)")
	eventsPath     = flag.String("events", "", "timeline events (JSON []PortEvent; entries for other switches are ignored)")
)

// PortEvent and Samples are the files' formats, shared with the controller (netns).
type (
	PortEvent = netns.PortEvent
	Samples   = netns.SwitchSamples
)

// runNode is the driver's node: the switch, plus the run's sampler and timeline. Its
// methods run on the datapath thread only.
type runNode struct {
	sw  *switchd.Switch
	off units.Time // lab time of run time 0
	// events are this switch's, sorted by At; next is the first not yet applied.
	events []PortEvent
	next   int
	// interval is the sample interval (0: none); nextSample the lab time of the next.
	interval   units.Time
	nextSample units.Time
	due        units.Time // min(next event, next sample) in lab time
	ports      []results.Port
	depths     []switchd.Depth
	stats      []switchd.PortStats
}

// newRunNode reads the run flags. epoch is the lab clock's epoch.
func newRunNode(sw *switchd.Switch, cfg *switchd.Config, epoch int64) (*runNode, error) {
	n := &runNode{sw: sw, interval: units.Time(*sampleInterval)}
	if *runEpoch >= 0 {
		n.off = units.Time(*runEpoch - epoch)
	}
	if *eventsPath != "" {
		b, err := os.ReadFile(*eventsPath)
		if err != nil {
			return nil, fmt.Errorf("switchd: events: %w", err)
		}
		var all []PortEvent
		if err := json.Unmarshal(b, &all); err != nil {
			return nil, fmt.Errorf("switchd: events %s: %w", *eventsPath, err)
		}
		for _, e := range all {
			if e.Switch != cfg.Name {
				continue
			}
			if e.Port < 0 || e.Port >= len(cfg.Ports) {
				return nil, fmt.Errorf("switchd: events %s: switch %s has no port %d", *eventsPath, cfg.Name, e.Port)
			}
			switch e.Kind {
			case "rate", "down", "up":
			default:
				return nil, fmt.Errorf("switchd: events %s: unknown kind %q (want rate, down or up)", *eventsPath, e.Kind)
			}
			n.events = append(n.events, e)
		}
		sort.SliceStable(n.events, func(i, j int) bool { return n.events[i].At < n.events[j].At })
	}
	for i, p := range cfg.Ports {
		n.ports = append(n.ports, results.Port{Switch: cfg.Name, Port: i, Name: p.Name, Peer: p.Peer, Rate: p.Rate,
			Samples: make([]results.PortSample, 0, sampleCap(*sampleInterval))})
	}
	n.nextSample = n.off
	n.setDue()
	return n, nil
}

func (n *runNode) setDue() {
	n.due = units.Never
	if n.next < len(n.events) {
		n.due = n.events[n.next].At + n.off
	}
	if n.interval > 0 {
		n.due = min(n.due, n.nextSample)
	}
}

// catchUp applies the events and takes the samples due at or before t (lab time).
func (n *runNode) catchUp(t units.Time) {
	if t < n.due {
		return
	}
	for n.next < len(n.events) && n.events[n.next].At+n.off <= t {
		e := n.events[n.next]
		at := e.At + n.off
		switch e.Kind {
		case "rate":
			n.sw.SetPortRate(at, e.Port, e.Rate)
		case "down":
			n.sw.SetPortUp(at, e.Port, false)
		case "up":
			n.sw.SetPortUp(at, e.Port, true)
		}
		n.next++
	}
	if n.interval > 0 && t >= n.nextSample {
		n.sample(t)
		for n.nextSample <= t {
			n.nextSample += n.interval
		}
	}
	n.setDue()
}

func (n *runNode) sample(t units.Time) {
	n.depths = n.sw.Depths(t, n.depths[:0])
	n.stats = n.sw.AppendStats(n.stats[:0])
	for i := range n.ports {
		n.ports[i].Samples = append(n.ports[i].Samples, results.PortSampleOf(t-n.off, &n.stats[i], n.depths[i]))
	}
}

// Receive, NextDeadline and Poll make runNode an afpacket.Node.
func (n *runNode) Receive(now units.Time, port int, frame []byte) {
	n.catchUp(now)
	n.sw.Receive(now, port, frame)
}

func (n *runNode) NextDeadline() units.Time { return min(n.sw.NextDeadline(), n.due) }

func (n *runNode) Poll(now units.Time) (switchd.Out, bool) {
	n.catchUp(now)
	return n.sw.Poll(now)
}

// writeSamples writes the samples file (after the driver stopped) at lab time now.
func (n *runNode) writeSamples(node string, now units.Time) error {
	if *samplesPath == "" {
		return nil
	}
	stats := n.sw.Stats()
	s := Samples{Node: node, Time: now - n.off, Ports: n.ports}
	for i := range s.Ports {
		s.Ports[i].Close(&stats[i])
	}
	b, err := json.Marshal(&s)
	if err != nil {
		return fmt.Errorf("switchd: samples: %w", err)
	}
	return writeFile(strings.ReplaceAll(*samplesPath, "{node}", node), b)
}

// sampleCap guesses how many samples a run takes, to allocate once.
func sampleCap(interval time.Duration) int {
	if interval <= 0 {
		return 0
	}
	return int(min(10*time.Second/interval, 1<<16))
}
