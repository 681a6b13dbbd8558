package switchd

import (
	"bytes"
	"net/netip"
	"testing"

	"reef/units"
)

// randomLab is a 5-port switch with PFC, RED, MPD and spraying, and 400 random frames
// (sizes, ports, destinations, ECN) plus a few pause frames from peers.
func randomLab(t *testing.T, seed uint64) (Config, []arrival) {
	cfg := testConfig(5)
	cfg.Seed = seed
	cfg.Routes = append(cfg.Routes, Route{Prefix: netip.MustParsePrefix("10.0.9.0/24"), Ports: []int{1, 2, 3}})
	cfg.LB.Mode = LBSpray
	cfg.ECN = ECNConfig{Mode: ECNRED, Min: 3000, Max: 20000, PMax: 0.3}
	cfg.INT = INTConfig{Mode: INTMPD, MPDUnit: units.Microsecond}
	cfg.Ports[0].PFC = PFCConfig{Enabled: true, XOff: 20000, XOn: 10000}
	cfg.Ports[4].PFC = PFCConfig{Enabled: true, XOff: 20000, XOn: 10000}
	cfg.Ports[4].IngressDelay = 7 * units.Microsecond
	cfg.Ports[2].Rate = 30 * units.Mbps
	rng := newTestRand(seed)
	var in []arrival
	at := units.Time(0)
	for i := 0; i < 400; i++ {
		at += units.Time(rng.IntN(40)) * units.Microsecond
		port := []int{0, 4, 4, 0, 1}[rng.IntN(5)]
		if rng.IntN(40) == 0 {
			in = append(in, arrival{at, 1 + rng.IntN(3), pauseFrame(uint16(rng.IntN(300)))})
			continue
		}
		dst := hostAddr([]int{9, 9, 9, 2, 3}[rng.IntN(5)], 1)
		in = append(in, arrival{at, port, pk{dst: dst, size: 200 + rng.IntN(1300), ecn: uint8(rng.IntN(3)),
			sport: uint16(rng.IntN(8) + 1)}.build(t)})
	}
	return cfg, in
}

// Whatever the moments the driver polls at (on time, late, in bursts), the switch
// releases the same frames, byte for byte, with the same Due times, in the same order:
// every time is computed from the schedule, never from the moment of a Poll. The one
// moment excluded is the instant of a frame still to be handed over: a poll there
// would process the frames that reach the pipeline at that instant before it, so their
// order would be the driver's, not the switch's (random among ports, see pickTied).
func TestScheduleIndependentOfPolling(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		cfg, in := randomLab(t, seed)
		want := run(mustNew(t, cfg), in, units.Never-1)

		s := mustNew(t, cfg)
		rng := newTestRand(seed + 100)
		var got []sent
		prev := units.Time(0)
		for _, a := range in {
			// Poll at a few random moments before this arrival, then receive it.
			for k := rng.IntN(3); k > 0 && a.at > prev; k-- {
				prev += units.Time(rng.Int64N(int64(a.at - prev)))
				got = append(got, pollAll(s, prev)...)
			}
			s.Receive(a.at, a.port, a.frame)
			prev = a.at
		}
		got = append(got, pollAll(s, units.Never)...)

		if len(got) != len(want) {
			t.Fatalf("seed %d: %d frames with random polling, %d on time", seed, len(got), len(want))
		}
		for i, w := range want {
			g := got[i]
			if g.port != w.port || g.due != w.due || !bytes.Equal(g.frame, w.frame) {
				t.Fatalf("seed %d frame %d: port %d due %v, on time port %d due %v (bytes equal %v)",
					seed, i, g.port, g.due, w.port, w.due, bytes.Equal(g.frame, w.frame))
			}
		}
		var marks, drops, pauses uint64
		for _, st := range s.Stats() {
			marks += st.ECNMarks
			drops += st.Dropped()
			pauses += st.PausesTx
		}
		if seed == 1 {
			t.Logf("%d frames out, %d marks, %d drops, %d pause frames sent", len(got), marks, drops, pauses)
		}
		if marks == 0 || pauses == 0 {
			t.Errorf("seed %d: %d marks, %d pause frames: the scenario does not exercise ECN and PFC", seed, marks, pauses)
		}
	}
}

// PollPort hands over a port's frames as soon as they have left the switch, ahead of
// their Due, with the same Due and bytes Poll would give them, and Poll no longer
// returns them: a driver that takes one port's frames early (the sim's partitions, for
// their cut links) sees, port by port, exactly the frames of one that polls on time,
// also when it takes their storage (TakeLent) and gives the switch other buffers.
func TestPollPortTakesDepartedFrames(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		cfg, in := randomLab(t, seed)
		want := map[int][]sent{}
		for _, o := range run(mustNew(t, cfg), in, units.Never-1) {
			want[o.port] = append(want[o.port], o)
		}
		s := mustNew(t, cfg)
		got := map[int][]sent{}
		early := 0
		var spare []byte
		for _, o := range runWith(s, in, units.Never-1, func(next units.Time) {
			for _, p := range []int{1, 2, 4} { // two sprayed ports, and one that sends pause frames upstream
				for {
					o, ok := s.PollPort(next, p)
					if !ok {
						break
					}
					if o.Due > next {
						early++
					}
					want := append([]byte(nil), o.Frame...)
					if p == 1 { // take the storage itself, giving back what was taken before
						f := s.TakeLent(spare)
						if !bytes.Equal(f, want) {
							t.Fatalf("seed %d: TakeLent gave %d bytes other than the frame polled", seed, len(f))
						}
						spare = f
					}
					got[p] = append(got[p], sent{port: o.Port, frame: want, due: o.Due})
				}
			}
		}) {
			got[o.port] = append(got[o.port], o)
		}
		if early == 0 {
			t.Fatalf("seed %d: PollPort returned no frame before its Due", seed)
		}
		for p := range cfg.Ports {
			if len(got[p]) != len(want[p]) {
				t.Fatalf("seed %d port %d: %d frames with PollPort, %d with Poll alone", seed, p, len(got[p]), len(want[p]))
			}
			for k, w := range want[p] {
				if g := got[p][k]; g.due != w.due || !bytes.Equal(g.frame, w.frame) {
					t.Fatalf("seed %d port %d frame %d: due %v with PollPort, %v with Poll alone (bytes equal %v)",
						seed, p, k, g.due, w.due, bytes.Equal(g.frame, w.frame))
				}
			}
		}
	}
}
