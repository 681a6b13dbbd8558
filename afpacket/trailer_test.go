package afpacket

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"reef/units"
	"reef/wire"
)

// ipv4Frame returns an Ethernet+IPv4 frame with an IP packet of ipLen bytes, followed
// by pad bytes of Ethernet padding.
func ipv4Frame(ipLen, pad int) []byte {
	f := make([]byte, ethHdrLen+ipLen+pad)
	binary.BigEndian.PutUint16(f[12:], etherTypeIPv4)
	f[ethHdrLen] = 0x45
	binary.BigEndian.PutUint16(f[ethHdrLen+2:], uint16(ipLen))
	for i := ethHdrLen + 20; i < ethHdrLen+ipLen; i++ {
		f[i] = byte(i)
	}
	return f
}

func TestTrailerRoundTrip(t *testing.T) {
	reef := make([]byte, 1600)
	n, err := wire.BuildFrame(reef, wire.Addrs{Src: netip.MustParseAddr("198.18.0.1"), Dst: netip.MustParseAddr("198.18.0.2")}, 2,
		&wire.Header{Type: wire.TypeData, Seq: 7, PayloadLen: 1000})
	if err != nil {
		t.Fatal(err)
	}
	reef = reef[:n]
	pause := make([]byte, wire.PauseLen)
	wire.BuildPause(pause, [6]byte{2, 0, 0, 0, 0, 1}, 0xffff)
	for _, tc := range []struct {
		name  string
		frame []byte
		want  bool // a trailer is written
		inner int  // length after a round trip
	}{
		{"reef data", reef, true, len(reef)},
		{"small IPv4 (ping)", ipv4Frame(28, 0), true, 14 + 28},
		{"IPv4 with padding", ipv4Frame(28, 18), true, 14 + 28}, // padding replaced by the trailer
		{"PFC pause", pause, false, len(pause)},
		{"IPv4 shorter than its total length", ipv4Frame(100, 0)[:60], false, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const due = units.Time(123456789012)
			dst := make([]byte, 2048)
			n, ok := PutTrailer(dst, tc.frame, due)
			if ok != tc.want {
				t.Fatalf("PutTrailer ok = %v, want %v", ok, tc.want)
			}
			inner, got, carried := StripTrailer(dst[:n])
			if carried != tc.want {
				t.Fatalf("StripTrailer carried = %v, want %v", carried, tc.want)
			}
			if len(inner) != tc.inner || !bytes.Equal(inner, tc.frame[:tc.inner]) {
				t.Fatalf("inner frame: %d bytes, want the original's first %d", len(inner), tc.inner)
			}
			if carried && got != due {
				t.Errorf("carried Due %v, want %v", got, due)
			}
			if carried && n != tc.inner+TrailerLen {
				t.Errorf("wrote %d bytes, want %d", n, tc.inner+TrailerLen)
			}
		})
	}
}

func TestPutTrailerNoRoom(t *testing.T) {
	f := ipv4Frame(100, 0)
	dst := make([]byte, len(f)+TrailerLen-1)
	n, ok := PutTrailer(dst, f, 1)
	if ok || n != len(f) || !bytes.Equal(dst[:n], f) {
		t.Fatalf("PutTrailer into a slot without room: n %d ok %v; want the frame unchanged", n, ok)
	}
}

func TestArrival(t *testing.T) {
	const stamp, maxCarry = 10 * units.Millisecond, 5 * units.Millisecond
	for _, tc := range []struct {
		name string
		due  units.Time
		at   units.Time
		c    carry
	}{
		{"upstream released late: its Due", stamp - 200*units.Microsecond, stamp - 200*units.Microsecond, carryUsed},
		{"just at the stamp", stamp, stamp, carryUsed},
		{"slightly after (clock reading error): the stamp", stamp + 10*units.Microsecond, stamp, carryUsed},
		{"in the future: rejected", stamp + units.Millisecond, stamp, carryRejected},
		{"older than MaxCarry: rejected", stamp - 6*units.Millisecond, stamp, carryRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, c := arrival(stamp, tc.due, maxCarry)
			if at != tc.at || c != tc.c {
				t.Errorf("arrival = %v, %v; want %v, %v", at, c, tc.at, tc.c)
			}
		})
	}
}

