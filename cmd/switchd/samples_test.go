package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"reef/emulator/plan"
	"reef/emulator/topo"
	"reef/switchd"
	"reef/units"
)

const testTopo = `name: t
defaults: {rate: 100Mbps, delay: 10us, buffer: 100KB, mtu: 1500}
generator: {kind: dumbbell, hosts: 1}
`

// TestRunNodeEventsAndSamples drives the wrapper as the driver would (Poll at
// increasing times, with the run's time zero 1 ms after the lab's) and checks that the
// timeline events reach the switch at their run times and that samples are taken once
// per interval, in run time.
func TestRunNodeEventsAndSamples(t *testing.T) {
	tp, err := topo.Parse("t.yaml", []byte(testTopo))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.Switches[0].Config
	sw, err := switchd.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(t.TempDir(), "events.json")
	if err := os.WriteFile(events, []byte(`[
		{"switch": "`+cfg.Name+`", "port": 0, "at": "5ms", "kind": "rate", "rate": "10Mbps"},
		{"switch": "`+cfg.Name+`", "port": 1, "at": "8ms", "kind": "down"},
		{"switch": "other", "port": 7, "at": "1ms", "kind": "down"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	const epoch = 1_000_000_000
	*sampleInterval, *runEpoch, *eventsPath = time.Millisecond, epoch+int64(time.Millisecond), events
	t.Cleanup(func() { *sampleInterval, *runEpoch, *eventsPath = 0, -1, "" })
	n, err := newRunNode(sw, &cfg, epoch)
	if err != nil {
		t.Fatal(err)
	}
	off := units.Millisecond
	var sawRate, sawDown units.Time
	for lab := units.Time(0); lab <= 11*units.Millisecond+100*units.Microsecond; lab += 37 * units.Microsecond {
		if d := n.NextDeadline(); d != units.Never && d > lab+37*units.Microsecond {
			// the deadline is never later than the next event or sample
			if d > n.due {
				t.Fatalf("deadline %v after the wrapper's own %v", d, n.due)
			}
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
	for i, pt := range n.ports {
		if len(pt.Samples) != 11 {
			t.Fatalf("port %d: %d samples, want 11 (run time 0..10ms)", i, len(pt.Samples))
		}
		for k, s := range pt.Samples {
			want := units.Time(k) * units.Millisecond
			if s.T < want || s.T >= want+37*units.Microsecond {
				t.Errorf("port %d sample %d at %v, want within one poll step after %v", i, k, s.T, want)
			}
		}
	}
}
