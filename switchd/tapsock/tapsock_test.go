package tapsock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"reef/afpacket"
	"reef/units"
)

// TestRingKeepsOrderAcrossGoroutines puts frames from one goroutine while another gets
// them (run it with -race): every frame put is got once, in order, with its bytes,
// time and direction, or counted as dropped.
func TestRingKeepsOrderAcrossGoroutines(t *testing.T) {
	r := NewRing(8, 64)
	const n = 20000
	go func() {
		var f [8]byte
		for i := range n {
			binary.BigEndian.PutUint64(f[:], uint64(i))
			r.Put(1, units.Time(i), i%2 == 0, f[:])
		}
	}()
	got, last := 0, -1
	for deadline := time.Now().Add(10 * time.Second); got+int(r.Drops()) < n && time.Now().Before(deadline); {
		_, at, out, f, ok := r.Get()
		if !ok {
			time.Sleep(10 * time.Microsecond)
			continue
		}
		i := int(binary.BigEndian.Uint64(f))
		if i <= last || units.Time(i) != at || out != (i%2 == 0) {
			t.Fatalf("frame %d (at %v, out %v) after %d: want increasing, its own time and direction", i, at, out, last)
		}
		last = i
		got++
	}
	if got+int(r.Drops()) != n {
		t.Fatalf("%d got + %d dropped; want %d frames accounted for", got, r.Drops(), n)
	}
	t.Logf("%d got, %d dropped", got, r.Drops())
}

// TestRingDropsWhenFullOrTooLarge: a full ring and an oversized frame drop, counted.
func TestRingDropsWhenFullOrTooLarge(t *testing.T) {
	r := NewRing(3, 10) // rounded up to 4 slots
	for i := range 6 {
		r.Put(1, units.Time(i), false, []byte{byte(i)})
	}
	r.Put(1, 9, false, make([]byte, 11))
	if r.Drops() != 3 {
		t.Fatalf("%d drops; want 3 (two over the 4 slots, one too large)", r.Drops())
	}
	for i := range 4 {
		_, at, _, f, ok := r.Get()
		if !ok || at != units.Time(i) || f[0] != byte(i) {
			t.Fatalf("get %d: %v %v %v; want frame %d", i, ok, at, f, i)
		}
	}
	if _, _, _, _, ok := r.Get(); ok {
		t.Fatal("a fifth frame from a ring given four")
	}
}

func TestRecordRoundTrip(t *testing.T) {
	var b []byte
	want := []Record{{Time: 123456789, Kind: In, Frame: []byte{1, 2, 3}}, {Time: -1, Kind: Out, Frame: []byte{}}, {Time: 7, Kind: End}}
	for _, r := range want {
		b = AppendRecord(b, r)
	}
	rd := bytes.NewReader(b)
	var buf []byte
	for i, w := range want {
		var r Record
		var err error
		r, buf, err = ReadRecord(rd, buf)
		if err != nil || r.Time != w.Time || r.Kind != w.Kind || !bytes.Equal(r.Frame, w.Frame) {
			t.Fatalf("record %d: %+v, %v; want %+v", i, r, err, w)
		}
	}
	if _, _, err := ReadRecord(rd, buf); err != io.EOF {
		t.Fatalf("after the last record: %v; want io.EOF", err)
	}
}

func TestReadRecordRejects(t *testing.T) {
	hdr := func(n uint32, kind byte, rest ...byte) []byte {
		b := binary.BigEndian.AppendUint64(nil, 1)
		b = binary.BigEndian.AppendUint32(b, n)
		b = append(b, kind)
		if rest == nil {
			rest = []byte{0, 0, 0}
		}
		return append(b, rest...)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"short header", hdr(0, In)[:10], "header cut short"},
		{"bad kind", hdr(0, 7), "record kind 0x7"},
		{"reserved", hdr(0, In, 0, 1, 0), "reserved bytes"},
		{"too large", hdr(MaxFrame+1, In), "at most"},
		{"end with frame", append(hdr(1, End), 0), "end record with 1 bytes"},
		{"frame cut short", append(hdr(4, Out), 1, 2), "frame of 4 bytes cut short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadRecord(bytes.NewReader(tc.in), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want it to say %q", err, tc.want)
			}
		})
	}
}

func FuzzReadRecord(f *testing.F) {
	f.Add(AppendRecord(nil, Record{Time: 5, Kind: Out, Frame: []byte("frame")}))
	f.Add(AppendRecord(nil, Record{Time: 0, Kind: End}))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := bytes.NewReader(b)
		var buf []byte
		for {
			r, nb, err := ReadRecord(rd, buf)
			if err != nil {
				return
			}
			buf = nb
			if len(r.Frame) > MaxFrame || (r.Kind == End && len(r.Frame) > 0) {
				t.Fatalf("accepted %+v", r)
			}
			if again := AppendRecord(nil, r); !bytes.Equal(again[:HeaderLen], b[len(b)-rd.Len()-len(again):][:HeaderLen]) {
				t.Fatalf("record %+v does not encode back to its bytes", r)
			}
		}
	})
}

// fakeClock is a lab clock 1 s into the lab, its trailers' epoch 5 s.
type fakeClock struct{}

func (fakeClock) Now() units.Time  { return units.Second }
func (fakeClock) WireEpoch() int64 { return 5e9 }

// ipFrame is a minimal IPv4 frame of n bytes (headers included) tagged with tag.
func ipFrame(n int, tag byte) []byte {
	f := make([]byte, n)
	binary.BigEndian.PutUint16(f[12:14], 0x0800)
	f[14] = 0x45
	binary.BigEndian.PutUint16(f[16:18], uint16(n-14))
	f[n-1] = tag
	return f
}

