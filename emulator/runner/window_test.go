package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"reef/emulator/analysis"
)

// windowed is a fat-tree k=4 run on the sim whose measurement window is its last
// millisecond, with one flow stopping inside it; ${si} is the sample interval.
const windowed = `name: window
topology:
  name: window
  defaults: {rate: 10Gbps, delay: 1us, buffer: 256KB, mtu: 1500}
  generator: {kind: fat-tree, k: 4}
switches:
  "*": {ecn: {mode: step, k: 60KB}}
duration: 3ms
warmup: 2ms
sample_interval: SI
seed: 2
defaults: {cc: dctcp}
flows:
  - {group: incast, count: 6, src: "h{i+1}", dst: h1}
  - {group: cross, count: 4, src: "h{i+8}", dst: "h{i+12}"}
  - {name: leaver, src: h7, dst: h16, stop: 2.5ms}
`

// TestWindowFiguresIgnoreSampleInterval runs one experiment at a 10 µs and a 1 ms
// sample interval: every flow's goodput and every port's utilisation, drops and marks
// over the measurement window are the same to the bit (they come from exact counters at
// the window's edges), and only the coarse run warns that its plots are coarse. Before,
// goodput was read from the samples, and the 1 ms run reported 0 for every flow.
func TestWindowFiguresIgnoreSampleInterval(t *testing.T) {
	dir := t.TempDir()
	var sums []*analysis.Summary
	for _, si := range []string{"10us", "1ms"} {
		o, err := Run(context.Background(), write(t, dir, strings.Replace(windowed, "SI", si, 1)),
			Options{Backend: "sim", OutDir: filepath.Join(dir, si), NoFigures: true})
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, o.Summaries[0])
	}
	fine, coarse := sums[0], sums[1]
	for i, f := range fine.Flows {
		c := coarse.Flows[i]
		if f.GoodputBps != c.GoodputBps || f.GoodputBps <= 0 {
			t.Errorf("%s: goodput %.0f bit/s at a 10µs sample interval, %.0f at 1ms; want the same, > 0", f.Name, f.GoodputBps, c.GoodputBps)
		}
	}
	busy := 0
	for i, q := range fine.Queues {
		c := coarse.Queues[i]
		if q.Utilisation != c.Utilisation || q.Drops != c.Drops || q.Marks != c.Marks {
			t.Errorf("%s: utilisation %v, drops %d, marks %d at 10µs; %v, %d, %d at 1ms", q.Name, q.Utilisation, q.Drops, q.Marks, c.Utilisation, c.Drops, c.Marks)
		}
		if q.Utilisation > 0.5 && q.Marks > 0 {
			busy++
		}
	}
	if busy == 0 {
		t.Error("no port was busy and marking in the window: the test shows nothing")
	}
	if len(fine.Warnings) != 0 {
		t.Errorf("the 10µs run warns: %q", fine.Warnings)
	}
	if len(coarse.Warnings) != 1 || !strings.Contains(coarse.Warnings[0], "sample interval 1ms leaves 1 samples") {
		t.Errorf("the 1ms run's warnings %q; want one about its sample interval", coarse.Warnings)
	}
}
