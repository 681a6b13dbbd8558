package switchd

import (
	"testing"

	"reef/units"
	"reef/wire"
)

func pauseFrame(q uint16) []byte {
	b := make([]byte, wire.PauseLen)
	wire.BuildPause(b, [6]byte{2, 0, 0, 0, 2, 1}, q)
	return b
}

// A peer's pause frames delay the port's serialisation; the frame on the line finishes.
func TestPauseReceived(t *testing.T) {
	us := units.Microsecond
	tests := []struct {
		name      string
		pauses    []arrival // on port 1
		wantDue   []units.Time
		wantPause units.Time
	}{
		// 100 quanta = 51200 bit times = 512 µs at 100 Mbps.
		{"pause at 0", []arrival{{0, 1, pauseFrame(100)}}, []units.Time{642 * us, 762 * us}, 512 * us},
		{"resume early", []arrival{{0, 1, pauseFrame(0xffff)}, {300 * us, 1, pauseFrame(0)}}, []units.Time{430 * us, 550 * us}, 300 * us},
		{"mid-frame: the frame finishes", []arrival{{60 * us, 1, pauseFrame(100)}}, []units.Time{131 * us, 702 * us}, 512 * us},
		// 10 quanta at 400 µs: paused until 451.2 µs.
		{"refreshed pause replaces the timer", []arrival{{0, 1, pauseFrame(100)}, {400 * us, 1, pauseFrame(10)}}, []units.Time{451200 + 130*us, 451200 + 250*us}, 451200},
		{"quanta 0 while running does nothing", []arrival{{0, 1, pauseFrame(0)}}, []units.Time{131 * us, 251 * us}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, testConfig(2))
			in := append([]arrival{}, tc.pauses[0])
			// Data arrives 1 µs after the first pause frame (at equal times the line would
			// start first: departures and starts precede arrivals).
			in = append(in, arrival{us, 0, pk{}.build(t)}, arrival{us, 0, pk{}.build(t)})
			in = append(in, tc.pauses[1:]...)
			out := run(s, in, units.Second)
			if len(out) != 2 {
				t.Fatalf("%d frames out, want 2", len(out))
			}
			for i, o := range out {
				if o.due != tc.wantDue[i] {
					t.Errorf("frame %d due %v, want %v", i, o.due, tc.wantDue[i])
				}
			}
			st := s.Stats()[1]
			if st.PauseTime != tc.wantPause || st.PausesRx != uint64(len(tc.pauses)) {
				t.Errorf("pause time %v (%d frames), want %v (%d)", st.PauseTime, st.PausesRx, tc.wantPause, len(tc.pauses))
			}
		})
	}
}

// host is an upstream sender in the incast harness: it sends back to back at its link
// rate and honours pause frames (using an egress value for the pause timer).
type host struct {
	port int
	left int
	next units.Time // earliest start of the next frame
	p    egress
}

// incast runs 4 hosts on ports 1-4 sending 40 × 1500 B each to port 0 (the receiver's
// port, 100 Mbps, buffer 30 KB). It returns the frames out of port 0, the switch and the
// total time the hosts were paused.
func incast(t *testing.T, pfc bool, delay units.Time, buffer units.Bytes) ([]sent, *Switch, units.Time) {
	cfg := testConfig(5)
	cfg.Ports[0].Buffer = buffer
	for i := 1; i <= 4; i++ {
		cfg.Ports[i].PeerIsHost = true
		cfg.Ports[i].Delay = delay
		cfg.Ports[i].Buffer = buffer
		cfg.Ports[i].IngressDelay = delay
		cfg.Ports[i].PFC = PFCConfig{Enabled: pfc, XOff: 3000, XOn: 1500}
	}
	s := mustNew(t, cfg)
	rate := 100 * units.Mbps
	tx := rate.TxTime(1500)
	var hosts []*host
	for i := 1; i <= 4; i++ {
		hosts = append(hosts, &host{port: i, left: 40, p: egress{rate: rate}})
	}
	var pending []delivery // frames on their way to the switch, in time order
	var out []sent
	frame := pk{dst: hostAddr(0, 1)}.build(t)
	end := units.Time(0)
	for {
		tS := s.NextDeadline()
		var h *host
		st := units.Never
		for _, x := range hosts {
			if x.left > 0 {
				if v := max(x.next, x.p.pauseUntil); v < st {
					h, st = x, v
				}
			}
		}
		tD := units.Never
		if len(pending) > 0 {
			tD = pending[0].at
		}
		switch {
		case tD <= tS && tD <= st && tD != units.Never:
			s.Receive(tD, pending[0].port, frame)
			pending = pending[1:]
		case tS <= st && tS != units.Never:
			for _, o := range pollAll(s, tS) {
				if q, ok := wire.ParsePause(o.frame); ok {
					hosts[o.port-1].p.pause(o.due, q)
					continue
				}
				out = append(out, o)
				end = o.due
			}
		case st != units.Never:
			h.left--
			h.next = st + tx
			pending = append(pending, delivery{st + tx, h.port})
			sortDeliveries(pending)
		default:
			var paused units.Time
			for _, x := range hosts {
				paused += x.p.pauseTime(end)
			}
			return out, s, paused
		}
	}
}

