package shard

import (
	"encoding/json"
	"testing"

	"reef/emulator/plan"
	"reef/emulator/topo"
	"reef/units"
)

const testTopo = `name: t
defaults: {rate: 100Mbps, delay: 10us, buffer: 100KB, mtu: 1500}
generator: {kind: dumbbell, hosts: 1}
`

// TestEventsAndSamples drives a shard of one switch as the driver would (Poll at
// increasing times, with the run's time zero 1 ms after the lab's) and checks that the
// timeline events reach the switch at their run times and that samples are taken once
// per interval and the snapshots at the window's edges once each, at exactly their run
// times (they are events of the shard's engine).
func TestEventsAndSamples(t *testing.T) {
	tp, err := topo.Parse("t.yaml", []byte(testTopo))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.Switches[0].Config
	var events []PortEvent
	if err := json.Unmarshal([]byte(`[
		{"switch": "`+cfg.Name+`", "port": 0, "at": "5ms", "kind": "rate", "rate": "10Mbps"},
		{"switch": "`+cfg.Name+`", "port": 1, "at": "8ms", "kind": "down"},
		{"switch": "other", "port": 7, "at": "1ms", "kind": "down"}]`), &events); err != nil {
		t.Fatal(err)
	}
	off := units.Millisecond
	sc := Single(cfg)
	edges := []units.Time{2500 * units.Microsecond, 9500 * units.Microsecond, 20 * units.Millisecond}
	n, err := New(&sc, Run{Offset: off, SampleInterval: units.Millisecond, Events: events, Edges: edges})
	if err != nil {
		t.Fatal(err)
	}
	sw := n.Switch(0)
	var sawRate, sawDown units.Time
	for lab := units.Time(0); lab <= 11*units.Millisecond+100*units.Microsecond; lab += 37 * units.Microsecond {
		if d, next := n.NextDeadline(), (lab-off)/units.Millisecond*units.Millisecond+units.Millisecond+off; lab >= off && d > next {
			t.Fatalf("at %v: deadline %v after the next sample's %v", lab, d, next)
		}
		for {
			if _, ok := n.Poll(lab); !ok {
				break
			}
		}
		st := sw.Stats()
		if sawRate == 0 && st[0].Rate == 10*units.Mbps {
			sawRate = lab - off
		}
		if sawDown == 0 && !st[1].Up {
			sawDown = lab - off
		}
	}
	if sawRate < 5*units.Millisecond || sawRate > 5*units.Millisecond+37*units.Microsecond {
		t.Errorf("rate change seen at run time %v, want 5ms (one poll step late at most)", sawRate)
	}
	if sawDown < 8*units.Millisecond || sawDown > 8*units.Millisecond+37*units.Microsecond {
		t.Errorf("port down seen at run time %v, want 8ms", sawDown)
	}
	for i, pt := range n.Samples(0, 11*units.Millisecond).Ports {
		// The run stops at run time 10.1ms: the 20ms snapshot is never taken.
		if len(pt.Edges) != 2 || pt.Edges[0].T != edges[0] || pt.Edges[1].T != edges[1] {
			t.Errorf("port %d: edges %+v; want exact snapshots at run times %v and %v", i, pt.Edges, edges[0], edges[1])
		}
		if len(pt.Samples) != 11 {
			t.Fatalf("port %d: %d samples, want 11 (run time 0..10ms)", i, len(pt.Samples))
		}
		for k, s := range pt.Samples {
			want := units.Time(k) * units.Millisecond
			if s.T != want {
				t.Errorf("port %d sample %d at %v, want %v", i, k, s.T, want)
			}
		}
	}
}
