package netns

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"reef/afpacket"
	"reef/wire"
)

// udpintTopo is a chain of three switches in hpcc mode with a host at each end.
const udpintTopo = `name: %s
defaults: {rate: 100Mbps, delay: 20us, buffer: 1MB, mtu: 1500}
generator: {kind: parking-lot, hops: 3, hosts_per_switch: [1, 0, 1]}
switches:
  "*": {int: {mode: hpcc}}
`

// hopLine is one INT record as examples/udpint prints it.
var hopLine = regexp.MustCompile(`hop (\d+): ts (\d+) ns, tx (\d+) B, queue (\d+) B, rate (\d+) kbit/s`)

// A transport that is not reef's (examples/udpint, its own module, written from
// docs/wire.md) runs in a lab's hosts, sends its own packets across three switches and
// reads the per-hop INT records the switches stamped: they are exactly the records a
// capture of the same packets at the receiver holds, as the wire package decodes them
// (what reef trace prints).
func TestExampleTransportReadsINT(t *testing.T) {
	needRoot(t)
	bin := filepath.Join(t.TempDir(), "udpint")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "examples", "udpint")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples/udpint: %v\n%s", err, out)
	}
	p := planFor(t, udpintTopo, labName("ui"))
	lab := up(t, p, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	capFile := filepath.Join(t.TempDir(), "h2.pcapng")
	f, err := os.Create(capFile)
	if err != nil {
		t.Fatal(err)
	}
	capCtx, stopCapture := context.WithCancel(ctx)
	captured := make(chan error, 1)
	go func() {
		_, err := Capture(capCtx, lab.Name, Target{Node: "h2", Iface: "eth0"}, f)
		captured <- err
	}()
	time.Sleep(200 * time.Millisecond) // the capture socket is bound
	const n = 5
	recv, err := Command(ctx, lab.Name, "h2", bin, "recv", "-n", strconv.Itoa(n))
	if err != nil {
		t.Fatal(err)
	}
	var recvOut bytes.Buffer // read after Wait, which waits for the copy
	recv.Stdout, recv.Stderr = &recvOut, &recvOut
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // listening
	sendOut, err := run(ctx, lab, "h1", bin, "send", "-to", "h2", "-n", strconv.Itoa(n), "-hops", "3")
	if err != nil {
		t.Fatalf("udpint send: %v\n%s", err, sendOut)
	}
	if err := recv.Wait(); err != nil {
		t.Fatalf("udpint recv: %v\n%s", err, recvOut.String())
	}
	time.Sleep(100 * time.Millisecond)
	stopCapture()
	if err := <-captured; err != nil {
		t.Fatal(err)
	}
	f.Close()

	// What the receiver printed, per packet: its records in order.
	var printed []string
	for _, m := range hopLine.FindAllStringSubmatch(recvOut.String(), -1) {
		printed = append(printed, fmt.Sprintf("%s %s %s %s %s", m[1], m[2], m[3], m[4], m[5]))
	}
	// What the capture holds for the same data packets.
	cf, err := os.Open(capFile)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	r, err := pcapgo.NewNgReader(cf, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	var decoded []string
	var h wire.Header
	for {
		fr, _, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		inner, _, _ := afpacket.StripTrailer(fr)
		v, ok := wire.Classify(inner)
		if !ok || !v.IsReef() || v.Type() != wire.TypeData || v.Dst() != p.Hosts[1].Config.Addr {
			continue
		}
		if err := h.Decode(inner[v.Reef:]); err != nil {
			t.Fatal(err)
		}
		for i, hop := range h.Hops {
			decoded = append(decoded, fmt.Sprintf("%d %d %d %d %d", i, hop.TS, hop.TxBytes, hop.QLen, hop.RateKbps))
		}
	}
	t.Logf("udpint printed %d hop records, the capture holds %d", len(printed), len(decoded))
	if len(printed) != 3*n {
		t.Fatalf("udpint printed %d hop records, want %d (3 switches × %d packets):\n%s", len(printed), 3*n, n, recvOut.String())
	}
	if fmt.Sprint(printed) != fmt.Sprint(decoded) {
		t.Errorf("udpint's records differ from the capture's:\nudpint  %v\ncapture %v", printed, decoded)
	}
}
