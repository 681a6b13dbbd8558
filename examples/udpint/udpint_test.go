package main

import (
	"bytes"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"reef/wire"
)

// TestFormatMatchesReef checks the format written from docs/wire.md against reef's own
// wire package: what this program encodes reef decodes, and what reef encodes (hop
// records as switches fill them) this program decodes.
func TestFormatMatchesReef(t *testing.T) {
	ours := &header{Type: typeAck, Flags: flagEchoMPDSeen, MPD: 7, FlowID: 3, Seq: 9, Ack: 10, TS: 1234, EchoTS: 1000,
		EchoMPD: 12, HopCap: 2, PathHops: 3, Hops: []hop{{TS: 100, TxBytes: 2000, QLen: 300, RateKbps: 10_000_000}}}
	var theirs wire.Header
	if err := theirs.Decode(ours.encode()); err != nil {
		t.Fatal(err)
	}
	want := wire.Header{Type: wire.TypeAck, Flags: wire.FlagEchoMPDSeen, MPD: 7, FlowID: 3, Seq: 9, Ack: 10, TS: 1234, EchoTS: 1000,
		EchoMPD: 12, HopCap: 2, PathHops: 3, Hops: []wire.Hop{{TS: 100, TxBytes: 2000, QLen: 300, RateKbps: 10_000_000}}}
	if !reflect.DeepEqual(theirs, want) {
		t.Errorf("reef decodes %+v\nwant %+v", theirs, want)
	}

	h := &wire.Header{Type: wire.TypeData, Flags: wire.FlagINT | wire.FlagMPDSeen, MPD: 5, FlowID: 1, Seq: 4, TS: 77, HopCap: 3,
		Sacks: []wire.SackBlock{{Start: 1, End: 2}}, Hops: []wire.Hop{{TS: 1, TxBytes: 2, QLen: 3, RateKbps: 4}, {TS: 5, TxBytes: 6, QLen: 7, RateKbps: 8}}}
	b := make([]byte, h.Len())
	if _, err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	got, err := decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != typeData || got.Flags != flagINT|flagMPDSeen || got.MPD != 5 || got.Seq != 4 || got.TS != 77 || got.HopCap != 3 ||
		!reflect.DeepEqual(got.Hops, []hop{{1, 2, 3, 4}, {5, 6, 7, 8}}) {
		t.Errorf("decoded %+v", got)
	}
	if _, err := decode(b[:40]); err == nil {
		t.Error("a short packet decodes")
	}
}

// TestRoundTripOnLoopback runs the receiver and the sender over real UDP sockets on
// the loopback (no switch in between), then sends the receiver a data packet with hop
// records filled as switches would, and checks that its ACK echoes them and the MPD.
func TestRoundTripOnLoopback(t *testing.T) {
	rc, err := listen(0)
	if err != nil {
		t.Skipf("UDP socket options: %v", err)
	}
	defer rc.Close()
	port := rc.LocalAddr().(*net.UDPAddr).Port
	done := make(chan error, 1)
	var got bytes.Buffer
	go func() { done <- recv(&got, rc, 4) }()

	var out bytes.Buffer
	if err := sendFrom(&out, "127.0.0.1", port, 0, 3, 2); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "ack "); n != 3 {
		t.Errorf("the sender read %d ACKs, want 3:\n%s", n, out.String())
	}

	// a data packet as it leaves two switches in hpcc and mpd mode
	h := &wire.Header{Type: wire.TypeData, Flags: wire.FlagINT | wire.FlagMPDSeen, MPD: 9, FlowID: 2, Seq: 7, TS: 50, HopCap: 2,
		Hops: []wire.Hop{{TS: 1047, TxBytes: 1308, QLen: 1146, RateKbps: 10_000_000}, {TS: 2964, TxBytes: 1308, RateKbps: 10_000_000}}}
	b := make([]byte, h.Len())
	if _, err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 2048)
	k, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	var ack wire.Header
	if err := ack.Decode(buf[:k]); err != nil {
		t.Fatal(err)
	}
	if ack.Type != wire.TypeAck || ack.Seq != 7 || ack.EchoTS != 50 || ack.EchoMPD != 9 || ack.Flags&wire.FlagEchoMPDSeen == 0 ||
		!reflect.DeepEqual(ack.Hops, h.Hops) {
		t.Errorf("ACK %+v does not echo the data packet's feedback", ack)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.String(), "data 7 from") || !strings.Contains(got.String(), "mpd 9 units") ||
		!strings.Contains(got.String(), "hop 0: ts 1047 ns, tx 1308 B, queue 1146 B, rate 10000000 kbit/s") {
		t.Errorf("the receiver printed:\n%s", got.String())
	}
}
