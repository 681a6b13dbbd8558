package switchd

import (
	"bytes"
	"reflect"
	"testing"

	"reef/units"
)

// Two switches back to back, a's port 1 to b's port 0, with a burst that queues at both
// and mpd INT stamping at both: handing frames over with Forward gives b exactly the
// frames, times and counters that copying them with Receive does, and a keeps working
// with the buffers it got back; so it does when the two share a pool, every buffer free
// again at the end, and when a's frames are taken from it (TakeLent) and given to b with
// the parse a's pipeline made (ReceiveBuffer with Out.Reef), as the sim's cut links do.
func TestForwardEqualsReceive(t *testing.T) {
	type hop struct {
		port  int
		due   units.Time
		frame []byte
	}
	const (
		copying = iota
		forward
		handOver
	)
	cfg := testConfig(3)
	cfg.INT = INTConfig{Mode: INTMPD, MPDUnit: units.Microsecond}
	pass := func(mode int, shared bool) ([]hop, []PortStats, []PortStats) {
		a, b := mustNew(t, cfg), mustNew(t, cfg)
		var spare []byte
		if shared {
			if !b.SharePool(a) || a.pool != b.pool {
				t.Fatal("two idle switches with equal buffers did not share a pool")
			}
			defer func() {
				if !a.pool.idle() {
					t.Errorf("shared pool: %d of %d buffers free after the run", len(a.pool.free), len(a.pool.bufs))
				}
			}()
		}
		var out []hop
		for round := range 3 {
			t0 := units.Time(round) * 5 * units.Millisecond
			for i := range 40 {
				// to 10.0.1.x: a's port 1, then b's port 1
				a.Receive(t0+units.Time(i)*units.Microsecond, 0, pk{dst: hostAddr(1, i), size: 200 + 30*i, ecn: 1}.build(t))
			}
			for now := t0; now < t0+5*units.Millisecond; now = min(a.NextDeadline(), b.NextDeadline(), t0+5*units.Millisecond) {
				for {
					o, ok := a.Poll(now)
					if !ok {
						break
					}
					switch mode {
					case forward:
						b.Forward(o.Due, 0, a)
					case handOver:
						if back := b.ReceiveBuffer(o.Due, 0, a.TakeLent(spare), o.Reef); back != nil {
							spare = back
						}
					default:
						b.Receive(o.Due, 0, o.Frame)
					}
				}
				for {
					o, ok := b.Poll(now)
					if !ok {
						break
					}
					out = append(out, hop{o.Port, o.Due, bytes.Clone(o.Frame)})
				}
			}
		}
		return out, a.Stats(), b.Stats()
	}
	want, wa, wb := pass(copying, false)
	if len(want) != 120 {
		t.Fatalf("copying: %d frames through both switches, want 120", len(want))
	}
	for _, c := range []struct {
		mode   int
		shared bool
	}{{forward, false}, {forward, true}, {handOver, false}} {
		got, ga, gb := pass(c.mode, c.shared)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("mode %d (shared pool %v) delivered %d frames unlike copying's %d", c.mode, c.shared, len(got), len(want))
		}
		if !reflect.DeepEqual(ga, wa) || !reflect.DeepEqual(gb, wb) {
			t.Errorf("counters differ (mode %d, shared pool %v):\ngot  %+v %+v\ncopy %+v %+v", c.mode, c.shared, ga, gb, wa, wb)
		}
	}
}

