package fabric

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"reef/switchd"
	"reef/units"
	"reef/wire"
)

// chainConfig is switch k of a chain: port 0 faces left (10.0.0.0/24 behind it), port 1
// right (10.0.1.0/24); every port 100 Mbps, 10 µs, 30 KB, so a burst queues.
func chainConfig(k int) switchd.Config {
	cfg := switchd.Config{Name: fmt.Sprintf("s%d", k+1), Seed: uint64(k + 1), INT: switchd.INTConfig{Mode: switchd.INTMPD, MPDUnit: units.Microsecond}}
	for i := range 2 {
		cfg.Ports = append(cfg.Ports, switchd.PortConfig{
			Name: fmt.Sprintf("p%d", i), MAC: [6]byte{2, 0, 0, byte(k), 1, byte(i)}, PeerMAC: [6]byte{2, 0, 0, byte(k), 2, byte(i)},
			Rate: 100 * units.Mbps, Delay: 10 * units.Microsecond, Buffer: 30 * units.Kilobyte, MTU: 1500,
		})
		cfg.Routes = append(cfg.Routes, switchd.Route{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 0}), 24), Ports: []int{i}})
	}
	return cfg
}

// shard is a chain of n switches in one fabric, in memory, with port 0 of the first
// (external port 0) and port 1 of the last (external port 1) outside.
func shard(t testing.TB, n int) *Fabric {
	t.Helper()
	f := New()
	var prev *Node
	for k := range n {
		sw, err := switchd.New(chainConfig(k))
		if err != nil {
			t.Fatal(err)
		}
		nd := f.AddSwitch(sw)
		if prev != nil {
			if err := f.Link(prev, 1, nd, 0); err != nil {
				t.Fatal(err)
			}
		} else if _, err := f.External(nd, 0); err != nil {
			t.Fatal(err)
		}
		prev = nd
	}
	if _, err := f.External(prev, 1); err != nil {
		t.Fatal(err)
	}
	f.Start()
	return f
}

func frame(t testing.TB, size int, sport uint16) []byte {
	t.Helper()
	h := wire.Header{Type: wire.TypeData, PayloadLen: uint16(size - wire.ReefOffset - wire.HeaderLen)}
	buf := make([]byte, size)
	a := wire.Addrs{Src: netip.AddrFrom4([4]byte{10, 0, 0, 1}), Dst: netip.AddrFrom4([4]byte{10, 0, 1, 1}), SrcPort: sport}
	if _, err := wire.BuildFrame(buf, a, 0, &h); err != nil {
		t.Fatal(err)
	}
	return buf
}

type outFrame struct {
	port  int
	due   units.Time
	frame []byte
}

// drive feeds arrivals into f and calls Poll at the times polls gives (wall-clock
// readings: each one no earlier than the last), collecting what leaves.
func drive(f *Fabric, in []arrival, polls func(next units.Time) units.Time, until units.Time) []outFrame {
	var out []outFrame
	now, i := units.Time(0), 0
	for now < until {
		next := f.NextDeadline()
		if i < len(in) {
			next = min(next, in[i].at)
		}
		if next == units.Never {
			break
		}
		now = max(now, polls(next))
		// Everything that arrived by now is read first (as the driver drains its rings),
		// then the fabric is polled.
		for i < len(in) && in[i].at <= now {
			f.Receive(in[i].at, in[i].port, in[i].frame)
			i++
		}
		for {
			o, ok := f.Poll(now)
			if !ok {
				break
			}
			out = append(out, outFrame{o.Port, o.Due, append([]byte(nil), o.Frame...)})
		}
	}
	return out
}

type arrival struct {
	at    units.Time
	port  int
	frame []byte
}

