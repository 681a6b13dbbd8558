package switchd

import (
	"testing"

	"reef/units"
	"reef/wire"
)

// chain is a line of 2-port switches: port 1 of switch k feeds port 0 of switch k+1;
// what leaves port 1 of the last switch is collected. It stands in for the sim backend.
type chain struct {
	sw  []*Switch
	out []sent
}

// newChain builds len(rates) switches; switch k's egress toward the right runs at
// rates[k] with INT mode modes[k].
func newChain(t *testing.T, rates []units.Rate, modes []string, mpdUnit units.Time) *chain {
	c := &chain{}
	for k := range rates {
		cfg := testConfig(2)
		cfg.Seed = uint64(k)
		cfg.Ports[1].Rate = rates[k]
		cfg.INT = INTConfig{Mode: modes[k], MPDUnit: mpdUnit}
		c.sw = append(c.sw, mustNew(t, cfg))
	}
	return c
}

// run receives in on switch 0 port 0 and moves frames along until nothing is left.
func (c *chain) run(in []arrival) {
	i := 0
	for {
		next, who := units.Never, -1
		for k, s := range c.sw {
			if d := s.NextDeadline(); d < next {
				next, who = d, k
			}
		}
		if i < len(in) && in[i].at <= next {
			c.sw[0].Receive(in[i].at, 0, in[i].frame)
			i++
			continue
		}
		if who < 0 {
			return
		}
		for _, o := range pollAll(c.sw[who], next) {
			if o.port != 1 {
				continue
			}
			if who+1 < len(c.sw) {
				c.sw[who+1].Receive(o.due, 0, o.frame)
			} else {
				c.out = append(c.out, o)
			}
		}
	}
}

