package switchd

import (
	"bytes"
	"strings"
	"testing"

	"reef/units"
	"reef/wire"
)

func TestBurstDepartures(t *testing.T) {
	const us = units.Microsecond
	tests := []struct {
		name    string
		size    int
		rate    units.Rate
		n       int
		gap     units.Time // between arrivals
		ingress units.Time
		wantDue []units.Time
	}{
		// 1500 B at 100 Mbps serialise in 120 µs; Due = departure + 10 µs.
		{"5x1500B back to back", 1500, 100 * units.Mbps, 5, 0, 0, []units.Time{130 * us, 250 * us, 370 * us, 490 * us, 610 * us}},
		// Arrivals spaced wider than the serialisation time never queue.
		{"spaced arrivals", 1500, 100 * units.Mbps, 3, 200 * us, 0, []units.Time{130 * us, 330 * us, 530 * us}},
		// The ingress delay line shifts everything.
		{"ingress delay", 1500, 100 * units.Mbps, 2, 0, 5 * us, []units.Time{135 * us, 255 * us}},
		// 1000 B at 3 Mbps: 8000/3 µs = 2666.67 µs per frame. Cumulative bytes: the
		// k-th departure is ceil(k × 8000000/3) ns, not k × ceil(2666667).
		{"no rounding drift", 1000, 3 * units.Mbps, 3, 0, 0, []units.Time{2666667 + 10*us, 5333334 + 10*us, 8000000 + 10*us}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(2)
			cfg.Ports[1].Rate = tc.rate
			cfg.Ports[0].IngressDelay = tc.ingress
			s := mustNew(t, cfg)
			var in []arrival
			for i := 0; i < tc.n; i++ {
				in = append(in, arrival{units.Time(i) * tc.gap, 0, pk{size: tc.size}.build(t)})
			}
			out := run(s, in, units.Second)
			if len(out) != len(tc.wantDue) {
				t.Fatalf("%d frames out, want %d", len(out), len(tc.wantDue))
			}
			for i, o := range out {
				if o.due != tc.wantDue[i] || o.port != 1 {
					t.Errorf("frame %d: port %d due %v, want port 1 due %v", i, o.port, o.due, tc.wantDue[i])
				}
				if o.at != o.due {
					t.Errorf("frame %d released at %v, due %v: the harness polls at deadlines", i, o.at, o.due)
				}
			}
		})
	}
}

func TestLatePollSameDue(t *testing.T) {
	build := func() (*Switch, []arrival) {
		cfg := testConfig(3)
		cfg.INT.Mode, cfg.INT.MPDUnit = INTMPD, units.Microsecond
		cfg.ECN = ECNConfig{Mode: ECNStep, K: 3000}
		s := mustNew(t, cfg)
		var in []arrival
		for i := 0; i < 8; i++ {
			in = append(in, arrival{units.Time(i) * 30 * units.Microsecond, i % 2 * 2, pk{ecn: wire.ECT0}.build(t)})
		}
		return s, in
	}
	s1, in := build()
	onTime := run(s1, in, units.Second)
	s2, in := build()
	for _, a := range in {
		s2.Receive(a.at, a.port, a.frame)
	}
	late := pollAll(s2, 50*units.Millisecond) // one Poll, long after everything was due
	if len(onTime) != 8 || len(late) != 8 {
		t.Fatalf("on time %d frames, late %d; want 8 each", len(onTime), len(late))
	}
	for i := range onTime {
		if onTime[i].due != late[i].due || !bytes.Equal(onTime[i].frame, late[i].frame) {
			t.Errorf("frame %d: on time due %v, late due %v (frames equal: %v)", i, onTime[i].due, late[i].due,
				bytes.Equal(onTime[i].frame, late[i].frame))
		}
	}
	st := s2.Stats()[1]
	if st.Lateness.Count != 8 || st.Lateness.Max < 50*units.Millisecond-2*units.Millisecond {
		t.Errorf("lateness %+v; want 8 frames, max near 48ms", st.Lateness)
	}
}