// FuzzStripTrailer: the parser never panics, never strips a frame that has no trailer
// at the end of its IP packet, and what it strips round-trips through PutTrailer.
func FuzzStripTrailer(f *testing.F) {
	f.Add(ipv4Frame(28, 0))
	f.Add(ipv4Frame(28, 20))
	withTrailer := make([]byte, 100)
	n, _ := PutTrailer(withTrailer, ipv4Frame(40, 0), 42)
	f.Add(withTrailer[:n])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		inner, due, ok := StripTrailer(frame)
		if !ok {
			if len(inner) != len(frame) {
				t.Fatal("a frame without trailer was changed")
			}
			return
		}
		end := len(inner)
		if len(frame) < end+TrailerLen || binary.BigEndian.Uint32(frame[end+8:]) != TrailerMagic {
			t.Fatal("stripped a frame with no magic after its IP packet")
		}
		if int(binary.BigEndian.Uint16(frame[16:18]))+ethHdrLen != end {
			t.Fatal("stripped at a place other than the end of the IP packet")
		}
		dst := make([]byte, end+TrailerLen)
		m, put := PutTrailer(dst, inner, due)
		if !put || !bytes.Equal(dst[:m], frame[:end+TrailerLen]) {
			t.Fatal("strip and put do not round-trip")
		}
	})
}

// recordNode forwards port 0 to port 1 at once and records what it received.
type recordNode struct {
	delayNode
	at  []units.Time
	len []int
}

func (n *recordNode) Receive(now units.Time, port int, frame []byte) {
	if port == 0 {
		n.at = append(n.at, now)
		n.len = append(n.len, len(frame))
	}
	n.delayNode.Receive(now, port, frame)
}

// TestDriverCarriesDue runs a driver between two veths: an IPv4 frame whose trailer
// says it was due 2 ms ago reaches the node stripped, at that time, and leaves port 1
// with a trailer carrying the node's Due; one whose trailer is from another clock (an
// hour off) reaches the node at its receive stamp and is counted as rejected.
func TestDriverCarriesDue(t *testing.T) {
	needRoot(t)
	var (
		drv       *Driver
		inj, sink int
		clock     *Clock
	)
	node := &recordNode{delayNode: delayNode{delay: units.Millisecond}}
	inFreshNetns(t, func() error {
		for _, p := range [][2]string{{"in0", "p0"}, {"out0", "p1"}} {
			if err := vethPair(p[0], p[1]); err != nil {
				return err
			}
		}
		var err error
		if clock, err = NewClock(MonotonicNow() - int64(time.Second)); err != nil {
			return err
		}
		if drv, err = Open(node, Config{Ports: []string{"p0", "p1"}, Clock: clock}); err != nil {
			return err
		}
		if inj, err = rawSocket("in0"); err != nil {
			return err
		}
		sink, err = rawSocket("out0")
		return err
	})
	defer drv.Close()
	defer unix.Close(inj)
	defer unix.Close(sink)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- drv.Run(ctx) }()

	frame := ipv4Frame(100, 0)
	buf := make([]byte, 2048)
	epoch := units.Time(clock.Epoch())
	carried := clock.Now() - 2*units.Millisecond
	n, _ := PutTrailer(buf, frame, carried+epoch)
	sent := clock.Now()
	if _, err := unix.Write(inj, buf[:n]); err != nil {
		t.Fatal(err)
	}
	n, _ = PutTrailer(buf, frame, carried+epoch+units.Time(time.Hour))
	if _, err := unix.Write(inj, buf[:n]); err != nil {
		t.Fatal(err)
	}
	_ = unix.SetsockoptTimeval(sink, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
	var dues []units.Time
	for len(dues) < 2 {
		m, err := unix.Read(sink, buf)
		if err != nil {
			t.Fatalf("frame %d never left port 1: %v", len(dues), err)
		}
		inner, due, ok := StripTrailer(buf[:m])
		if !ok || len(inner) != len(frame) {
			continue // the kernel's own chatter
		}
		dues = append(dues, due-epoch)
	}
	cancel()
	<-done
	if len(node.at) != 2 || node.len[0] != len(frame) || node.len[1] != len(frame) {
		t.Fatalf("node got frames of %v bytes; want 2 of %d (trailer stripped)", node.len, len(frame))
	}
	if node.at[0] != carried {
		t.Errorf("first frame arrived at %v, want its carried Due %v", node.at[0], carried)
	}
	if node.at[1] < sent {
		t.Errorf("second frame (foreign clock) arrived at %v, before it was sent (%v): want its receive stamp", node.at[1], sent)
	}
	for i := range dues {
		if want := node.at[i] + units.Millisecond; dues[i] != want {
			t.Errorf("frame %d left carrying Due %v, want the node's %v", i, dues[i], want)
		}
	}
	st := drv.Stats().Ports[0]
	if st.RxCarried != 1 || st.RxCarryRejected != 1 {
		t.Errorf("RxCarried %d, RxCarryRejected %d; want 1 and 1", st.RxCarried, st.RxCarryRejected)
	}
	if tx := drv.Stats().Ports[1].TxTrailers; tx != 2 {
		t.Errorf("TxTrailers %d, want 2", tx)
	}
}
