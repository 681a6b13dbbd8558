package switchd

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"reef/units"
	"reef/wire"
)

// A switch that stores frames truncated after their headers (Config.Snap, the sim's
// way) schedules, marks, stamps and counts every frame exactly as one that stores them
// whole: the frames it sends are the whole switch's, cut at the snap length, and its
// port counters are the same.
func TestSnapChangesNothing(t *testing.T) {
	cfg := testConfig(3)
	cfg.ECN = ECNConfig{Mode: ECNStep, K: 3000}
	cfg.INT = INTConfig{Mode: INTHPCC}
	cfg.Ports[1].Buffer = 40 * units.Kilobyte // tail drops too
	snap := cfg
	snap.Snap = wire.MaxHeaders(2)
	var in []arrival
	for i := range 40 {
		size := 1500 - 37*(i%5)
		f := pk{flags: wire.FlagINT, hopcap: 2, ecn: wire.ECT0, size: size, sport: uint16(40000 + i%3)}.build(t)
		in = append(in, arrival{at: units.Time(i) * units.Microsecond, port: i % 2 * 2, frame: f})
	}
	in = append(in, arrival{at: 50 * units.Microsecond, port: 0, frame: pauseFrame(3)})
	cut := make([]arrival, len(in))
	for i, a := range in {
		cut[i] = a
		cut[i].frame = a.frame[:min(len(a.frame), snap.Snap)]
	}
	whole, short := mustNew(t, cfg), mustNew(t, snap)
	want := run(whole, in, units.Second)
	got := run(short, cut, units.Second)
	if len(got) != len(want) {
		t.Fatalf("snap switch sent %d frames, the whole one %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.port != w.port || g.due != w.due || !bytes.Equal(g.frame, w.frame[:min(len(w.frame), snap.Snap)]) ||
			wire.FrameLen(g.frame) != len(w.frame) {
			t.Fatalf("frame %d: snap switch sent %d bytes (%d on the wire) on port %d due %v; the whole one %d bytes on port %d due %v",
				i, len(g.frame), wire.FrameLen(g.frame), g.port, g.due, len(w.frame), w.port, w.due)
		}
	}
	ws, gs := whole.Stats(), short.Stats()
	var drops, marks uint64
	for i := range ws {
		if !reflect.DeepEqual(ws[i], gs[i]) {
			t.Errorf("port %d: snap switch counts %+v, the whole one %+v", i, gs[i], ws[i])
		}
		drops += ws[i].Dropped()
		marks += ws[i].ECNMarks
	}
	if drops == 0 || marks == 0 {
		t.Fatalf("the test should drop and mark: %d drops, %d marks", drops, marks)
	}
	if len(want) < 20 {
		t.Fatalf("%d frames sent; the test should forward most", len(want))
	}
}

// A snap switch takes a frame's length from its IPv4 header: one that claims more than
// the MTU is dropped as oversize, as the whole frame would be.
func TestSnapOversize(t *testing.T) {
	cfg := testConfig(2)
	cfg.Snap = wire.MinSnap
	s := mustNew(t, cfg)
	f := pk{size: 1500}.build(t)
	// the headers of a 9000-byte frame
	binary.BigEndian.PutUint16(f[wire.EthLen+2:], 9000-wire.EthLen)
	f[wire.EthLen+10], f[wire.EthLen+11] = 0, 0
	binary.BigEndian.PutUint16(f[wire.EthLen+10:], wire.IPv4Checksum(f[wire.EthLen:wire.EthLen+wire.IPv4Len]))
	s.Receive(0, 0, f[:cfg.Snap])
	if out := pollAll(s, units.Second); len(out) != 0 {
		t.Fatalf("sent %d frames; want the oversize frame dropped", len(out))
	}
	if st := s.Stats()[0]; st.Drops[DropOversize] != 1 {
		t.Fatalf("drops %v; want one oversize", st.Drops)
	}
}

// A switch that stores frames truncated is fed arbitrary bytes too: whatever length a
// frame's IPv4 header claims, the switch never panics and accounts for every frame.
func FuzzReceiveSnap(f *testing.F) {
	f.Add(pk{flags: wire.FlagINT, hopcap: 3, ecn: wire.ECT0}.build(f)[:wire.MaxHeaders(3)])
	f.Add(pk{plain: true, size: 100}.build(f))
	f.Add(pauseFrame(5))
	f.Add(make([]byte, 3000))
	f.Fuzz(func(t *testing.T, frame []byte) {
		cfg := fuzzConfig()
		cfg.Snap = wire.MaxHeaders(3)
		s := mustNew(t, cfg)
		s.Receive(0, 0, frame)
		out := pollAll(s, units.Second)
		st := s.Stats()
		var acct uint64
		for i := range st {
			acct += st[i].Dropped() + st[i].PausesRx
		}
		if acct += uint64(len(dataOnly(out))); acct != 1 {
			t.Fatalf("accounted for %d frames (out %d); want 1", acct, len(out))
		}
		for _, o := range dataOnly(out) {
			if tx := st[o.port].TxBytes; len(o.frame) > cfg.Snap || tx != uint64(wire.FrameLen(frame)) {
				t.Fatalf("sent %d bytes of a frame counted as %d; received %d bytes of a %d-byte frame",
					len(o.frame), tx, len(frame), wire.FrameLen(frame))
			}
		}
	})
}