type delivery struct {
	at   units.Time
	port int
}

// sortDeliveries moves the last element into place.
func sortDeliveries(d []delivery) {
	for i := len(d) - 1; i > 0 && d[i].at < d[i-1].at; i-- {
		d[i], d[i-1] = d[i-1], d[i]
	}
}

func TestPFCIncast(t *testing.T) {
	us := units.Microsecond
	tests := []struct {
		name     string
		delay    units.Time
		buffer   units.Bytes
		lineRate bool // the output never idles
	}{
		// Headroom per input: 100 Mbps × 20 µs + 2 frames = 3286 B; 4 × (3000 + 3286) ≤ 30 KB.
		{"short links", 10 * us, 30 * units.Kilobyte, true},
		// 100 Mbps × 1 ms + 2 frames = 15536 B; 4 × (3000 + 15536) = 74 KB ≤ 75 KB.
		// XOn (1500 B) is far below one RTT of data, so the output idles while the
		// resumed hosts' frames travel: lossless, not work-conserving.
		{"long links", 500 * us, 75 * units.Kilobyte, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, s, _ := incast(t, false, tc.delay, tc.buffer)
			st := s.Stats()
			if st[0].Drops[DropTail] == 0 || len(out)+int(st[0].Drops[DropTail]) != 160 {
				t.Errorf("without PFC: %d out, %d tail drops; want drops, 160 in all", len(out), st[0].Drops[DropTail])
			}
			out, s, paused := incast(t, true, tc.delay, tc.buffer)
			st = s.Stats()
			var sentPauses uint64
			for _, p := range st {
				sentPauses += p.PausesTx
			}
			if st[0].Drops[DropTail] != 0 || len(out) != 160 {
				t.Errorf("with PFC: %d out, %d tail drops; want all 160, no drops", len(out), st[0].Drops[DropTail])
			}
			if paused <= 0 || sentPauses == 0 {
				t.Errorf("with PFC: hosts paused %v, %d pause frames sent; want both > 0", paused, sentPauses)
			}
			if st[0].MaxQueueBytes > tc.buffer {
				t.Errorf("max queue %v", st[0].MaxQueueBytes)
			}
			// The output runs at line rate throughout: 160 frames × 120 µs after the first.
			if d := out[159].due - out[0].due; tc.lineRate && d != 159*120*us {
				t.Errorf("first to last departure %v, want %v (no idle line under PFC)", d, 159*120*us)
			}
			t.Logf("max queue %v of %v, hosts paused %v, %d pause frames", st[0].MaxQueueBytes, tc.buffer, paused, sentPauses)
		})
	}
}

// Held bytes stay above XOn for ~48 ms: the pause is refreshed every half pause length
// (0xffff quanta at 10 Gbps = 3.355 ms) and a resume follows the departure that takes
// held to XOn.
func TestPFCRefreshAndResume(t *testing.T) {
	cfg := testConfig(2)
	cfg.Ports[0].Rate = 10 * units.Gbps
	cfg.Ports[0].PFC = PFCConfig{Enabled: true, XOff: 3000, XOn: 1500}
	cfg.Ports[1].Rate = units.Mbps // 12 ms per frame
	s := mustNew(t, cfg)
	var in []arrival
	for i := 0; i < 5; i++ {
		in = append(in, arrival{0, 0, pk{}.build(t)})
	}
	out := run(s, in, units.Second)
	var pauses []sent
	var data []sent
	for _, o := range out {
		if _, ok := wire.ParsePause(o.frame); ok {
			pauses = append(pauses, o)
		} else {
			data = append(data, o)
		}
	}
	if len(data) != 5 {
		t.Fatalf("%d data frames", len(data))
	}
	half := cfg.Ports[0].Rate.TxTime(0xffff*64) / 2
	d := cfg.Ports[0].Delay
	// The third frame in takes held to 4500 > 3000: pause at t=0. Departures at 12, 24,
	// 36, 48 ms: held 6000 → ... → 1500 at the 4th departure: resume at 48 ms.
	resumeAt := 4*cfg.Ports[1].Rate.TxTime(1500) + d
	for i, p := range pauses {
		q, _ := wire.ParsePause(p.frame)
		last := i == len(pauses)-1
		switch {
		case !last && (q != 0xffff || p.due != units.Time(i)*half+d):
			t.Errorf("pause %d: quanta %d due %v, want 0xffff due %v", i, q, p.due, units.Time(i)*half+d)
		case last && (q != 0 || p.due != resumeAt):
			t.Errorf("last pause: quanta %d due %v, want resume due %v", q, p.due, resumeAt)
		}
		if p.port != 0 {
			t.Errorf("pause %d left on port %d, want the ingress port 0", i, p.port)
		}
	}
	if want := int(4*cfg.Ports[1].Rate.TxTime(1500)/half) + 2; len(pauses) != want {
		t.Errorf("%d pause frames, want %d", len(pauses), want)
	}
	if st := s.Stats()[0]; st.HeldBytes != 0 || st.PausesTx != uint64(len(pauses)) {
		t.Errorf("held %v, pauses sent %d", st.HeldBytes, st.PausesTx)
	}
}
