package switchd

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"reef/units"
	"reef/wire"
)

// testConfig is an n-port switch: every port 100 Mbps, 10 µs, 100 KB buffer, MTU 1500;
// 10.0.i.0/24 routes to port i.
func testConfig(n int) Config {
	cfg := Config{Name: "s1", Seed: 1}
	for i := 0; i < n; i++ {
		cfg.Ports = append(cfg.Ports, PortConfig{
			Name:    fmt.Sprintf("p%d", i),
			MAC:     [6]byte{2, 0, 0, 0, 1, byte(i)},
			PeerMAC: [6]byte{2, 0, 0, 0, 2, byte(i)},
			Rate:    100 * units.Mbps, Delay: 10 * units.Microsecond,
			Buffer: 100 * units.Kilobyte, MTU: 1500,
		})
		cfg.Routes = append(cfg.Routes, Route{Prefix: netip.PrefixFrom(hostAddr(i, 0), 24), Ports: []int{i}})
	}
	return cfg
}

func hostAddr(net, host int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 0, byte(net), byte(host)})
}

// pk describes a test frame.
type pk struct {
	src, dst netip.Addr
	sport    uint16
	ecn      uint8
	size     int // whole frame
	flags    uint8
	hopcap   uint8
	mpd      uint16
	plain    bool // plain UDP to port 9, not reef
	ttl      uint8
}

func (p pk) build(t testing.TB) []byte {
	t.Helper()
	if !p.src.IsValid() {
		p.src = hostAddr(0, 1)
	}
	if !p.dst.IsValid() {
		p.dst = hostAddr(1, 1)
	}
	if p.sport == 0 {
		p.sport = 40000
	}
	if p.size == 0 {
		p.size = 1500
	}
	h := wire.Header{Type: wire.TypeData, Flags: p.flags, HopCap: p.hopcap, MPD: p.mpd}
	pay := p.size - wire.ReefOffset - h.Len()
	if pay < 0 {
		t.Fatalf("frame of %d bytes too small for %d hop slots", p.size, p.hopcap)
	}
	h.PayloadLen = uint16(pay)
	buf := make([]byte, p.size)
	n, err := wire.BuildFrame(buf, wire.Addrs{Src: p.src, Dst: p.dst, SrcPort: p.sport}, p.ecn, &h)
	if err != nil || n != p.size {
		t.Fatalf("BuildFrame: %d, %v", n, err)
	}
	ip := buf[wire.EthLen:]
	if p.plain {
		ip[wire.IPv4Len+2], ip[wire.IPv4Len+3] = 0, 9
	}
	if p.ttl != 0 {
		ip[8] = p.ttl
		ip[10], ip[11] = 0, 0
		c := wire.IPv4Checksum(ip[:wire.IPv4Len])
		ip[10], ip[11] = byte(c>>8), byte(c)
	}
	return buf
}

// sent is a frame the switch released, copied.
type sent struct {
	port  int
	frame []byte
	due   units.Time
	at    units.Time
}

// arrival is a frame to hand the switch.
type arrival struct {
	at    units.Time
	port  int
	frame []byte
}

// run drives s like the sim backend: frames are received at their times, Poll is
// called at every deadline, up to until. It returns what came out.
func run(s *Switch, in []arrival, until units.Time) []sent { return runWith(s, in, until, nil) }

// runWith is run, calling before (if not nil) at every deadline, before Poll.
func runWith(s *Switch, in []arrival, until units.Time, before func(now units.Time)) []sent {
	var out []sent
	i := 0
	for {
		next := s.NextDeadline()
		if i < len(in) && in[i].at <= next {
			s.Receive(in[i].at, in[i].port, in[i].frame)
			i++
			continue
		}
		if next > until {
			return out
		}
		if before != nil {
			before(next)
		}
		out = append(out, pollAll(s, next)...)
	}
}

func pollAll(s *Switch, now units.Time) []sent {
	var out []sent
	for {
		o, ok := s.Poll(now)
		if !ok {
			return out
		}
		out = append(out, sent{port: o.Port, frame: append([]byte(nil), o.Frame...), due: o.Due, at: now})
	}
}

func mustNew(t testing.TB, cfg Config) *Switch {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// ipChecksumOK reports whether the IPv4 header of frame sums correctly.
func ipChecksumOK(frame []byte) bool {
	return wire.IPv4Checksum(frame[wire.EthLen:wire.EthLen+wire.IPv4Len]) == 0
}

func dataOnly(out []sent) []sent {
	var d []sent
	for _, o := range out {
		if _, pause := wire.ParsePause(o.frame); !pause {
			d = append(d, o)
		}
	}
	return d
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 99)) }