func TestTailDrop(t *testing.T) {
	tests := []struct {
		name      string
		extra     units.Bytes // buffer beyond 4 frames
		wantDrops uint64
	}{
		{"buffer holds exactly 4 frames", 0, 1},
		{"buffer one byte short", -1, 2},
		{"room for the fifth", 1500, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(2)
			cfg.Ports[1].Buffer = 4*1500 + tc.extra
			s := mustNew(t, cfg)
			var in []arrival
			for i := 0; i < 5; i++ {
				in = append(in, arrival{0, 0, pk{}.build(t)})
			}
			out := run(s, in, units.Second)
			st := s.Stats()[1]
			if st.Drops[DropTail] != tc.wantDrops || uint64(len(out)) != 5-tc.wantDrops {
				t.Errorf("tail drops %d, out %d; want %d drops", st.Drops[DropTail], len(out), tc.wantDrops)
			}
			if st.MaxQueueBytes > cfg.Ports[1].Buffer {
				t.Errorf("max queue %v above buffer %v", st.MaxQueueBytes, cfg.Ports[1].Buffer)
			}
		})
	}
}

func TestForwardingRewrites(t *testing.T) {
	cfg := testConfig(2)
	s := mustNew(t, cfg)
	in := pk{plain: true, size: 200}.build(t)
	out := run(s, []arrival{{0, 0, in}}, units.Second)
	if len(out) != 1 {
		t.Fatalf("%d frames out, want 1", len(out))
	}
	f := out[0].frame
	if !bytes.Equal(f[0:6], cfg.Ports[1].PeerMAC[:]) || !bytes.Equal(f[6:12], cfg.Ports[1].MAC[:]) {
		t.Errorf("MACs %x → %x; want port MAC → peer MAC", f[6:12], f[0:6])
	}
	if f[wire.EthLen+8] != in[wire.EthLen+8]-1 || !ipChecksumOK(f) {
		t.Errorf("TTL %d (was %d), checksum ok %v", f[wire.EthLen+8], in[wire.EthLen+8], ipChecksumOK(f))
	}
	if !bytes.Equal(f[wire.EthLen+12:], in[wire.EthLen+12:]) {
		t.Error("bytes after the TTL changed on a plain UDP packet")
	}
}

func TestIngressDrops(t *testing.T) {
	arp := make([]byte, 60)
	arp[12], arp[13] = 0x08, 0x06
	badIP := pk{}.build(t)[:30] // IPv4 EtherType, truncated header
	tests := []struct {
		name  string
		frame []byte
		why   DropReason
	}{
		{"ARP", arp, DropNotIPv4},
		{"runt", []byte{1, 2, 3}, DropNotIPv4},
		{"truncated IPv4", badIP, DropMalformed},
		{"TTL 1", pk{ttl: 1}.build(t), DropTTL},
		{"no route", pk{dst: hostAddr(9, 1)}.build(t), DropNoRoute},
		{"oversize", make([]byte, 9000), DropOversize},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, testConfig(2))
			out := run(s, []arrival{{0, 0, tc.frame}}, units.Second)
			st := s.Stats()
			if len(out) != 0 || st[0].Drops[tc.why] != 1 || st[0].Dropped() != 1 {
				t.Errorf("out %d, drops %v; want one %v drop on port 0", len(out), st[0].Drops, tc.why)
			}
		})
	}
}

