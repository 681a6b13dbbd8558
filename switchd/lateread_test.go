package switchd

import (
	"testing"

	"reef/units"
	"reef/wire"
)

// A frame a driver reads late (its arrival is earlier than the time the switch has
// reached) keeps its arrival: its queueing delay, Due and INT MPD are those of an
// on-time read, and nothing counts as skew. Read in the wrong order, the earlier frame
// goes behind the later one and the skew records by how much.
func TestLateReadKeepsArrival(t *testing.T) {
	const us = units.Microsecond
	x := pk{src: hostAddr(0, 1), dst: hostAddr(2, 1)}.build(t)
	y := pk{src: hostAddr(1, 1), dst: hostAddr(2, 1), sport: 40001}.build(t)
	pkt := (100 * units.Mbps).TxTime(1500) // 120 µs
	const unit = 10 * units.Nanosecond
	mpd := func(d units.Time) uint16 { return uint16((d + unit - 1) / unit) }
	type out struct {
		due units.Time
		mpd uint16
	}
	drive := func(pollFirst units.Time, in []arrival) ([]out, Lateness) {
		cfg := testConfig(3)
		cfg.INT = INTConfig{Mode: INTMPD, MPDUnit: unit}
		s := mustNew(t, cfg)
		pollAll(s, pollFirst) // the switch reaches pollFirst before reading anything
		for _, a := range in {
			if a.port < 0 { // the driver polls between two reads
				pollAll(s, a.at)
				continue
			}
			s.Receive(a.at, a.port, a.frame)
		}
		var got []out
		for _, o := range pollAll(s, units.Never) {
			v, ok := wire.Classify(o.frame)
			if !ok {
				t.Fatal("unparsable frame out")
			}
			got = append(got, out{o.due, v.MPD()})
		}
		return got, s.Stats()[2].Skew
	}
	onTime := []arrival{{0, 0, x}, {5 * us, 1, y}}
	want := []out{{pkt + 10*us, 0}, {2*pkt + 10*us, mpd(pkt - 5*us)}}

	for _, tc := range []struct {
		name      string
		pollFirst units.Time
		in        []arrival
		want      []out
		skewMax   units.Time
	}{
		{"on time", 0, onTime, want, 0},
		{"read 50 µs late", 50 * us, onTime, want, 0},
		// y read and processed first: x (arrival 0) goes behind y's 120 µs, so it
		// meets 125 µs of queue and its skew is y's serialisation.
		{"read late, out of order", 50 * us, []arrival{{5 * us, 1, y}, {50 * us, -1, nil}, {0, 0, x}},
			[]out{{5*us + pkt + 10*us, 0}, {5*us + 2*pkt + 10*us, mpd(5*us + pkt)}}, pkt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skew := drive(tc.pollFirst, tc.in)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d frames, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("frame %d: due %v mpd %d ns, want due %v mpd %d ns", i, got[i].due, got[i].mpd, tc.want[i].due, tc.want[i].mpd)
				}
			}
			if skew.Count != 2 || skew.Max != tc.skewMax {
				t.Errorf("skew %+v, want 2 frames, max %v", skew, tc.skewMax)
			}
		})
	}
}

// ECN marks a frame read late on the backlog it met when it arrived, even when the
// queue has drained by the time the switch reads it, as its MPD reports that delay.
func TestLateReadMarksOnArrivalBacklog(t *testing.T) {
	const us = units.Microsecond
	for _, tc := range []struct {
		name   string
		readAt units.Time // when the driver polls before reading y
		want   uint8
	}{
		{"on time", 5 * us, wire.CE},
		{"read after x left", 130 * us, wire.CE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(3)
			cfg.ECN = ECNConfig{Mode: ECNStep, K: 1000}
			s := mustNew(t, cfg)
			s.Receive(0, 0, pk{src: hostAddr(0, 1), dst: hostAddr(2, 1), ecn: wire.ECT0}.build(t))
			pollAll(s, tc.readAt)
			// y arrives at 5 µs behind x's 1500 bytes (x leaves at 120 µs).
			s.Receive(5*us, 1, pk{src: hostAddr(1, 1), dst: hostAddr(2, 1), sport: 40001, ecn: wire.ECT0}.build(t))
			var last uint8
			for _, o := range pollAll(s, units.Never) {
				v, _ := wire.Classify(o.frame)
				last = v.ECN()
			}
			if last != tc.want {
				t.Errorf("y left with ECN %v, want %v", last, tc.want)
			}
		})
	}
}

// HPCC's QLen counts a frame that arrived before the packet's dequeue even when the
// driver reads it only after the packet's departure: QLen is written when the packet
// leaves the switch, a link delay later. Read after that, the frame is missed.
//
// Port 2 (100 Mbit/s, 120 µs a frame, 10 µs delay) gets w at 0 and x at 1 µs from port
// 0, y at 2 µs from port 1: x is dequeued at 120 µs with y behind it, departs at 240 µs
// and leaves at 250 µs.
func TestHPCCQLenCountsLateRead(t *testing.T) {
	const us = units.Microsecond
	frame := func(src int) []byte {
		return pk{src: hostAddr(src, 1), dst: hostAddr(2, 1), flags: wire.FlagINT, hopcap: 1}.build(t)
	}
	for _, tc := range []struct {
		name  string
		readY units.Time // the switch reaches this before reading y
		z     bool       // a frame z that arrived at 200 µs is read before y
		want  []uint32   // QLen of w, x, (z,) y
	}{
		{"on time", 0, false, []uint32{0, 1500, 0}},
		{"y read after x departed", 245 * us, false, []uint32{0, 1500, 0}},
		{"y read after x left", 255 * us, false, []uint32{0, 0, 0}},
		// y sits behind z, which arrived after x's dequeue: x still counts y, and z,
		// dequeued at 240 µs, counts y too.
		{"y read after x departed, behind z", 245 * us, true, []uint32{0, 1500, 1500, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(3)
			cfg.INT = INTConfig{Mode: INTHPCC}
			s := mustNew(t, cfg)
			s.Receive(0, 0, frame(0))
			s.Receive(1*us, 0, frame(0))
			out := pollAll(s, tc.readY)
			if tc.z {
				s.Receive(200*us, 0, frame(0))
				out = append(out, pollAll(s, tc.readY+us)...) // z is enqueued before y is read
			}
			s.Receive(2*us, 1, frame(1))
			out = append(out, pollAll(s, units.Never)...)
			if len(out) != len(tc.want) {
				t.Fatalf("%d frames out, want %d", len(out), len(tc.want))
			}
			for i, o := range out {
				var h wire.Header
				if err := h.Decode(o.frame[wire.ReefOffset:]); err != nil || len(h.Hops) != 1 {
					t.Fatalf("frame %d: hops %+v (%v), want one", i, h.Hops, err)
				}
				if got := h.Hops[0].QLen; got != tc.want[i] {
					t.Errorf("frame %d: QLen %d B, want %d", i, got, tc.want[i])
				}
			}
		})
	}
}
