package switchd

import (
	"testing"

	"reef/units"
)

// A switch built with a few buffers (as the sim builds them) grows its pool for a burst
// and forwards all of it, with the same Due times as one built with the default pool.
func TestFewBuffersGrow(t *testing.T) {
	dues := func(buffers int) []units.Time {
		cfg := testConfig(2)
		cfg.Buffers = buffers
		s := mustNew(t, cfg)
		if got := len(s.pool.bufs); buffers > 0 && got != buffers {
			t.Fatalf("built with %d buffers, want %d", got, buffers)
		}
		for i := range 60 {
			s.Receive(units.Time(i), 0, pk{dst: hostAddr(1, i)}.build(t))
		}
		var out []units.Time
		for now := units.Time(0); now < 20*units.Millisecond; now += 10 * units.Microsecond {
			for {
				o, ok := s.Poll(now)
				if !ok {
					break
				}
				out = append(out, o.Due)
			}
		}
		return out
	}
	want, got := dues(0), dues(2)
	if len(want) != 60 || len(got) != len(want) {
		t.Fatalf("forwarded %d frames with 2 buffers up front, %d with the default; want 60", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("frame %d due %v with 2 buffers up front, %v with the default", i, got[i], want[i])
		}
	}
}
