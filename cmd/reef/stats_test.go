package main

import (
	"bytes"
	"strings"
	"testing"

	"reef/afpacket"
	"reef/switchd"
	"reef/switchd/shard"
)

// reef stats prints, per port, the frames the emulator lost there outside the model
// (the driver's ring drops and failed writes at that port's interface), and "-" for a
// port the shard carries in memory, which has no interface to lose them at.
func TestPrintStatsShowsLostFrames(t *testing.T) {
	s := &shard.Report{Node: "tor1",
		Ports:  []switchd.PortStats{{Name: "p1", TxPackets: 10}, {Name: "p2", TxPackets: 20}},
		Driver: afpacket.Stats{Ports: []afpacket.PortStats{{Name: "p1", RingDrops: 5, TxErrors: 2}}}}
	cfg := &switchd.Config{Ports: []switchd.PortConfig{{Name: "p1", Peer: "h1:eth0"}, {Name: "p2", Peer: "agg1:p1"}}}
	var out bytes.Buffer
	if err := printStats(&out, s, cfg); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want a title, a header and two ports:\n%s", len(lines), out.String())
	}
	col := -1 // the lost column in a row: "tx pkts" and "tx bytes" are two words each in the header
	for i, f := range strings.Fields(lines[1]) {
		if f == "lost" {
			col = i - 2
		}
	}
	if col < 0 {
		t.Fatalf("no lost column in %q", lines[1])
	}
	for _, want := range []struct{ line, lost string }{{lines[2], "7"}, {lines[3], "-"}} {
		if f := strings.Fields(want.line); len(f) <= col || f[col] != want.lost {
			t.Errorf("row %q: lost %q, want %s", want.line, f[min(col, len(f)-1)], want.lost)
		}
	}
}
