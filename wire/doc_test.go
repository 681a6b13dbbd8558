package wire_test

import (
	"encoding/binary"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"

	"reef/afpacket"
	"reef/hostd/transport"
	"reef/switchd"
	"reef/units"
	"reef/wire"
)

var update = flag.Bool("update", false, "rewrite the generated blocks of docs/wire.md")

const docPath = "../docs/wire.md"

// TestWireDoc checks docs/wire.md, the wire format's specification, against the code:
// every table and worked example in it is generated here (from the wire constants, by
// encoding headers, and by running real switches and a real receiver over the frames),
// and the file must hold exactly what is generated. -update rewrites it.
func TestWireDoc(t *testing.T) {
	blocks := map[string]string{
		"header":  headerTable(t),
		"flags":   flagTable(),
		"hop":     hopTable(t),
		"trailer": trailerExample(t),
		"pause":   pauseExample(),
	}
	for name, text := range examples(t) {
		blocks[name] = text
	}
	src, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile(`(?s)<!-- generated: ([a-z-]+) -->\n.*?<!-- end -->`)
	seen := map[string]bool{}
	out := marker.ReplaceAllStringFunc(string(src), func(m string) string {
		name := marker.FindStringSubmatch(m)[1]
		text, ok := blocks[name]
		if !ok {
			t.Errorf("docs/wire.md has a block %q that nothing generates", name)
			return m
		}
		seen[name] = true
		return "<!-- generated: " + name + " -->\n" + text + "<!-- end -->"
	})
	for name := range blocks {
		if !seen[name] {
			t.Errorf("docs/wire.md lacks the generated block %q", name)
		}
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if out != string(src) {
		a, b := strings.Split(string(src), "\n"), strings.Split(out, "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("docs/wire.md differs from the code at line %d:\n  doc:  %s\n  code: %s\nrun go test ./wire -run TestWireDoc -update and review the diff", i+1, a[i], b[i])
			}
		}
		t.Fatal("docs/wire.md differs from the code in length; run go test ./wire -run TestWireDoc -update")
	}
}

// field is one fixed field of the reef header: where it is, and how to read it from a
// decoded Header.
type field struct {
	off, size int
	name, doc string
	get       func(h *wire.Header) uint64
}

var headerFields = []field{
	{wire.OffType, 1, "Type", "packet type: 1 data, 2 ACK, 3 CNP", func(h *wire.Header) uint64 { return uint64(h.Type) }},
	{wire.OffFlags, 1, "Flags", "flag bits, below", func(h *wire.Header) uint64 { return uint64(h.Flags) }},
	{wire.OffMPD, 2, "MPD", "Poseidon's max-per-hop queueing delay on this packet's own path, in MPD units, saturating at 0xffff (switches in mpd mode)", func(h *wire.Header) uint64 { return uint64(h.MPD) }},
	{wire.OffFlowID, 4, "FlowID", "the flow's identifier, unique in the run", func(h *wire.Header) uint64 { return uint64(h.FlowID) }},
	{wire.OffSeq, 8, "Seq", "data: packet number (0, 1, …; a retransmission keeps its number); ACK: the packet number that triggered it", func(h *wire.Header) uint64 { return h.Seq }},
	{wire.OffAck, 8, "Ack", "ACK, CNP: cumulative ack, every packet number below it has arrived; data: the receiver's instructions (below)", func(h *wire.Header) uint64 { return h.Ack }},
	{wire.OffTS, 8, "TS", "sender's transmit time, ns of the run's clock (signed)", func(h *wire.Header) uint64 { return uint64(h.TS) }},
	{wire.OffEchoTS, 8, "EchoTS", "ACK, CNP: the TS of the data packet acknowledged (RTT = now − EchoTS)", func(h *wire.Header) uint64 { return uint64(h.EchoTS) }},
	{wire.OffTurn, 4, "Turnaround", "ACK: ns the receiver held that data packet before this ACK", func(h *wire.Header) uint64 { return uint64(h.Turnaround) }},
	{wire.OffInflight, 4, "Inflight", "data: the sender's bytes in flight, this packet included; ACK: echoed from the data packet (OSCAR)", func(h *wire.Header) uint64 { return uint64(h.Inflight) }},
	{wire.OffEchoMPD, 2, "EchoMPD", "ACK: the MPD field of the data packet acknowledged (the forward path's MPD)", func(h *wire.Header) uint64 { return uint64(h.EchoMPD) }},
	{wire.OffNSack, 1, "NSack", "number of SACK blocks after the header (≤ 4)", func(h *wire.Header) uint64 { return uint64(len(h.Sacks)) }},
	{wire.OffHopCap, 1, "HopCap", "INT hop slots reserved after the SACK blocks (≤ 8)", func(h *wire.Header) uint64 { return uint64(h.HopCap) }},
	{wire.OffNHops, 1, "NHops", "hop slots filled, in path order (≤ HopCap)", func(h *wire.Header) uint64 { return uint64(len(h.Hops)) }},
	{wire.OffPathHops, 1, "PathHops", "ACK: switches on the data packet's path (64 − its TTL on arrival)", func(h *wire.Header) uint64 { return uint64(h.PathHops) }},
	{wire.OffPayload, 2, "PayloadLen", "payload bytes after the header, SACK blocks and hop slots", func(h *wire.Header) uint64 { return uint64(h.PayloadLen) }},
}

