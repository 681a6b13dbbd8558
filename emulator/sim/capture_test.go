package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"reef/emulator"
	"reef/emulator/scenario"
	"reef/units"
	"reef/wire"
)

// A run with captures writes a pcapng per target, as netns does: every frame crossing
// the host's interface both ways and every frame crossing the switch port, stamped with
// its Due in virtual time, data frames as the headers the sim holds of them; and
// capturing changes nothing the run measured.
func TestCaptureWritesPcapng(t *testing.T) {
	hosts := []testHost{
		{Name: "h1", Sw: 0, Rate: units.Gbps, Delay: units.Microsecond, Buffer: 100 * units.Kilobyte},
		{Name: "h2", Sw: 1, Rate: units.Gbps, Delay: units.Microsecond, Buffer: 100 * units.Kilobyte},
	}
	p := chainPlan(2, units.Gbps, 2*units.Microsecond, 100*units.Kilobyte, hosts, 1500)
	sc := &scenario.Scenario{Name: "cap", Seed: 1, Duration: 2 * units.Millisecond, SampleInterval: 100 * units.Microsecond,
		Flows: []scenario.Flow{fixedFlow(1, "f", "h1", "h2", 15000)}}
	dir := t.TempDir()
	be := Backend{Create: func(path string) (io.WriteCloser, error) { return os.Create(path) }}
	run, err := be.Run(context.Background(), p, sc, emulator.RunOptions{OutDir: dir, Capture: []string{"h1", "s1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Backend{}.Run(context.Background(), p, sc, emulator.RunOptions{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(run)
	b, _ := json.Marshal(plain)
	if !bytes.Equal(a, b) {
		t.Error("the captured run's results differ from the plain run's")
	}
	s1 := p.Switches[0].Config
	for _, tc := range []struct {
		file string
		min  int
	}{
		{"h1-eth0.pcapng", 10}, // data out, ACKs in
		{"s1-" + s1.Ports[1].Name + ".pcapng", 10},
	} {
		f, err := os.Open(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			t.Fatal(err)
		}
		n, data, acks := 0, 0, 0
		var last time.Time
		for {
			frame, ci, err := r.ReadPacketData()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
			if ci.Timestamp.Before(last) || ci.Timestamp.After(time.Unix(0, 0).Add(time.Duration(sc.Duration))) {
				t.Fatalf("%s frame %d at %v: want virtual times in order within the run", tc.file, n, ci.Timestamp)
			}
			last = ci.Timestamp
			if v, ok := wire.Classify(frame); ok && v.IsReef() {
				switch v.Type() {
				case wire.TypeData:
					data++
					// The sim stores its frames' headers only: a data frame is captured
					// so, with its length on the wire as the original length.
					if ci.Length != wire.FrameLen(frame) || ci.CaptureLength != len(frame) || len(frame) >= ci.Length {
						t.Fatalf("%s data frame %d: captured %d of %d bytes (%d held); want its headers of its length on the wire, %d",
							tc.file, n, ci.CaptureLength, ci.Length, len(frame), wire.FrameLen(frame))
					}
				case wire.TypeAck:
					acks++
				}
			}
		}
		f.Close()
		if n < tc.min || data == 0 || acks == 0 {
			t.Errorf("%s: %d frames (%d data, %d ACKs), want at least %d with both", tc.file, n, data, acks, tc.min)
		}
	}
	if _, err := (Backend{}).Run(context.Background(), p, sc, emulator.RunOptions{OutDir: dir, Capture: []string{"h9"}}); err == nil {
		t.Error("a capture of a node the lab lacks ran")
	}
}