// Five 1500 B frames enter at t=0. Switch 1 (50 Mbps, 240 µs per frame) queues frame i
// for 240i µs; switch 2 (20 Mbps, 600 µs, frames arriving 240 µs apart) for 360i µs;
// switch 3 (15 Mbps, 800 µs, arrivals 600 µs apart) for 200i µs. MPD is the largest
// among the switches with INT on.
func TestMPDChain(t *testing.T) {
	rates := []units.Rate{50 * units.Mbps, 20 * units.Mbps, 15 * units.Mbps}
	us := units.Microsecond
	tests := []struct {
		name  string
		modes []string
		unit  units.Time
		start uint16 // MPD the sender put in
		want  func(i int) uint16
	}{
		{"all on", []string{INTMPD, INTMPD, INTMPD}, us, 0, func(i int) uint16 { return uint16(360 * i) }},
		{"middle off", []string{INTMPD, INTOff, INTMPD}, us, 0, func(i int) uint16 { return uint16(240 * i) }},
		{"only last", []string{INTOff, INTOff, INTMPD}, us, 0, func(i int) uint16 { return uint16(200 * i) }},
		{"all off keeps the field", []string{INTOff, INTOff, INTOff}, us, 77, func(int) uint16 { return 77 }},
		{"rounds up to the unit", []string{INTMPD, INTOff, INTMPD}, 7 * us, 0, func(i int) uint16 { return uint16((240*i + 6) / 7) }},
		{"saturates", []string{INTMPD, INTMPD, INTMPD}, 1, 0, func(i int) uint16 { return uint16(min(360000*i, 0xffff)) }},
		{"max with the sender's value", []string{INTMPD, INTOff, INTMPD}, us, 500, func(i int) uint16 { return uint16(max(240*i, 500)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newChain(t, rates, tc.modes, tc.unit)
			var in []arrival
			for i := 0; i < 5; i++ {
				in = append(in, arrival{0, 0, pk{mpd: tc.start}.build(t)})
			}
			c.run(in)
			if len(c.out) != 5 {
				t.Fatalf("%d frames out, want 5", len(c.out))
			}
			for i, o := range c.out {
				v, _ := wire.Classify(o.frame)
				if v.MPD() != tc.want(i) {
					t.Errorf("frame %d: MPD %d, want %d", i, v.MPD(), tc.want(i))
				}
			}
		})
	}
}

// Three frames with FlagINT through [hpcc, off, hpcc]: one hop record per INT switch,
// with the computed departure, the port's cumulative tx bytes (this frame included), the
// backlog when the frame was dequeued and the rate.
func TestHPCCChain(t *testing.T) {
	rates := []units.Rate{50 * units.Mbps, 20 * units.Mbps, 15 * units.Mbps}
	us := units.Microsecond
	c := newChain(t, rates, []string{INTHPCC, INTOff, INTHPCC}, 0)
	var in []arrival
	for i := 0; i < 3; i++ {
		in = append(in, arrival{0, 0, pk{flags: wire.FlagINT, hopcap: 4}.build(t)})
	}
	in = append(in, arrival{0, 0, pk{hopcap: 4}.build(t)})                      // no FlagINT: no hop
	in = append(in, arrival{0, 0, pk{flags: wire.FlagINT, hopcap: 1}.build(t)}) // one slot only
	c.run(in)
	if len(c.out) != 5 {
		t.Fatalf("%d frames out, want 5", len(c.out))
	}
	// Switch 1: departures 240(i+1) µs, 1500(i+1) tx bytes, (4-i) frames behind.
	// Switch 3: frames reach it at 240 + 600(i+1) + 10 µs (after switch 2 and two links);
	// it serialises in 800 µs back to back from the first arrival (850 µs).
	for i := 0; i < 3; i++ {
		var h wire.Header
		if err := h.Decode(c.out[i].frame[wire.ReefOffset:]); err != nil {
			t.Fatal(err)
		}
		arr3 := 240*us + 10*us + 600*us + 10*us // frame 0 at switch 3
		want := []wire.Hop{
			{TS: int64(240 * us * units.Time(i+1)), TxBytes: uint64(1500 * (i + 1)), QLen: uint32(1500 * (4 - i)), RateKbps: 50000},
			// The next frame (600 µs behind) arrives while one is on the wire (800 µs),
			// so none is waiting when a frame is dequeued.
			{TS: int64(arr3 + 800*us*units.Time(i+1)), TxBytes: uint64(1500 * (i + 1)), QLen: 0, RateKbps: 15000},
		}
		if len(h.Hops) != 2 {
			t.Fatalf("frame %d: %d hops, want 2", i, len(h.Hops))
		}
		for j := range want {
			if h.Hops[j] != want[j] {
				t.Errorf("frame %d hop %d: %+v, want %+v", i, j, h.Hops[j], want[j])
			}
		}
	}
	var h wire.Header
	if err := h.Decode(c.out[3].frame[wire.ReefOffset:]); err != nil || len(h.Hops) != 0 {
		t.Errorf("frame without FlagINT: %d hops (%v), want 0", len(h.Hops), err)
	}
	if err := h.Decode(c.out[4].frame[wire.ReefOffset:]); err != nil || len(h.Hops) != 1 || h.Hops[0].RateKbps != 50000 {
		t.Errorf("frame with one slot: hops %+v (%v), want the first switch's only", h.Hops, err)
	}
}

// QLen is the backlog when a frame is dequeued (HPCC's reference switch pushes the queue
// bytes at dequeue): the frames waiting at its start, not those that arrive while it is
// on the wire. One switch at 50 Mbps (240 µs per 1500 B frame): A and B arrive at 0, C
// at 100 µs, D at 400 µs, so A starts at 0 with B waiting (C comes during A), B at 240
// with C waiting (D comes during B), C at 480 with D waiting, D at 720 with nothing.
// Counted at the end of each frame's serialisation instead, A and B would read 3000 B.
func TestHPCCQLenAtDequeue(t *testing.T) {
	us := units.Microsecond
	c := newChain(t, []units.Rate{50 * units.Mbps}, []string{INTHPCC}, 0)
	f := func() []byte { return pk{flags: wire.FlagINT, hopcap: 1}.build(t) }
	c.run([]arrival{{0, 0, f()}, {0, 0, f()}, {100 * us, 0, f()}, {400 * us, 0, f()}})
	want := []uint32{1500, 1500, 1500, 0}
	if len(c.out) != len(want) {
		t.Fatalf("%d frames out, want %d", len(c.out), len(want))
	}
	for i, o := range c.out {
		var h wire.Header
		if err := h.Decode(o.frame[wire.ReefOffset:]); err != nil || len(h.Hops) != 1 {
			t.Fatalf("frame %d: hops %+v (%v), want one", i, h.Hops, err)
		}
		if got := h.Hops[0]; got.QLen != want[i] || got.TS != int64(240*us*units.Time(i+1)) {
			t.Errorf("frame %d: QLen %d B at TS %d, want %d B at %d", i, got.QLen, got.TS, want[i], 240*us*units.Time(i+1))
		}
	}
}