// SharePool joins only idle pools of equal buffers, adds up their buffers and limits,
// and a frame forwarded within one pool passes on in its buffer: one buffer in use, no
// second one taken for an exchange.
func TestSharePool(t *testing.T) {
	a, b, c := mustNew(t, testConfig(2)), mustNew(t, testConfig(2)), mustNew(t, testConfig(2))
	cfg := testConfig(2)
	cfg.Ports[1].MTU = 9000
	big := mustNew(t, cfg)
	if big.SharePool(a) || a.SharePool(big) {
		t.Fatal("switches with buffers of different sizes shared a pool")
	}
	c.Receive(0, 0, pk{dst: hostAddr(1, 1)}.build(t))
	if c.SharePool(a) || a.SharePool(c) {
		t.Fatal("a switch holding a frame shared its pool")
	}
	na, nb, la, lb := len(a.pool.bufs), len(b.pool.bufs), a.pool.limit, b.pool.limit
	if !b.SharePool(a) {
		t.Fatal("two idle switches with equal buffers did not share a pool")
	}
	if !b.SharePool(a) {
		t.Fatal("sharing a pool already shared failed")
	}
	if got := len(a.pool.bufs); got != na+nb || len(a.pool.free) != got || a.pool.limit != la+lb {
		t.Fatalf("shared pool: %d buffers (%d free), limit %d; want %d, all free, limit %d", got, len(a.pool.free), a.pool.limit, na+nb, la+lb)
	}
	a.Receive(0, 0, pk{dst: hostAddr(1, 1)}.build(t))
	o, ok := a.Poll(units.Millisecond)
	if !ok {
		t.Fatal("a forwarded nothing")
	}
	b.Forward(o.Due, 0, a)
	if inUse := len(a.pool.bufs) - len(a.pool.free); inUse != 1 || a.lent != -1 {
		t.Fatalf("after a forward within one pool: %d buffers in use, a still lends %d; want 1 and none", inUse, a.lent)
	}
	o2, ok := b.Poll(units.Second)
	if !ok || &o2.Frame[0] != &o.Frame[0] {
		t.Fatalf("b sent %v: a frame forwarded within one pool should keep its storage", ok)
	}
}

// Forward with nothing lent does nothing; between switches of different buffer sizes it
// copies.
func TestForwardEdges(t *testing.T) {
	a, b := mustNew(t, testConfig(2)), mustNew(t, testConfig(2))
	b.Forward(0, 0, a)
	if st := b.Stats(); st[0].RxPackets != 0 {
		t.Fatalf("forward of nothing counted %d frames", st[0].RxPackets)
	}
	cfg := testConfig(2)
	cfg.Ports[1].MTU = 9000
	big := mustNew(t, cfg)
	frame := pk{dst: hostAddr(1, 1)}.build(t)
	a.Receive(0, 0, frame)
	o, ok := a.Poll(units.Millisecond)
	if !ok {
		t.Fatal("a forwarded nothing")
	}
	big.Forward(o.Due, 0, a)
	o2, ok := big.Poll(units.Second)
	if !ok || len(o2.Frame) != len(frame) {
		t.Fatalf("big switch: ok %v, %d bytes, want %d", ok, len(o2.Frame), len(frame))
	}
}

// ReceiveBuffer takes a frame's storage when it is large enough (the switch sends those
// very bytes) and copies a frame in smaller storage; either way it hands back storage
// as large as its buffers, and nothing when it dropped the frame.
func TestReceiveBuffer(t *testing.T) {
	s := mustNew(t, testConfig(2))
	frame := pk{dst: hostAddr(1, 1), size: 300}.build(t)

	small := bytes.Clone(frame) // capacity 300: copied
	spare := s.ReceiveBuffer(0, 0, small, 0)
	if spare == nil || cap(spare) != s.pool.size {
		t.Fatalf("copying: got back %d bytes of storage, want %d", cap(spare), s.pool.size)
	}
	big := append(spare[:0], frame...) // the switch's own size: kept
	spare2 := s.ReceiveBuffer(units.Microsecond, 0, big, 0)
	if spare2 == nil || cap(spare2) != s.pool.size || &spare2[0] == &big[0] {
		t.Fatal("keeping: no storage of the switch's size back, or the frame's own")
	}
	var outs [][]byte
	for now := units.Time(0); now < units.Millisecond; now += units.Microsecond {
		for {
			o, ok := s.Poll(now)
			if !ok {
				break
			}
			outs = append(outs, o.Frame)
		}
	}
	if len(outs) != 2 || &outs[0][0] == &small[0] || &outs[1][0] != &big[0] {
		t.Fatalf("%d frames out; the copied one must not be in the caller's storage, the kept one must", len(outs))
	}
	if !bytes.Equal(outs[0], outs[1]) || len(outs[1]) != len(frame) {
		t.Fatal("the kept frame differs from the copied one")
	}
	if s.ReceiveBuffer(0, 7, spare2, 0) != nil {
		t.Fatal("a frame for a port the switch does not have gave storage back")
	}
}
