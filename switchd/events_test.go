package switchd

import (
	"net/netip"
	"testing"

	"reef/units"
)

func TestSetPortRate(t *testing.T) {
	us := units.Microsecond
	tests := []struct {
		name    string
		at      units.Time
		rate    units.Rate
		wantDue []units.Time
	}{
		// At 60 µs the first frame is on the line: it finishes at the old rate (120 µs);
		// the next two take 240 µs each.
		{"mid-frame", 60 * us, 50 * units.Mbps, []units.Time{130 * us, 370 * us, 610 * us}},
		// At 120 µs exactly the first has left and the second starts at the old rate
		// (departures and starts precede events at the same instant).
		{"at a boundary", 120 * us, 50 * units.Mbps, []units.Time{130 * us, 250 * us, 490 * us}},
		// At 0 the first frame has already started (same rule); the rest go at 60 µs.
		{"faster", 0, 200 * units.Mbps, []units.Time{130 * us, 190 * us, 250 * us}},
		{"ignored: zero", 60 * us, 0, []units.Time{130 * us, 250 * us, 370 * us}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, testConfig(2))
			for i := 0; i < 3; i++ {
				s.Receive(0, 0, pk{}.build(t))
			}
			var out []sent
			if tc.at > 0 {
				out = pollAll(s, tc.at)
			}
			s.SetPortRate(tc.at, 1, tc.rate)
			out = append(out, run(s, nil, units.Second)...)
			if len(out) != 3 {
				t.Fatalf("%d out", len(out))
			}
			for i, o := range out {
				if o.due != tc.wantDue[i] {
					t.Errorf("frame %d due %v, want %v", i, o.due, tc.wantDue[i])
				}
			}
		})
	}
}

func TestSetPortUp(t *testing.T) {
	cfg := testConfig(4)
	cfg.Routes = append(cfg.Routes, Route{Prefix: netip.MustParsePrefix("10.0.9.0/24"), Ports: []int{1, 2}})
	cfg.Pins = []Pin{{Src: hostAddr(0, 5), Dst: hostAddr(9, 1), Port: 1}}
	cfg.LB.Mode = LBSpray
	s := mustNew(t, cfg)
	// Queue 4 frames on port 1 (pinned), then take it down at 10 µs: the frame on the
	// line finishes, the other 3 are dropped.
	for i := 0; i < 4; i++ {
		s.Receive(0, 0, pk{src: hostAddr(0, 5), dst: hostAddr(9, 1)}.build(t))
	}
	pollAll(s, 10*units.Microsecond)
	s.SetPortUp(10*units.Microsecond, 1, false)
	// Now the group shrinks to port 2, the pin falls back to routing, and frames for
	// 10.0.1.0/24 (only port 1) and frames arriving on port 1 are dropped.
	var in []arrival
	for i := 0; i < 20; i++ {
		at := units.Time(i+1) * 200 * units.Microsecond
		in = append(in, arrival{at, 0, pk{dst: hostAddr(9, 1), sport: uint16(i + 1)}.build(t)})
	}
	in = append(in, arrival{5 * units.Millisecond, 0, pk{src: hostAddr(0, 5), dst: hostAddr(9, 1)}.build(t)},
		arrival{5 * units.Millisecond, 0, pk{dst: hostAddr(1, 1)}.build(t)},
		arrival{5 * units.Millisecond, 1, pk{dst: hostAddr(2, 1)}.build(t)})
	out := run(s, in, units.Second)
	counts := map[int]int{}
	for _, o := range out {
		counts[o.port]++
	}
	st := s.Stats()
	if counts[1] != 1 || counts[2] != 21 {
		t.Errorf("frames per port %v; want 1 (the one on the line) on port 1, 21 on port 2", counts)
	}
	if st[1].Drops[DropPortDown] != 4 || st[0].Drops[DropPortDown] != 1 {
		t.Errorf("port-down drops: port 1 %d (want 3 queued + 1 arriving), port 0 %d (want 1 unroutable)",
			st[1].Drops[DropPortDown], st[0].Drops[DropPortDown])
	}
	if st[1].Up || st[1].QueueBytes != 0 {
		t.Errorf("port 1: up %v, queue %v", st[1].Up, st[1].QueueBytes)
	}
	// Up again: the group uses both ports.
	s.SetPortUp(units.Second, 1, true)
	in = in[:0]
	for i := 0; i < 40; i++ {
		in = append(in, arrival{units.Second + units.Time(i)*200*units.Microsecond, 0, pk{dst: hostAddr(9, 1)}.build(t)})
	}
	counts = map[int]int{}
	for _, o := range run(s, in, 2*units.Second) {
		counts[o.port]++
	}
	if counts[1] == 0 || counts[2] == 0 {
		t.Errorf("after coming back up: %v; want both ports used", counts)
	}
}

func TestDepths(t *testing.T) {
	us := units.Microsecond
	s := mustNew(t, testConfig(2))
	for i := 0; i < 5; i++ {
		s.Receive(0, 0, pk{}.build(t))
	}
	tests := []struct {
		now       units.Time
		backlog   units.Bytes
		delay     units.Time
		wantAfter int // frames released by now
	}{
		{0, 7500, 600 * us, 0},
		{60 * us, 7500, 540 * us, 0},
		{130 * us, 6000, 470 * us, 1},
		{600 * us, 0, 0, 4},
	}
	var buf []Depth
	released := 0
	for _, tc := range tests {
		released += len(pollAll(s, tc.now))
		buf = s.Depths(tc.now, buf[:0])
		if buf[1].Backlog != tc.backlog || buf[1].Delay != tc.delay || released != tc.wantAfter || buf[0] != (Depth{}) {
			t.Errorf("at %v: %+v after %d frames; want backlog %v delay %v after %d", tc.now, buf, released, tc.backlog, tc.delay, tc.wantAfter)
		}
	}
}
