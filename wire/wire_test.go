package wire

import (
	"bytes"
	"net/netip"
	"reflect"
	"testing"
)

func testAddrs() Addrs {
	return Addrs{
		SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		Src: netip.MustParseAddr("198.18.0.1"), Dst: netip.MustParseAddr("198.18.0.2"), SrcPort: 49152,
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		h    Header
	}{
		{"bare data", Header{Type: TypeData, FlowID: 7, Seq: 42, TS: 123456, Inflight: 9000, PayloadLen: 100}},
		{"ack with sack and echo", Header{Type: TypeAck, Flags: FlagECE, MPD: 3, FlowID: 1, Seq: 10, Ack: 5,
			EchoTS: 99, Turnaround: 1500, EchoMPD: 12, PathHops: 3,
			Sacks: []SackBlock{{7, 9}, {10, 11}}}},
		{"data with hop slots, two filled", Header{Type: TypeData, Flags: FlagINT, HopCap: 4,
			Hops: []Hop{{TS: 1, TxBytes: 2, QLen: 3, RateKbps: 4}, {TS: 5, TxBytes: 6, QLen: 7, RateKbps: 8}}}},
		{"cnp", Header{Type: TypeCNP, FlowID: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, tc.h.Len()+int(tc.h.PayloadLen))
			n, err := tc.h.Encode(buf)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.h.Len() {
				t.Fatalf("Encode wrote %d bytes, Len says %d", n, tc.h.Len())
			}
			var got Header
			if err := got.Decode(buf); err != nil {
				t.Fatal(err)
			}
			want := tc.h
			if want.Sacks == nil {
				want.Sacks = []SackBlock{}
			}
			if want.Hops == nil {
				want.Hops = []Hop{}
			}
			if got.Sacks == nil {
				got.Sacks = []SackBlock{}
			}
			if got.Hops == nil {
				got.Hops = []Hop{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	good := Header{Type: TypeData, HopCap: 2, PayloadLen: 10}
	buf := make([]byte, good.Len()+10)
	if _, err := good.Encode(buf); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
		want   error
	}{
		{"short", func(b []byte) []byte { return b[:HeaderLen-1] }, ErrShort},
		{"bad type", func(b []byte) []byte { b[OffType] = 9; return b }, ErrBadType},
		{"hops beyond cap", func(b []byte) []byte { b[OffNHops] = 3; return b }, ErrBadLen},
		{"too many sacks", func(b []byte) []byte { b[OffNSack] = MaxSack + 1; return b }, ErrBadLen},
		{"payload beyond frame", func(b []byte) []byte { return b[:len(b)-1] }, ErrShort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h Header
			if err := h.Decode(tc.mutate(bytes.Clone(buf))); err != tc.want {
				t.Fatalf("Decode = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestFrameViewAndPatches(t *testing.T) {
	h := Header{Type: TypeData, Flags: FlagINT, FlowID: 5, Seq: 1, HopCap: 2, PayloadLen: 1000}
	buf := make([]byte, 2048)
	n, err := BuildFrame(buf, testAddrs(), ECT0, &h)
	if err != nil {
		t.Fatal(err)
	}
	if n != Overhead+2*HopLen+1000 {
		t.Fatalf("frame length %d, want %d", n, Overhead+2*HopLen+1000)
	}
	v, ok := Classify(buf[:n])
	if !ok || !v.IsReef() {
		t.Fatalf("Classify: ok=%v reef=%v", ok, v.IsReef())
	}
	if IPv4Checksum(buf[EthLen:EthLen+IPv4Len]) != 0 {
		t.Fatal("fresh frame has a bad IPv4 checksum")
	}
	if !v.SetCE() || v.ECN() != CE {
		t.Fatal("SetCE did not mark an ECT packet")
	}
	if !v.DecTTL() || v.TTL() != DefaultTTL-1 {
		t.Fatalf("TTL after DecTTL = %d", v.TTL())
	}
	if IPv4Checksum(buf[EthLen:EthLen+IPv4Len]) != 0 {
		t.Fatal("incremental checksum updates left a bad IPv4 checksum")
	}
	v.SetMPD(77)
	v.SetFlags(FlagMPDSeen) // an mpd-mode switch stamped it
	if !v.PushHop(Hop{TS: 1, TxBytes: 2, QLen: 3, RateKbps: 4}) || !v.PushHop(Hop{TS: 5}) {
		t.Fatal("PushHop refused a free slot")
	}
	if v.PushHop(Hop{TS: 9}) {
		t.Fatal("PushHop wrote beyond HopCap")
	}
	var got Header
	if err := got.Decode(buf[ReefOffset:n]); err != nil {
		t.Fatal(err)
	}
	if got.Flags != FlagINT|FlagMPDSeen {
		t.Fatalf("flags after SetFlags(FlagMPDSeen) = %#x, want FlagINT|FlagMPDSeen kept together", got.Flags)
	}
	if got.MPD != 77 || len(got.Hops) != 2 || got.Hops[0] != (Hop{1, 2, 3, 4}) || got.Hops[1].TS != 5 {
		t.Fatalf("patched header decodes as %+v", got)
	}
	k := v.Key()
	if k.SrcPort != 49152 || k.DstPort != Port || k.Proto != 17 {
		t.Fatalf("flow key %+v", k)
	}
	if ak := testAddrs().Key(); ak != k {
		t.Fatalf("Addrs.Key() = %+v, the frame's key %+v", ak, k)
	}
	if v.FlowID() != 5 {
		t.Fatalf("FlowID() = %d, want 5", v.FlowID())
	}
}

func TestNotECTIsNeverMarked(t *testing.T) {
	h := Header{Type: TypeData}
	buf := make([]byte, 256)
	n, _ := BuildFrame(buf, testAddrs(), NotECT, &h)
	v, _ := Classify(buf[:n])
	if v.SetCE() || v.ECN() != NotECT {
		t.Fatal("a Not-ECT packet was marked")
	}
}

func TestPauseRoundTrip(t *testing.T) {
	b := make([]byte, PauseLen)
	BuildPause(b, [6]byte{2, 0, 0, 0, 0, 9}, 0xffff)
	q, ok := ParsePause(b)
	if !ok || q != 0xffff {
		t.Fatalf("ParsePause = %d, %v", q, ok)
	}
	if _, ok := ParsePause(b[:19]); ok {
		t.Fatal("short frame parsed as pause")
	}
}

func TestUpdateChecksumMatchesFull(t *testing.T) {
	h := Header{Type: TypeData}
	buf := make([]byte, 256)
	BuildFrame(buf, testAddrs(), ECT1, &h)
	ip := buf[EthLen : EthLen+IPv4Len]
	for ttl := 64; ttl > 1; ttl-- {
		old := be.Uint16(ip[8:])
		ip[8]--
		be.PutUint16(ip[10:], UpdateChecksum(be.Uint16(ip[10:]), old, be.Uint16(ip[8:])))
		if IPv4Checksum(ip) != 0 {
			t.Fatalf("checksum wrong after TTL %d", ip[8])
		}
	}
}

func FuzzDecode(f *testing.F) {
	h := Header{Type: TypeAck, HopCap: 2, Sacks: []SackBlock{{1, 2}}, Hops: []Hop{{TS: 1}}}
	buf := make([]byte, h.Len())
	h.Encode(buf)
	f.Add(buf)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		errT := h.DecodeTruncated(b)
		if errT == nil && h.Len() > len(b) {
			t.Fatalf("truncated header claims %d bytes from %d", h.Len(), len(b))
		}
		if err := h.Decode(b); err != nil {
			return
		}
		if errT != nil {
			t.Fatalf("Decode accepts what DecodeTruncated rejects: %v", errT)
		}
		// A header that decodes re-encodes to the same bytes (over its own length).
		out := make([]byte, h.Len())
		if _, err := h.Encode(out); err != nil {
			t.Fatalf("decoded header does not encode: %v", err)
		}
		if h.Len() > len(b) {
			t.Fatalf("decoded header claims %d bytes from %d", h.Len(), len(b))
		}
	})
}

func FuzzClassify(f *testing.F) {
	h := Header{Type: TypeData, HopCap: 1, PayloadLen: 8}
	buf := make([]byte, 512)
	n, _ := BuildFrame(buf, testAddrs(), ECT0, &h)
	f.Add(buf[:n])
	f.Add(buf[:30])
	f.Fuzz(func(t *testing.T, b []byte) {
		if n := FrameLen(b); n < len(b) {
			t.Fatalf("FrameLen = %d for %d bytes", n, len(b))
		}
		v, ok := Classify(b)
		if !ok {
			return
		}
		_ = v.ECN()
		_ = v.Key()
		v.SetCE()
		v.DecTTL()
		if v.IsReef() {
			_ = v.MPD()
			v.SetMPD(1)
			v.PushHop(Hop{TS: 1})
		}
	})
}

// A frame built into a buffer that holds only its headers is held truncated: the
// headers are the whole frame's, and FrameLen gives its length on the wire.
func TestBuildTruncated(t *testing.T) {
	h := Header{Type: TypeData, Flags: FlagINT, FlowID: 7, Seq: 3, HopCap: 2, PayloadLen: 1000}
	whole := make([]byte, 2048)
	n, err := BuildFrame(whole, testAddrs(), ECT0, &h)
	if err != nil {
		t.Fatal(err)
	}
	short := make([]byte, MaxHeaders(2))
	m, err := BuildTruncated(short, testAddrs(), ECT0, &h)
	if err != nil || m != n {
		t.Fatalf("BuildTruncated = %d, %v; want %d, nil", m, err, n)
	}
	hdrs := ReefOffset + h.Len()
	if !bytes.Equal(short[:hdrs], whole[:hdrs]) {
		t.Fatal("truncated frame's headers differ from the whole frame's")
	}
	if got := FrameLen(short); got != n {
		t.Fatalf("FrameLen(truncated) = %d, want %d", got, n)
	}
	if _, err := BuildFrame(short, testAddrs(), ECT0, &h); err == nil {
		t.Fatal("BuildFrame accepted a buffer shorter than the frame")
	}
	if _, err := BuildTruncated(short[:hdrs-1], testAddrs(), ECT0, &h); err == nil {
		t.Fatal("BuildTruncated accepted a buffer shorter than the headers")
	}
	v, ok := Classify(short)
	if !ok || !v.IsReef() {
		t.Fatal("Classify rejects a truncated frame")
	}
	var d Header
	if err := d.Decode(short[v.Reef:]); err != ErrShort {
		t.Fatalf("Decode(truncated) = %v, want ErrShort", err)
	}
	if err := d.DecodeTruncated(short[v.Reef:]); err != nil || d.Seq != 3 || d.PayloadLen != 1000 {
		t.Fatalf("DecodeTruncated = %v (seq %d, payload %d)", err, d.Seq, d.PayloadLen)
	}
}

func TestFrameLen(t *testing.T) {
	h := Header{Type: TypeAck}
	buf := make([]byte, 200)
	n, err := BuildFrame(buf, testAddrs(), NotECT, &h)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		frame []byte
		want  int
	}{
		{"whole", buf[:n], n},
		{"padded", buf[:n+10], n + 10},
		{"truncated", buf[:n-5], n},
		{"pause", make([]byte, PauseLen), PauseLen},
		{"short", buf[:EthLen+3], EthLen + 3},
		{"empty", nil, 0},
	}
	for _, tc := range tests {
		if got := FrameLen(tc.frame); got != tc.want {
			t.Errorf("%s: FrameLen = %d, want %d", tc.name, got, tc.want)
		}
	}
}
