package switchd

import (
	"net/netip"
	"syscall"
	"testing"

	"reef/units"
	"reef/wire"
)

// benchModes are the configurations benchmarked and checked for allocations.
var benchModes = []struct {
	name string
	mod  func(*Config)
	pkt  pk
}{
	{"plain", func(*Config) {}, pk{plain: true}},
	{"ecn", func(c *Config) { c.ECN = ECNConfig{Mode: ECNStep, K: 0} }, pk{ecn: wire.ECT0}},
	{"mpd", func(c *Config) { c.INT = INTConfig{Mode: INTMPD, MPDUnit: units.Microsecond} }, pk{}},
	{"hpcc", func(c *Config) { c.INT = INTConfig{Mode: INTHPCC} }, pk{flags: wire.FlagINT, hopcap: 5}},
	{"spray", func(c *Config) { c.LB.Mode = LBSpray }, pk{}},
	{"adaptive", func(c *Config) { c.LB.Mode = LBAdaptive }, pk{}},
	{"flowlet", func(c *Config) { c.LB = LBConfig{Mode: LBFlowlet, FlowletGap: 50 * units.Microsecond} }, pk{}},
}

// benchSwitch is a 6-port switch at 10 Gbps whose route for the benchmark's traffic is
// a 4-port group, so every mode runs the balancer.
func benchSwitch(tb testing.TB, mod func(*Config)) *Switch {
	cfg := testConfig(6)
	for i := range cfg.Ports {
		cfg.Ports[i].Rate = 10 * units.Gbps
	}
	cfg.Routes = append(cfg.Routes, Route{Prefix: netip.MustParsePrefix("10.0.9.0/24"), Ports: []int{1, 2, 3, 4}})
	mod(&cfg)
	return mustNew(tb, cfg)
}

// step receives one frame at *now and polls it out, advancing *now past its Due.
func step(s *Switch, now *units.Time, frame []byte) bool {
	s.Receive(*now, 0, frame)
	*now += 20 * units.Microsecond
	_, ok := s.Poll(*now)
	return ok
}

func TestZeroAllocsPerPacket(t *testing.T) {
	for _, m := range benchModes {
		t.Run(m.name, func(t *testing.T) {
			s := benchSwitch(t, m.mod)
			p := m.pkt
			p.dst = hostAddr(9, 1)
			frame := p.build(t)
			now := units.Time(0)
			for i := 0; i < 100; i++ { // warm up: rings and the pool reach their size
				if !step(s, &now, frame) {
					t.Fatal("frame did not come out")
				}
			}
			if a := testing.AllocsPerRun(1000, func() { step(s, &now, frame) }); a != 0 {
				t.Errorf("%v allocations per packet, want 0", a)
			}
		})
	}
}

// BenchmarkPacket measures Receive + Poll of one packet (parse, route, balance, enqueue,
// schedule, INT, dequeue) per mode.
func BenchmarkPacket(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			s := benchSwitch(b, m.mod)
			p := m.pkt
			p.dst = hostAddr(9, 1)
			frame := p.build(b)
			now := units.Time(0)
			b.ReportAllocs()
			cpu0 := cpuNanos()
			for b.Loop() {
				step(s, &now, frame)
			}
			reportCPU(b, cpu0, b.N)
		})
	}
}

// BenchmarkBurst measures a queue under load: 64 frames in at once, then drained.
func BenchmarkBurst(b *testing.B) {
	s := benchSwitch(b, func(c *Config) { c.ECN = ECNConfig{Mode: ECNStep, K: 30000} })
	frame := pk{dst: hostAddr(1, 1), ecn: wire.ECT0}.build(b)
	now := units.Time(0)
	b.ReportAllocs()
	cpu0 := cpuNanos()
	for b.Loop() {
		for i := 0; i < 64; i++ {
			s.Receive(now, 0, frame)
		}
		now += units.Millisecond
		for {
			if _, ok := s.Poll(now); !ok {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/pkt")
	reportCPU(b, cpu0, b.N*64)
}

// reportCPU reports the process's CPU time per packet since cpu0: on a shared machine
// it is steadier than ns/op, which counts the time other processes held the core.
func reportCPU(b *testing.B, cpu0 int64, pkts int) {
	if cpu := cpuNanos() - cpu0; cpu > 0 && pkts > 0 {
		b.ReportMetric(float64(cpu)/float64(pkts), "cpu-ns/pkt")
	}
}

// cpuNanos is the process's user+system CPU time in nanoseconds.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
