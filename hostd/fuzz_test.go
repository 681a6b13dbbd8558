package hostd_test

import (
	"testing"

	"reef/units"
)

// FuzzHostReceive feeds arbitrary frames to a host with a flow in progress: it must
// never panic, and keep a sane schedule.
func FuzzHostReceive(f *testing.F) {
	d := newDirect(f, units.Gbps, 20_000, 0)
	d.onSend = nil
	for i := 0; i < 5; i++ {
		d.now = max(d.now, min(d.h[0].NextDeadline(), d.h[1].NextDeadline()))
		for j, h := range d.h {
			for {
				out, ok := h.Poll(d.now)
				if !ok {
					break
				}
				f.Add(j, append([]byte(nil), out.Frame...))
				d.h[1-j].Receive(d.now, 0, out.Frame)
			}
		}
	}
	f.Fuzz(func(t *testing.T, to int, frame []byte) {
		d := newDirect(t, units.Gbps, 20_000, 0)
		for i := 0; i < 20; i++ {
			d.step()
		}
		h := d.h[to&1]
		h.Receive(d.now, 0, frame)
		for i := 0; i < 20; i++ {
			d.step()
		}
		if dl := h.NextDeadline(); dl < d.now {
			t.Fatalf("deadline %v before now %v after a fuzzed frame", dl, d.now)
		}
	})
}
