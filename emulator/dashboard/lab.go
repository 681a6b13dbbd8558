package dashboard

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"reef/emulator/netns"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/hostd"
	"reef/switchd"
	"reef/switchd/shard"
	"reef/units"
)

// Lab is a running netns lab: its topology is rebuilt from the lab's state and switch
// configuration files, and its ports' counters come from polling the stats file each
// switchd rewrites (see cmd/switchd). The daemons know no flows, so a Lab shows ports
// only.
type Lab struct {
	dir   string
	every time.Duration

	mu    sync.Mutex
	snap  Snapshot
	n     notifier
	ports []results.Port        // our own records; snapshots get copies of the slice
	index map[string]int        // "switch/port" → index in ports
	seen  map[string]units.Time // switch → time of the last report taken
}

// OpenLab opens lab name under runDir ("" means netns.DefaultRunDir), polling its stats
// files every every (0 means 500 ms) once Run is called.
func OpenLab(runDir, name string, every time.Duration) (*Lab, error) {
	if runDir == "" {
		runDir = netns.DefaultRunDir
	}
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	st, err := netns.ReadState(runDir, name)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	dir := filepath.Join(runDir, name)
	p, err := labPlan(dir, st)
	if err != nil {
		return nil, err
	}
	l := &Lab{dir: dir, every: every, index: map[string]int{}, seen: map[string]units.Time{}}
	l.snap = Snapshot{Title: "lab " + name, Live: true, Plan: p, Note: "netns lab: ports only (flows are not published by the host daemons)"}
	for _, sw := range p.Switches {
		for i, pc := range sw.Config.Ports {
			l.index[sw.Config.Name+"/"+pc.Name] = len(l.ports)
			l.ports = append(l.ports, results.Port{Switch: sw.Config.Name, Port: i, Name: pc.Name, Peer: pc.Peer, Rate: pc.Rate})
		}
	}
	l.poll()
	return l, nil
}

// labPlan rebuilds the lab's graph from state.json's namespaces and each switch's
// configuration file (<dir>/<switch>.json, what switchd was started with).
func labPlan(dir string, st *netns.State) (*plan.Plan, error) {
	p := &plan.Plan{Lab: st.Lab}
	hostIdx := map[string]int{}
	for _, n := range st.Namespaces {
		if n.Switch {
			var cfg switchd.Config
			if err := readJSON(filepath.Join(dir, n.Node+".json"), &cfg); err != nil {
				return nil, err
			}
			p.Switches = append(p.Switches, plan.Switch{Config: cfg})
			continue
		}
		hostIdx[n.Node] = len(p.Hosts)
		p.Hosts = append(p.Hosts, plan.Host{Config: hostd.Config{Name: n.Node}, Link: -1})
	}
	// portOf finds sw's port whose peer is "node:iface".
	portOf := func(sw, peer string) int {
		s, ok := p.SwitchByName(sw)
		if !ok {
			return -1
		}
		for i, pc := range s.Config.Ports {
			if pc.Peer == peer {
				return i
			}
		}
		return -1
	}
	seen := map[string]bool{}
	for _, sw := range p.Switches {
		for i, pc := range sw.Config.Ports {
			node, iface, _ := strings.Cut(pc.Peer, ":")
			a := plan.Endpoint{Node: sw.Config.Name, Iface: pc.Name, Port: i, MAC: pc.MAC}
			b := plan.Endpoint{Node: node, Iface: iface, IsHost: pc.PeerIsHost, Port: -1}
			if !b.IsHost {
				b.Port = portOf(node, sw.Config.Name+":"+pc.Name)
				if b.Port < 0 {
					continue // a dangling port: nothing to draw
				}
				key := min(a.Node+":"+a.Iface, b.Node+":"+b.Iface) + "|" + max(a.Node+":"+a.Iface, b.Node+":"+b.Iface)
				if seen[key] {
					continue
				}
				seen[key] = true
			} else if hi, ok := hostIdx[node]; ok {
				p.Hosts[hi].Link = len(p.Links)
			}
			p.Links = append(p.Links, plan.Link{A: a, B: b, Rate: pc.Rate, Delay: pc.Delay, Buffer: pc.Buffer, MTU: pc.MTU})
		}
	}
	return p, nil
}

// Snapshot implements Source.
func (l *Lab) Snapshot() *Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.snap
	return &s
}

// Changed implements Source.
func (l *Lab) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n.wait()
}

// Run polls the stats files until stop is closed.
func (l *Lab) Run(stop <-chan struct{}) {
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			l.poll()
		}
	}
}

// poll reads every switch's stats file and publishes a snapshot when one was new.
func (l *Lab) poll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed, final, now := false, true, l.snap.Now
	for _, sw := range l.snap.Plan.Switches {
		name := sw.Config.Name
		b, err := os.ReadFile(filepath.Join(l.dir, name+".stats.json"))
		if err != nil {
			final = false
			continue // not written yet, or the lab is going down
		}
		var r shard.Report
		if err := json.Unmarshal(b, &r); err != nil {
			final = false
			continue // caught mid-write by a non-atomic writer: next time
		}
		final = final && r.Final
		if t, ok := l.seen[name]; ok && t == r.Time {
			continue
		}
		l.seen[name] = r.Time
		changed = true
		now = max(now, r.Time)
		for _, ps := range r.Ports {
			i, ok := l.index[name+"/"+ps.Name]
			if !ok {
				continue
			}
			p := &l.ports[i]
			p.Rate = ps.Rate
			p.Close(&ps)
			var delay units.Time
			if ps.Rate > 0 {
				delay = ps.Rate.TxTime(ps.QueueBytes)
			}
			p.Samples = append(p.Samples, results.PortSampleOf(r.Time, &ps, switchd.Depth{Backlog: ps.QueueBytes, Delay: delay}))
		}
	}
	if !changed {
		return
	}
	ports := make([]results.Port, len(l.ports))
	copy(ports, l.ports)
	l.snap.Run = &results.Run{Backend: "netns", Scenario: l.snap.Title, Duration: now, Ports: ports}
	l.snap.Now, l.snap.Live = now, !final
	l.snap.Version++
	l.n.publish()
}
