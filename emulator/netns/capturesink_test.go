package netns

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

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
		r, err := pcapgo.NewNgReader(&buf, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			t.Fatal(err)
		}
		var got []time.Duration
		for {
			data, ci, err := r.ReadPacketData()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			d := ci.Timestamp.Sub(now).Round(time.Millisecond) / time.Millisecond
			if time.Duration(data[0]) != d {
				t.Fatalf("frame %d stamped %v", data[0], d)
			}
			got = append(got, d)
		}
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
