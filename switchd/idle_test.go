package switchd

import (
	"testing"

	"reef/units"
)

// Idle is the time a port's line had nothing to send on the computed schedule: the
// gaps between a departure that left the queue empty and the next arrival, the open
// one included; a pause with a frame queued is not idle.
func TestIdle(t *testing.T) {
	const us = units.Microsecond
	// 1500-byte frames from port 0 to port 1: 120 µs each at 100 Mbps.
	f := func(at units.Time) arrival { return arrival{at, 0, pk{}.build(t)} }
	type probe struct{ at, idle units.Time }
	for _, tc := range []struct {
		name   string
		in     []arrival
		probes []probe
	}{
		{"nothing sent", nil, []probe{{0, 0}, {us, us}, {units.Millisecond, units.Millisecond}}},
		{"one frame", []arrival{f(200 * us)},
			[]probe{{200 * us, 200 * us}, {250 * us, 200 * us}, {320 * us, 200 * us}, {units.Millisecond, 880 * us}}},
		{"back to back", []arrival{f(200 * us), f(210 * us)},
			[]probe{{300 * us, 200 * us}, {440 * us, 200 * us}, {units.Millisecond, 760 * us}}},
		{"two busy periods", []arrival{f(0), f(500 * us)},
			[]probe{{120 * us, 0}, {400 * us, 280 * us}, {550 * us, 380 * us}, {units.Millisecond, 760 * us}}},
		// 100 quanta = 512 µs at 100 Mbps: the frame arriving at 1 µs waits for the pause
		// to end and departs at 632 µs; only the first µs was idle until then.
		{"paused with a frame queued", []arrival{{0, 1, pauseFrame(100)}, f(us)},
			[]probe{{300 * us, us}, {632 * us, us}, {units.Millisecond, us + 368*us}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, testConfig(2))
			in := tc.in
			for _, p := range tc.probes {
				for len(in) > 0 && in[0].at <= p.at {
					pollAll(s, in[0].at)
					s.Receive(in[0].at, in[0].port, in[0].frame)
					in = in[1:]
				}
				pollAll(s, p.at)
				if got := s.Stats()[1].Idle; got != p.idle {
					t.Errorf("idle at %v: %v, want %v", p.at, got, p.idle)
				}
			}
		})
	}
}

// A frame read late closes the open gap at its arrival, not at the time the switch had
// reached: the idle time reported before goes back by the frame's lateness.
func TestIdleReadLate(t *testing.T) {
	const us = units.Microsecond
	s := mustNew(t, testConfig(2))
	pollAll(s, 500*us)
	if got := s.Stats()[1].Idle; got != 500*us {
		t.Fatalf("idle at 500 µs: %v", got)
	}
	s.Receive(100*us, 0, pk{}.build(t)) // read at 500 µs
	pollAll(s, 500*us)
	// Idle 0–100 µs, serialised until 220 µs, idle since.
	if got := s.Stats()[1].Idle; got != 380*us {
		t.Errorf("idle after a frame read 400 µs late: %v, want 380µs", got)
	}
}

// Without pauses or rate changes, the time a port was not idle is the serialisation of
// what it sent plus at most the frame on the line: the tx counter over the time the
// port was backlogged is its rate. Random arrivals, sizes and poll times, some frames
// read late.
func TestIdleAccountsTx(t *testing.T) {
	rate := 100 * units.Mbps
	for seed := uint64(1); seed <= 5; seed++ {
		rng := newTestRand(seed)
		s := mustNew(t, testConfig(2))
		at, now := units.Time(0), units.Time(0)
		for i := range 2000 {
			// Bursts and gaps: mostly faster than the line, sometimes a long pause.
			gap := units.Time(rng.IntN(100)) * units.Microsecond
			if rng.IntN(20) == 0 {
				gap = units.Time(rng.IntN(3000)) * units.Microsecond
			}
			at += gap
			size := 64 + rng.IntN(1437)
			s.Receive(at, 0, pk{size: max(size, 100), sport: uint16(i)}.build(t))
			// Polls never go back; a frame arriving before the last one is read late.
			now = max(now, at+units.Time(rng.IntN(200))*units.Microsecond)
			pollAll(s, now)
			st := s.Stats()[1]
			busy := now - st.Idle
			// A byte is 80 ns at 100 Mbps, so no rounding; the frame on the line at now
			// is busy time not yet in TxBytes.
			sent := rate.TxTime(units.Bytes(st.TxBytes))
			if busy < sent || busy > sent+rate.TxTime(1500) {
				t.Fatalf("seed %d, frame %d, at %v: busy %v (now − idle %v), tx %d B = %v at %v",
					seed, i, now, busy, st.Idle, st.TxBytes, sent, rate)
			}
		}
	}
}
