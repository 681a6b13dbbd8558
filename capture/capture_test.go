package capture

import (
	"bytes"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"reef/afpacket"
	"reef/internal/testenv"
	"reef/units"
	"reef/wire"
)

// frames builds a small trace: a data packet with two INT hops and an MPD, an ACK with a
// SACK block and ECE, and a non-reef UDP packet.
func frames(t *testing.T) [][]byte {
	t.Helper()
	a := wire.Addrs{SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		Src: netip.MustParseAddr("198.18.0.1"), Dst: netip.MustParseAddr("198.18.0.2"), SrcPort: 50000}
	data := wire.Header{Type: wire.TypeData, Flags: wire.FlagINT, MPD: 12, FlowID: 7, Seq: 3, TS: 1000,
		HopCap: 3, PayloadLen: 64, Hops: []wire.Hop{{TS: 11, TxBytes: 22, QLen: 33, RateKbps: 100000}, {TS: 44, TxBytes: 55, QLen: 66, RateKbps: 1000000}}}
	ack := wire.Header{Type: wire.TypeAck, Flags: wire.FlagECE, MPD: 2, FlowID: 7, Seq: 3, Ack: 2, EchoTS: 1000,
		Turnaround: 500, EchoMPD: 12, Sacks: []wire.SackBlock{{Start: 3, End: 4}}}
	var out [][]byte
	for i, h := range []wire.Header{data, ack} {
		buf := make([]byte, 1024)
		ecn := uint8(wire.ECT0)
		if i == 0 {
			ecn = wire.CE
		}
		n, err := wire.BuildFrame(buf, a, ecn, &h)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, buf[:n])
	}
	// A non-reef UDP frame: same headers, another port.
	other := bytes.Clone(out[1])
	other[wire.EthLen+wire.IPv4Len+2] = 0x13
	other[wire.EthLen+wire.IPv4Len+3] = 0x89
	return append(out, other)
}

func writeTrace(t *testing.T, fs [][]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.pcapng")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(f, "tor1:p1")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	for i, fr := range fs {
		if err := w.WriteFrame(t0.Add(time.Duration(i)*time.Millisecond), fr); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

func TestTraceDecodesINT(t *testing.T) {
	path := writeTrace(t, frames(t))
	f, _ := os.Open(path)
	defer f.Close()
	var out bytes.Buffer
	n, err := Trace(f, &out, TraceOptions{MPDUnit: 256 * units.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("read %d packets, want 3", n)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("printed %d lines:\n%s", len(lines), out.String())
	}
	for i, want := range [][]string{
		{"DATA flow=7 seq=3", "ecn=ce", "mpd=3.072µs", "hop0={ts=11 tx=22 q=33B rate=100000kbps}", "hop1={ts=44"},
		{"ACK flow=7", "ack=2", "echo_mpd=3.072µs", "turnaround=500ns", "ECE", "sack0=[3,4)"},
		{"UDP", "ttl=64"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
}

func TestTraceRejectsGarbage(t *testing.T) {
	if _, err := Trace(strings.NewReader("not a capture at all"), &bytes.Buffer{}, TraceOptions{}); err == nil {
		t.Fatal("garbage accepted as a trace")
	}
}

// TestWiresharkDissector runs Debian's tshark with dissector/reef.lua over a trace and
// checks it shows the same INT values the Go layer decodes.
func TestWiresharkDissector(t *testing.T) {
	tshark := testenv.RequireProgram(t, "tshark")
	path := writeTrace(t, frames(t))
	lua, _ := filepath.Abs(filepath.Join("..", "dissector", "reef.lua"))
	cmd := exec.Command(tshark, "-X", "lua_script:"+lua, "-r", path, "-T", "fields", "-E", "separator=;",
		"-e", "reef.type", "-e", "reef.flow", "-e", "reef.mpd", "-e", "reef.echo_mpd", "-e", "reef.nhops",
		"-e", "reef.hop.qlen", "-e", "reef.hop.rate_kbps", "-e", "reef.sack.start", "-e", "reef.flags.ece")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("tshark: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("tshark printed %d lines:\n%s", len(lines), out)
	}
	want := []string{
		"1;7;12;0;2;33,66;100000,1000000;;0",
		"2;7;2;12;0;;;3;1",
		";;;;;;;;",
	}
	for i := range want {
		if got := strings.ReplaceAll(lines[i], "\r", ""); got != want[i] {
			t.Errorf("packet %d: tshark fields %q, want %q", i+1, got, want[i])
		}
	}
}

// The 12 bytes a daemon appends after the IP packet (the release trailer) are claimed
// by the dissector, not shown as another vendor's Ethernet trailer (vssmonitoring).
func TestWiresharkClaimsTrailer(t *testing.T) {
	tshark := testenv.RequireProgram(t, "tshark")
	data := frames(t)[0]
	buf := make([]byte, len(data)+afpacket.TrailerLen)
	n, ok := afpacket.PutTrailer(buf, data, 1234567890123)
	if !ok {
		t.Fatal("no trailer written")
	}
	path := writeTrace(t, [][]byte{buf[:n]})
	lua, _ := filepath.Abs(filepath.Join("..", "dissector", "reef.lua"))
	out, err := exec.Command(tshark, "-X", "lua_script:"+lua, "-r", path, "-T", "fields", "-E", "separator=;",
		"-e", "reef_trailer.due", "-e", "reef.flow", "-e", "frame.protocols").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	got := strings.TrimSpace(strings.ReplaceAll(string(out), "\r", ""))
	if !strings.HasPrefix(got, "1234567890123;7;") || strings.Contains(got, "vssmonitoring") {
		t.Errorf("tshark fields %q, want the trailer's Due 1234567890123, flow 7 and no vssmonitoring", got)
	}
}

func FuzzReefLayer(f *testing.F) {
	for _, fr := range frames(&testing.T{}) {
		f.Add(fr)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		w, _ := NewWriter(&out, "fuzz")
		_ = w.WriteFrame(time.Unix(0, 0), b)
		_ = w.Close()
		_, _ = Trace(&out, &bytes.Buffer{}, TraceOptions{MPDUnit: 1})
	})
}