var hopFields = []field{
	{0, 8, "TS", "the switch's departure time of the packet, ns of the lab's clock (signed; only differences between records mean anything)", func(*wire.Header) uint64 { return 0 }},
	{8, 8, "TxBytes", "the egress port's cumulative transmitted bytes, this packet included", nil},
	{16, 4, "QLen", "the egress queue's backlog in bytes when the packet was dequeued (the packet itself not counted)", nil},
	{20, 4, "RateKbps", "the egress link's rate in kbit/s", nil},
}

// distinct is a header whose every field holds a different, recognisable value.
func distinct() *wire.Header {
	return &wire.Header{Type: wire.TypeAck, Flags: 0x3f, MPD: 0x0203, FlowID: 0x04050607,
		Seq: 0x08090a0b0c0d0e0f, Ack: 0x1011121314151617, TS: 0x18191a1b1c1d1e1f, EchoTS: 0x2021222324252627,
		Turnaround: 0x28292a2b, Inflight: 0x2c2d2e2f, EchoMPD: 0x3031, HopCap: 3, PathHops: 0x35, PayloadLen: 0x3637,
		Sacks: []wire.SackBlock{{1, 2}, {3, 4}}, Hops: []wire.Hop{{TS: 5}}}
}

// headerTable writes the fixed header's fields after checking the table against the
// encoder: each field's bytes, read big endian at its offset, are its value, and the
// fields tile the header.
func headerTable(t *testing.T) string {
	h := distinct()
	b := make([]byte, h.Len())
	if _, err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	checkTiles(t, "reef header", headerFields, wire.HeaderLen)
	var s strings.Builder
	s.WriteString("| offset | size | field | meaning |\n| ---: | ---: | --- | --- |\n")
	for _, f := range headerFields {
		if got := readBE(b[f.off : f.off+f.size]); got != f.get(h) {
			t.Errorf("header field %s: bytes %d-%d hold %#x, want %#x: the table is wrong", f.name, f.off, f.off+f.size-1, got, f.get(h))
		}
		fmt.Fprintf(&s, "| %d | %d | %s | %s |\n", f.off, f.size, f.name, f.doc)
	}
	fmt.Fprintf(&s, "\nThe fixed part is %d bytes; then NSack SACK blocks of %d bytes (Start, End: 8 bytes each), then HopCap hop slots of %d bytes, then the payload.\n",
		wire.HeaderLen, wire.SackLen, wire.HopLen)
	return s.String()
}

func checkTiles(t *testing.T, what string, fs []field, total int) {
	off := 0
	for _, f := range fs {
		if f.off != off {
			t.Errorf("%s: field %s at %d, want %d (the fields must tile it)", what, f.name, f.off, off)
		}
		off = f.off + f.size
	}
	if off != total {
		t.Errorf("%s: fields end at %d, want %d", what, off, total)
	}
}