func TestRoutingLongestPrefixAndPins(t *testing.T) {
	cfg := testConfig(4)
	// 10.0.1.0/24 → 1 (from testConfig); a /16 catch-all → 2; a /32 → 3.
	cfg.Routes = append(cfg.Routes,
		Route{Prefix: mustPrefix("10.0.0.0/16"), Ports: []int{2}},
		Route{Prefix: mustPrefix("10.0.1.7/32"), Ports: []int{3}})
	cfg.Pins = []Pin{{Src: hostAddr(0, 9), Dst: hostAddr(1, 1), Port: 0}}
	tests := []struct {
		name string
		p    pk
		want int
	}{
		{"/24", pk{dst: hostAddr(1, 1)}, 1},
		{"/32 beats /24", pk{dst: hostAddr(1, 7)}, 3},
		{"/16 catch-all", pk{dst: hostAddr(77, 1)}, 2},
		{"pin beats routes", pk{src: hostAddr(0, 9), dst: hostAddr(1, 1)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, cfg)
			out := run(s, []arrival{{0, 1, tc.p.build(t)}}, units.Second)
			if len(out) != 1 || out[0].port != tc.want {
				t.Errorf("out %v; want one frame on port %d", out, tc.want)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no ports", func(c *Config) { c.Ports = nil; c.Routes = nil }, "no ports"},
		{"zero rate", func(c *Config) { c.Ports[1].Rate = 0 }, `port 1 ("p1"): rate`},
		{"small buffer", func(c *Config) { c.Ports[0].Buffer = 1000 }, `port 0 ("p0"): buffer 1KB`},
		{"bad mtu", func(c *Config) { c.Ports[0].MTU = 0 }, "mtu 0"},
		{"route port out of range", func(c *Config) { c.Routes[0].Ports = []int{7} }, "route 0 (10.0.0.0/24): port 7"},
		{"duplicate prefix", func(c *Config) { c.Routes[1].Prefix = c.Routes[0].Prefix }, "same prefix as route 0"},
		{"bad lb", func(c *Config) { c.LB.Mode = "rr" }, `lb: mode "rr"`},
		{"flowlet without gap", func(c *Config) { c.LB.Mode = LBFlowlet }, "flowlet_gap"},
		{"mpd without unit", func(c *Config) { c.INT.Mode = INTMPD }, "mpd_unit"},
		{"red range", func(c *Config) { c.ECN = ECNConfig{Mode: ECNRED, Min: 5, Max: 5, PMax: 0.1} }, "want 0 ≤ min < max"},
		{"port ecn override", func(c *Config) { c.Ports[1].ECN = &ECNConfig{Mode: "ramp"} }, `port 1 ("p1"): ecn: mode "ramp"`},
		{"xon above xoff", func(c *Config) { c.Ports[0].PFC = PFCConfig{Enabled: true, XOff: 10000, XOn: 20000} }, "pfc xon"},
		{"xoff without headroom", func(c *Config) { c.Ports[0].PFC = PFCConfig{Enabled: true, XOff: 99000, XOn: 1000} }, "cannot be lossless"},
		{"pin port", func(c *Config) { c.Pins = []Pin{{Src: hostAddr(0, 1), Dst: hostAddr(1, 1), Port: -1}} }, "pin 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(2)
			tc.mod(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v; want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := New(testConfig(2)); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
}

func TestBadChecksumDropped(t *testing.T) {
	s := mustNew(t, testConfig(2))
	f := pk{}.build(t)
	f[wire.EthLen+10] ^= 0xff
	if out := run(s, []arrival{{0, 0, f}}, units.Second); len(out) != 0 || s.Stats()[0].Drops[DropMalformed] != 1 {
		t.Errorf("out %d, drops %v; want one malformed drop", len(out), s.Stats()[0].Drops)
	}
}

func TestPollNeverDrains(t *testing.T) {
	s := mustNew(t, testConfig(2))
	for i := 0; i < 3; i++ {
		s.Receive(0, 0, pk{}.build(t))
	}
	if out := pollAll(s, units.Never); len(out) != 3 || out[2].due != 370*units.Microsecond {
		t.Errorf("Poll(Never): %d frames; want all 3, the last due 370µs", len(out))
	}
	if d := s.NextDeadline(); d != units.Never {
		t.Errorf("NextDeadline after draining: %v, want never", d)
	}
}

// A port's lateness histograms exist only once a frame is late (or Prefault asks for
// them): frames released on time are counted without one, and the zeros counted before
// the first late frame join the histogram it brings.
func TestLatenessHistogramsOnDemand(t *testing.T) {
	s := mustNew(t, testConfig(2))
	for i := range 4 {
		s.Receive(units.Time(i)*units.Microsecond, 0, pk{dst: hostAddr(1, i)}.build(t))
	}
	run(s, nil, units.Millisecond)
	e := &s.ports[1].eg
	if st := s.Stats()[1]; st.Lateness != (Lateness{Count: 4}) || e.late != nil || e.skew != nil {
		t.Fatalf("on time: lateness %+v, histograms allocated %v, %v; want 4 frames at 0 and none", st.Lateness, e.late != nil, e.skew != nil)
	}
	s.Receive(2*units.Millisecond, 0, pk{dst: hostAddr(1, 9)}.build(t))
	pollAll(s, 10*units.Millisecond) // long after the frame was due
	st := s.Stats()[1]
	if st.Lateness.Count != 5 || st.Lateness.P50 != 0 || st.Lateness.Max < 7*units.Millisecond || e.late == nil {
		t.Fatalf("one late frame after 4 on time: lateness %+v; want 5 frames, p50 0, max near 8ms", st.Lateness)
	}
	p := mustNew(t, testConfig(2))
	p.Prefault()
	if p.ports[0].eg.late == nil || p.ports[1].eg.skew == nil {
		t.Fatal("Prefault left a port's lateness histograms to be allocated in the run")
	}
}