// A shard's output does not depend on when it is polled: polled at every deadline, or
// late by up to 300 µs, or in 1 ms quanta, three switches in memory release the same
// frames, in the same order, with the same Due and INT, which is what the sim computes.
func TestShardOutputIndependentOfPollTimes(t *testing.T) {
	var in []arrival
	rng := rand.New(rand.NewPCG(1, 2))
	at := units.Time(0)
	for i := range 200 {
		// bursts of ten back-to-back frames, then a gap
		if i%10 == 0 {
			at += units.Time(rng.IntN(2000)) * units.Microsecond
		}
		in = append(in, arrival{at, 0, frame(t, 200+rng.IntN(1300), uint16(40000+i%7))})
		at += 5 * units.Microsecond
	}
	until := at + 100*units.Millisecond
	exact := drive(shard(t, 3), in, func(next units.Time) units.Time { return next }, until)
	if len(exact) == 0 {
		t.Fatal("nothing came out")
	}
	jitter := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name  string
		polls func(units.Time) units.Time
	}{
		{"late up to 300us", func(n units.Time) units.Time {
			return n + units.Time(jitter.IntN(300))*units.Microsecond
		}},
		{"1ms quanta", func(n units.Time) units.Time { return (n/units.Millisecond + 1) * units.Millisecond }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := drive(shard(t, 3), in, tc.polls, until)
			if len(got) != len(exact) {
				t.Fatalf("%d frames out, want %d", len(got), len(exact))
			}
			for i := range got {
				if got[i].port != exact[i].port || got[i].due != exact[i].due || !bytes.Equal(got[i].frame, exact[i].frame) {
					t.Fatalf("frame %d: port %d due %v, want port %d due %v (same bytes: %v)", i,
						got[i].port, got[i].due, exact[i].port, exact[i].due, bytes.Equal(got[i].frame, exact[i].frame))
				}
			}
		})
	}
	// The bursts queued: the frames carry an MPD, and the last switch's output is paced.
	var mpd uint16
	for _, o := range exact {
		if v, ok := wire.Classify(o.frame); ok && v.IsReef() {
			mpd = max(mpd, v.MPD())
		}
	}
	if mpd == 0 {
		t.Error("no frame queued anywhere: the test exercises no queueing")
	}
}

// In memory, a frame crosses a link at exactly its Due: the chain's output Due is the
// sum of three hops' serialisation and propagation for a lone frame.
func TestShardLoneFrameDue(t *testing.T) {
	f := shard(t, 3)
	fr := frame(t, 1500, 40000)
	f.Receive(0, 0, fr)
	out := drive(f, nil, func(n units.Time) units.Time { return n }, units.Second)
	if len(out) != 1 {
		t.Fatalf("%d frames out, want 1", len(out))
	}
	hop := (100 * units.Mbps).TxTime(1500) + 10*units.Microsecond
	if out[0].due != 3*hop || out[0].port != 1 {
		t.Errorf("out port %d due %v, want port 1 due %v", out[0].port, out[0].due, 3*hop)
	}
	if f.Hops() != 2 {
		t.Errorf("%d in-memory hops, want 2", f.Hops())
	}
}

func TestWiringErrors(t *testing.T) {
	f := New()
	sw, err := switchd.New(chainConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	n := f.AddSwitch(sw)
	if _, err := f.External(n, 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"twice", func() error { _, err := f.External(n, 0); return err }()},
		{"no port", func() error { _, err := f.External(n, 2); return err }()},
		{"link to wired", f.Link(n, 0, n, 1)},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// BenchmarkInMemoryHop sends b.N frames of 1514 bytes through a shard of eight switches
// in a chain and reports the CPU time per packet-hop (process CPU, so a busy machine
// does not inflate it): one switch's pipeline (parse,
// route, queue, schedule) and the in-memory hand-over to the next, with the engine's
// work; the frames' entry and exit are counted as hops too. idle-taps has a tap on
// every in-memory port that captures nothing, as a daemon serving captures
// (switchd/tapsock) runs when no capture is on: a pointer load per frame and port.
func BenchmarkInMemoryHop(b *testing.B) {
	for _, tapped := range []bool{false, true} {
		name := "untapped"
		if tapped {
			name = "idle-taps"
		}
		b.Run(name, func(b *testing.B) { benchHops(b, tapped) })
	}
}

func benchHops(b *testing.B, tapped bool) {
	const n = 8
	f := shard(b, n)
	if tapped {
		var capturing atomic.Pointer[[]byte]
		tap := func(at units.Time, out bool, frame []byte) {
			if c := capturing.Load(); c != nil {
				*c = append((*c)[:0], frame...)
			}
		}
		for i, nd := range f.nodes {
			if i > 0 && nd.SetTap(0, tap) != nil || i < n-1 && nd.SetTap(1, tap) != nil {
				b.Fatal("set tap")
			}
		}
	}
	fr := frame(b, 1514, 40000)
	gap := (100 * units.Mbps).TxTime(1514) // the chain's links run at 100 Mbit/s
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	now := units.Time(0)
	for i := 0; i < b.N; i++ {
		f.Receive(now, 0, fr)
		for {
			if _, ok := f.Poll(now); !ok {
				break
			}
		}
		now += gap
	}
	for f.NextDeadline() != units.Never { // drain
		now = max(now, f.NextDeadline())
		for {
			if _, ok := f.Poll(now); !ok {
				break
			}
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	if f.Hops() != uint64(b.N*(n-1)) {
		b.Fatalf("%d in-memory hops for %d frames through %d switches", f.Hops(), b.N, n)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/hop")
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