// datapath stands in for a shard's loop: it calls tap with frames until stop, one
// goroutine, as the daemon's locked thread would.
func datapath(tap func(units.Time, bool, []byte), stop <-chan struct{}, every time.Duration) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		f := ipFrame(100, 0)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f[99] = byte(i)
			tap(units.Second+units.Time(i)*units.Microsecond, i%3 == 0, f)
			time.Sleep(every)
		}
	})
	return &wg
}

// TestServerStreamsACapture runs a server on a real Unix socket with a goroutine
// putting frames through the tap of one port: a capture gets them in order, both
// directions, each stamped with the Unix time of its lab time and carrying the release
// trailer with its Due on the trailers' clock; a second capture of the same port
// while the first runs is refused, and so is a port the daemon does not carry.
func TestServerStreamsACapture(t *testing.T) {
	srv := New([]Port{{Switch: "s1", Index: 2, MaxFrame: 1518}}, fakeClock{}, slog.New(slog.DiscardHandler))
	tap := srv.Tap("s1", 2)
	if tap == nil || srv.Tap("s1", 1) != nil {
		t.Fatal("want a tap for s1 port 2 only")
	}
	path := filepath.Join(t.TempDir(), "shard1.tap.sock")
	ctx := context.Background()
	if err := srv.Listen(path); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	stop := make(chan struct{})
	dp := datapath(tap, stop, 20*time.Microsecond)
	defer func() { close(stop); dp.Wait() }()

	st, err := Dial(ctx, path, "s1", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sw       string
		port     int
		wantText string
	}{{"s1", 2, "already being captured"}, {"s1", 0, "not an in-memory port"}, {"s9", 2, "not an in-memory port"}} {
		if _, err := Dial(ctx, path, tc.sw, tc.port); err == nil || !strings.Contains(err.Error(), tc.wantText) {
			t.Errorf("capture %s port %d: %v; want %q", tc.sw, tc.port, err, tc.wantText)
		}
	}
	cctx, ccancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer ccancel()
	wall0 := time.Now().UnixNano() - int64(units.Second) // lab time 0 in Unix ns, as the server maps it
	var n, outs int
	var lastAt int64
	dropped, err := st.Run(cctx, func(r Record) error {
		inner, due, ok := afpacket.StripTrailer(r.Frame)
		if !ok || len(inner) != 100 {
			t.Fatalf("frame %d: %d bytes, trailer %v; want 100 bytes and a trailer", n, len(r.Frame), ok)
		}
		at := due - 5e9 // lab time
		if i := int((at - units.Second) / units.Microsecond); byte(i) != inner[99] || (r.Kind == Out) != (i%3 == 0) {
			t.Fatalf("frame %d: due %v carries tag %d kind %d; want the tag and direction of frame %d", n, due, inner[99], r.Kind, i)
		}
		if d := r.Time - wall0 - int64(at); d < -int64(time.Second) || d > int64(time.Second) {
			t.Fatalf("frame %d: stamped %v from its lab time; want its Unix time (within the test's slack)", n, time.Duration(d))
		}
		if int64(at) <= lastAt {
			t.Fatalf("frame %d at %v after %v", n, at, lastAt)
		}
		lastAt = int64(at)
		n++
		if r.Kind == Out {
			outs++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 || outs == 0 || outs == n {
		t.Fatalf("%d frames (%d out), %d dropped; want many, both ways", n, outs, dropped)
	}
	t.Logf("%d frames, %d out, %d dropped", n, outs, dropped)
	// The port is free again, and the next capture starts with its own frames only.
	st, err = Dial(ctx, path, "s1", 2)
	if err != nil {
		t.Fatal(err)
	}
	c2, c2cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer c2cancel()
	var first int64 = -1
	if _, err := st.Run(c2, func(r Record) error {
		if first < 0 {
			_, due, _ := afpacket.StripTrailer(r.Frame)
			first = int64(due) - 5e9
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if first >= 0 && first <= lastAt {
		t.Fatalf("second capture began with a frame at %v, from the first (which ended at %v)", first, lastAt)
	}
}

// TestDaemonStoppingEndsTheStream: a daemon stopping (SIGTERM: it closes its server
// before it exits) sends the end record, so a capture running then ends cleanly; one
// that dies without it (kill -9: the connection just closes) is an error that says so.
func TestDaemonStoppingEndsTheStream(t *testing.T) {
	srv := New([]Port{{Switch: "s1", Index: 0, MaxFrame: 1518}}, fakeClock{}, slog.New(slog.DiscardHandler))
	path := filepath.Join(t.TempDir(), "s.sock")
	if err := srv.Listen(path); err != nil {
		t.Fatal(err)
	}
	st, err := Dial(context.Background(), path, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := st.Run(context.Background(), func(Record) error { return nil })
		got <- err
	}()
	srv.Close() // returns once the stream has ended
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("daemon stopping: %v; want the stream's orderly end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream's end never reached the client")
	}
	if _, err := Dial(context.Background(), path, "s1", 0); err == nil {
		t.Fatal("dialled a daemon that stopped listening")
	}

	// A daemon killed mid-stream: ok, one frame, then the socket closes.
	path = filepath.Join(t.TempDir(), "killed.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = bufio.NewReader(c).ReadString('\n')
		_, _ = c.Write(append([]byte("ok\n"), AppendRecord(nil, Record{Time: 1, Kind: In, Frame: []byte{1}})...))
		c.Close()
	}()
	st, err = Dial(context.Background(), path, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	_, err = st.Run(context.Background(), func(Record) error { n++; return nil })
	if err == nil || !strings.Contains(err.Error(), "closed the stream before its end") || n != 1 {
		t.Fatalf("after %d frames: %v; want the one frame, then an error saying the stream was cut", n, err)
	}
}