func readBE(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

func flagTable() string {
	flags := []struct {
		bit  uint8
		name string
		doc  string
	}{
		{wire.FlagECE, "ECE", "ACK: the acknowledged data packet arrived marked CE; CNP: always set"},
		{wire.FlagINT, "INT", "data: switches in hpcc mode fill a hop slot"},
		{wire.FlagRetx, "Retx", "data: a retransmission"},
		{wire.FlagFin, "Fin", "data: the last packet of a message"},
		{wire.FlagMPDSeen, "MPDSeen", "set by every switch in mpd mode the packet crosses: MPD 0 then means an idle INT hop, not a path without INT"},
		{wire.FlagEchoMPDSeen, "EchoMPDSeen", "ACK: the acknowledged data packet had MPDSeen (its EchoMPD came from an INT switch)"},
	}
	var s strings.Builder
	s.WriteString("| bit | mask | flag | meaning |\n| ---: | ---: | --- | --- |\n")
	for _, f := range flags {
		bit := 0
		for f.bit>>bit != 1 {
			bit++
		}
		fmt.Fprintf(&s, "| %d | 0x%02x | %s | %s |\n", bit, f.bit, f.name, f.doc)
	}
	s.WriteString("\nThe other bits are 0 when sent and ignored when received.\n")
	return s.String()
}

// hopTable writes the hop record's fields after checking them against PutHop.
func hopTable(t *testing.T) string {
	checkTiles(t, "hop record", hopFields, wire.HopLen)
	h := wire.Hop{TS: 0x0102030405060708, TxBytes: 0x090a0b0c0d0e0f10, QLen: 0x11121314, RateKbps: 0x15161718}
	b := make([]byte, wire.HopLen)
	wire.PutHop(b, h)
	want := []uint64{uint64(h.TS), h.TxBytes, uint64(h.QLen), uint64(h.RateKbps)}
	var s strings.Builder
	s.WriteString("| offset | size | field | meaning |\n| ---: | ---: | --- | --- |\n")
	for i, f := range hopFields {
		if got := readBE(b[f.off : f.off+f.size]); got != want[i] {
			t.Errorf("hop field %s: bytes hold %#x, want %#x", f.name, got, want[i])
		}
		fmt.Fprintf(&s, "| %d | %d | %s | %s |\n", f.off, f.size, f.name, f.doc)
	}
	return s.String()
}

// hexdump writes b 16 bytes a line, offsets in hex.
func hexdump(b []byte) string {
	var s strings.Builder
	for i := 0; i < len(b); i += 16 {
		fmt.Fprintf(&s, "%04x ", i)
		for j := i; j < min(i+16, len(b)); j++ {
			if j == i+8 {
				s.WriteByte(' ')
			}
			fmt.Fprintf(&s, " %02x", b[j])
		}
		s.WriteByte('\n')
	}
	return s.String()
}

// describe decodes a frame the way a reader of this document would: the IP fields a
// switch touches and every reef field, each with its offset in the frame.
func describe(t *testing.T, frame []byte) string {
	v, ok := wire.Classify(frame)
	if !ok || !v.IsReef() {
		t.Fatalf("not a reef frame:\n%s", hexdump(frame))
	}
	var h wire.Header
	if err := h.Decode(frame[v.Reef:]); err != nil {
		t.Fatal(err)
	}
	var s strings.Builder
	ip := wire.EthLen
	udp := ip + wire.IPv4Len
	fmt.Fprintf(&s, "0x%02x IPv4 TOS   = 0x%02x (ECN %s)\n0x%02x IPv4 TTL   = %d\n0x%02x UDP ports  = %d → %d\n",
		ip+1, frame[ip+1], ecnName(frame[ip+1]&3), ip+8, frame[ip+8],
		udp, binary.BigEndian.Uint16(frame[udp:]), binary.BigEndian.Uint16(frame[udp+2:]))
	for _, f := range headerFields {
		fmt.Fprintf(&s, "0x%02x %-10s = %d", v.Reef+f.off, f.name, f.get(&h))
		if f.name == "Flags" {
			fmt.Fprintf(&s, " (%s)", flagNames(h.Flags))
		}
		s.WriteByte('\n')
	}
	off := v.Reef + wire.HeaderLen
	for _, sk := range h.Sacks {
		fmt.Fprintf(&s, "0x%02x SACK       = [%d, %d)\n", off, sk.Start, sk.End)
		off += wire.SackLen
	}
	for i := range int(h.HopCap) {
		if i < len(h.Hops) {
			hp := h.Hops[i]
			fmt.Fprintf(&s, "0x%02x hop %d      = TS %d, TxBytes %d, QLen %d, RateKbps %d\n", off, i, hp.TS, hp.TxBytes, hp.QLen, hp.RateKbps)
		} else {
			fmt.Fprintf(&s, "0x%02x hop %d      = (empty slot)\n", off, i)
		}
		off += wire.HopLen
	}
	fmt.Fprintf(&s, "0x%02x payload    = %d bytes\n", off, h.PayloadLen)
	return s.String()
}

func ecnName(e uint8) string {
	return [...]string{"Not-ECT", "ECT(1)", "ECT(0)", "CE"}[e]
}

func flagNames(f uint8) string {
	var out []string
	for i, n := range []string{"ECE", "INT", "Retx", "Fin", "MPDSeen", "EchoMPDSeen"} {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "|")
}

func block(intro string, frame []byte, desc string) string {
	return intro + "\n\n```\n" + hexdump(frame) + "```\n\n```\n" + desc + "```\n"
}

var (
	hostA = netip.MustParseAddr("198.18.0.1")
	hostB = netip.MustParseAddr("198.18.0.2")
	macA  = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	macB  = [6]byte{0x02, 0, 0, 0, 0, 0x02}
)

// path is two switches between host A (port 0 of s1) and host B (port 1 of s2); the
// links towards B run at 10 Gbps so a packet sent right behind another queues.
func path(t *testing.T, mode string) []*switchd.Switch {
	var sws []*switchd.Switch
	for k := range 2 {
		cfg := switchd.Config{Name: fmt.Sprintf("s%d", k+1), Seed: 1, INT: switchd.INTConfig{Mode: mode, MPDUnit: 100 * units.Nanosecond}}
		for p := range 2 {
			cfg.Ports = append(cfg.Ports, switchd.PortConfig{
				Name: fmt.Sprintf("p%d", p), MAC: [6]byte{0x02, 0, 0, 0, byte(0x10 + k), byte(p)}, PeerMAC: [6]byte{0x02, 0, 0, 0, byte(0x20 + k), byte(p)},
				Rate: []units.Rate{100 * units.Gbps, 10 * units.Gbps}[p], Delay: units.Microsecond, Buffer: units.Megabyte, MTU: 1500,
			})
		}
		cfg.Routes = []switchd.Route{
			{Prefix: netip.PrefixFrom(hostA, 32), Ports: []int{0}},
			{Prefix: netip.PrefixFrom(hostB, 32), Ports: []int{1}},
		}
		s, err := switchd.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sws = append(sws, s)
	}
	return sws
}

// cross sends frames into s1 at time 0, one after another, and returns them as they
// leave s2 towards host B, with their arrival times there.
func cross(t *testing.T, sws []*switchd.Switch, frames [][]byte) (out [][]byte, at []units.Time) {
	for _, f := range frames {
		sws[0].Receive(0, 0, f)
	}
	for {
		next, who := units.Never, -1
		for k, s := range sws {
			if d := s.NextDeadline(); d < next {
				next, who = d, k
			}
		}
		if who < 0 {
			return out, at
		}
		for {
			o, ok := sws[who].Poll(next)
			if !ok {
				break
			}
			if who == 0 {
				sws[1].Receive(o.Due, 0, o.Frame)
			} else {
				out = append(out, append([]byte(nil), o.Frame...))
				at = append(at, o.Due)
			}
		}
	}
}

// dataFrame is what host A's transport sends: packet seq of flow 7, payload bytes,
// hopCap INT slots (FlagINT when any), the receiver asked to ACK every packet (Ack = 1).
func dataFrame(t *testing.T, seq uint64, payload int, hopCap uint8, ts int64) []byte {
	h := &wire.Header{Type: wire.TypeData, FlowID: 7, Seq: seq, Ack: 1, TS: ts, HopCap: hopCap,
		PayloadLen: uint16(payload), Inflight: uint32(payload)}
	if hopCap > 0 {
		h.Flags |= wire.FlagINT
	}
	buf := make([]byte, 2048)
	n, err := wire.BuildFrame(buf, wire.Addrs{SrcMAC: macA, DstMAC: [6]byte{0x02, 0, 0, 0, 0x10, 0}, Src: hostA, Dst: hostB, SrcPort: 49152 + 7}, wire.ECT0, h)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// examples runs the worked examples: data packets across two hpcc and two mpd
// switches (behind a 1000-byte packet, so they queue), and the receiver's ACK.
func examples(t *testing.T) map[string]string {
	out := map[string]string{}
	// packets 0 (1000 bytes), 2 (16 bytes) and 3 (1000 bytes), sent at once: packet 1
	// was lost, so the ACK of packet 2 carries a SACK block.
	sent := dataFrame(t, 2, 16, 2, 0)
	out["data-sent"] = block("Packet 2 of flow 7, 16 payload bytes, two hop slots reserved (HopCap 2, FlagINT); sent at TS 0 between packets 0 and 3 (1000 bytes each); the receiver is to acknowledge every packet (Ack = 1: ACK every 1 packet, no delay, no CNPs).",
		sent, describe(t, sent))

	got, at := cross(t, path(t, switchd.INTHPCC), [][]byte{dataFrame(t, 0, 1000, 2, 0), sent, dataFrame(t, 3, 1000, 2, 0)})
	hpcc := got[1]
	out["data-hpcc"] = block("Both switches filled a slot (NHops 2) with their departure time, the port's transmitted bytes (packet 0's frame and this one), its queue when the packet was dequeued (packet 3's frame, at the first switch only: it had reached the second switch's queue no sooner than this packet left it) and its rate (10 Gbps = 10000000 kbit/s), and decremented the TTL (64 → 62); their ports rewrote the MAC addresses.",
		hpcc, describe(t, hpcc))

	gotMPD, _ := cross(t, path(t, switchd.INTMPD), [][]byte{dataFrame(t, 0, 1000, 0, 0), dataFrame(t, 2, 16, 0, 0)})
	mpd := gotMPD[1]
	out["data-mpd"] = block("The same packets without hop slots across two switches in mpd mode with an MPD unit of 100 ns: both set MPDSeen, and MPD holds the larger of their queueing delays in units, rounded up (here the first switch's, the time to serialise packet 0 at 10 Gbps).",
		mpd, describe(t, mpd))

	r := transport.NewReceiver(7, wire.Addrs{SrcMAC: macB, DstMAC: [6]byte{0x02, 0, 0, 0, 0x21, 1}, Src: hostB, Dst: hostA, SrcPort: 49152 + 7})
	buf := make([]byte, 2048)
	var ack []byte
	for i, f := range got[:2] {
		v, _ := wire.Classify(f)
		r.HandlePacket(at[i], v)
		tx, ok := r.PollTransmit(at[i]+500, buf)
		if !ok {
			t.Fatalf("no ACK for packet %d", i)
		}
		ack = append([]byte(nil), buf[:tx.Len]...)
	}
	out["ack"] = block("Host B's receiver acknowledges packet 2 500 ns after it arrived (Turnaround 500): cumulative Ack 1 (packet 1 is missing), a SACK block [2, 3), EchoTS the data's TS, PathHops 2 (its TTL was 62), and a copy of the two hop records (HopCap = NHops = 2). The ACK is Not-ECT and carries no FlagINT: switches in hpcc mode do not stamp it.",
		ack, describe(t, ack))
	return out
}

func trailerExample(t *testing.T) string {
	frame := dataFrame(t, 2, 16, 0, 0)
	dst := make([]byte, len(frame)+afpacket.TrailerLen)
	due := units.Time(1_234_567_890)
	n, ok := afpacket.PutTrailer(dst, frame, due)
	if !ok {
		t.Fatal("no trailer written")
	}
	inner, back, ok := afpacket.StripTrailer(dst[:n])
	if !ok || back != due || string(inner) != string(frame) {
		t.Fatal("trailer does not round-trip")
	}
	var s strings.Builder
	fmt.Fprintf(&s, "| offset after the IP packet | size | field |\n| ---: | ---: | --- |\n| 0 | 8 | Due: the frame's due time, CLOCK_MONOTONIC ns (signed) |\n| 8 | 4 | magic 0x%08X |\n\n", afpacket.TrailerMagic)
	fmt.Fprintf(&s, "The %d-byte data packet without hop slots above with a trailer carrying Due = %d ns (the IP total length, 0x%04x, still ends at byte 0x%02x):\n\n```\n%s```\n",
		len(frame), int64(due), binary.BigEndian.Uint16(frame[wire.EthLen+2:]), len(frame), hexdump(dst[:n]))
	return s.String()
}

func pauseExample() string {
	b := make([]byte, wire.PauseLen)
	n := wire.BuildPause(b, [6]byte{0x02, 0, 0, 0, 0x10, 1}, 0xffff)
	return "A switch port 02:00:00:00:10:01 pausing priority 0 for 0xffff quanta (bytes 14-15 opcode, 16-17 priority-enable vector, 18-19 priority 0's quanta):\n\n```\n" + hexdump(b[:n]) + "```\n"
}
