package hostd_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"reef/hostd"
	"reef/hostd/hosttest"
	"reef/units"
	"reef/wire"
)

// Hosts that store frames truncated after their headers (Options.Snap, the sim's way)
// send the same frames at the same times as hosts that store them whole, cut at the
// snap length, and finish their flows alike: a flow with INT slots, a window that
// loses nothing and frames the receiver acknowledges one by one.
func TestSnapChangesNothing(t *testing.T) {
	type frame struct {
		from, n int
		due     units.Time
		head    []byte
	}
	snap := wire.MaxHeaders(2)
	exchange := func(opts hostd.Options) ([]frame, [2]hostd.HostStats, []hostd.Completion) {
		var h [2]*hostd.Host
		for i := range h {
			var err error
			h[i], err = hostd.New(hostd.Config{Name: "h", Addr: hosttest.Addr(i), Rate: 10 * units.Gbps, MTU: 1500}, opts)
			if err != nil {
				t.Fatal(err)
			}
		}
		addFlow(t, h[0], hostd.FlowSpec{ID: 1, Dst: hosttest.Addr(1), Size: 300 * units.Kilobyte, HopCap: 2,
			Alg: &hosttest.Fixed{W: 30 * units.Kilobyte}})
		var out []frame
		for now := units.Time(0); ; {
			now = max(now, min(h[0].NextDeadline(), h[1].NextDeadline()))
			if now == units.Never {
				break
			}
			for i := range h {
				for {
					o, ok := h[i].Poll(now)
					if !ok {
						break
					}
					out = append(out, frame{i, wire.FrameLen(o.Frame), o.Due, bytes.Clone(o.Frame[:min(len(o.Frame), snap)])})
					h[1-i].Receive(o.Due, 0, o.Frame)
				}
			}
		}
		return out, [2]hostd.HostStats{h[0].Stats(), h[1].Stats()}, h[0].Completions()
	}
	want, wantStats, wantDone := exchange(hostd.Options{})
	got, gotStats, gotDone := exchange(hostd.Options{Snap: snap})
	if len(wantDone) != 1 || len(want) < 400 {
		t.Fatalf("whole frames: %d frames, completions %v; want the flow to finish", len(want), wantDone)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("snap hosts sent %d frames, whole-frame hosts %d, or other frames", len(got), len(want))
	}
	if gotStats != wantStats || !reflect.DeepEqual(gotDone, wantDone) {
		t.Fatalf("snap hosts: %+v, %v; whole-frame hosts: %+v, %v", gotStats, gotDone, wantStats, wantDone)
	}
}

func TestSnapRejects(t *testing.T) {
	cfg := hostd.Config{Name: "h", Addr: hosttest.Addr(0), Rate: units.Gbps, MTU: 1500}
	for _, snap := range []int{-1, wire.MinSnap - 1, 1500 + wire.EthLen + 1} {
		if _, err := hostd.New(cfg, hostd.Options{Snap: snap}); err == nil || !strings.Contains(err.Error(), "snap") {
			t.Errorf("snap %d: err = %v; want an error about snap", snap, err)
		}
	}
	h, err := hostd.New(cfg, hostd.Options{Snap: wire.MaxHeaders(1)})
	if err != nil {
		t.Fatal(err)
	}
	err = h.AddFlow(hostd.FlowSpec{ID: 1, Dst: hosttest.Addr(1), HopCap: 2, Alg: &hosttest.Fixed{W: units.Kilobyte}})
	if err == nil || !strings.Contains(err.Error(), "do not fit the host's snap") {
		t.Fatalf("a flow whose headers exceed the snap: err = %v", err)
	}
}
