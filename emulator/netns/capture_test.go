package netns

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"reef/afpacket"
	"reef/capture"
)

// TestSinkSortsSources: a capture fed by several sources writes its frames in stamp
// order, whatever order they came in (within the reorder window) and once each; a
// capture of one source writes them as they come.
func TestSinkSortsSources(t *testing.T) {
	now := time.Now()
	in := []time.Duration{3, 1, 2, 0, 5, 4} // ms after now, as the sources delivered them
	for _, tc := range []struct {
		reorder bool
		want    []time.Duration
	}{
		{true, []time.Duration{0, 1, 2, 3, 4, 5}},
		{false, in},
	} {
		var buf bytes.Buffer
		pw, err := capture.NewWriter(&buf, "s1:any")
		if err != nil {
			t.Fatal(err)
		}
		s := &frameSink{w: pw, reorder: tc.reorder}
		for _, d := range in {
			if err := s.write(now.Add(d*time.Millisecond), []byte{byte(d)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := errors.Join(s.close(), pw.Close()); err != nil {
			t.Fatal(err)
		}
		var got []time.Duration
		eachFrame(t, &buf, func(data []byte, at time.Time) {
			d := at.Sub(now).Round(time.Millisecond) / time.Millisecond
			if time.Duration(data[0]) != d {
				t.Fatalf("frame %d stamped %v", data[0], d)
			}
			got = append(got, d)
		})
		if len(got) != len(tc.want) {
			t.Fatalf("reorder %v: %d frames, want %d", tc.reorder, len(got), len(tc.want))
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("reorder %v: frames in order %v, want %v", tc.reorder, got, tc.want)
			}
		}
	}
}

// TestCaptureInMemoryEndsWithTheLab captures s2 of a three-switch chain whose switches
// share one daemon, so both of s2's links are carried in memory and have no interface:
// the frames of a ping across the chain reach the capture from the daemon (both links,
// both ways, each with its release trailer, in time order), and taking the lab down
// ends the capture by itself, cleanly.
func TestCaptureInMemoryEndsWithTheLab(t *testing.T) {
	needRoot(t)
	needTool(t, "ping")
	name := labName("cim")
	p := planFor(t, chainTopo, name)
	lab := up(t, p, Options{Shards: 1})
	target, err := ParseTarget(lab.Name, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if len(target.InMemory) != 2 {
		t.Fatalf("s2 of a one-shard chain: in-memory ports %+v; want both of its ports", target.InMemory)
	}
	var buf bytes.Buffer
	done := make(chan error, 1)
	listening := make(chan struct{})
	go func() {
		_, err := captureReady(context.Background(), lab.Name, target, &buf, func() { close(listening) })
		done <- err
	}()
	<-listening
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := run(ctx, lab, "h1", "ping", "-c", "3", "-i", "0.2", "-W", "2", "h2"); err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	if err := Down(context.Background(), lab.Name); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("capture: %v; want it to end cleanly when the lab goes down", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the capture did not end when the lab went down")
	}
	icmp := 0
	var last time.Time
	eachFrame(t, &buf, func(data []byte, at time.Time) {
		if at.Before(last) {
			t.Errorf("frame at %v after one at %v: want time order", at, last)
		}
		last = at
		inner, _, ok := afpacket.StripTrailer(data)
		if ok && len(inner) > 34 && inner[23] == 1 { // IPv4 protocol 1: ICMP
			icmp++
		}
	})
	// Three echo requests and three replies, each over s1–s2 and s2–s3.
	if icmp < 12 {
		t.Fatalf("%d ICMP frames with a trailer; want 12 (3 pings, both ways, over both of s2's links)", icmp)
	}
}

// eachFrame calls fn with every frame of the pcapng stream r and its stamp.
func eachFrame(t *testing.T, r io.Reader, fn func(data []byte, at time.Time)) {
	t.Helper()
	ng, err := pcapgo.NewNgReader(r, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, ci, err := ng.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(data, ci.Timestamp)
	}
}
