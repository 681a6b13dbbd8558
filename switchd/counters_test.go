package switchd

import (
	"testing"

	"reef/units"
)

// AppendSamples gives the figures of Depths and AppendStats at the same time, with a
// queue still standing and after it drained, drops included.
func TestAppendSamples(t *testing.T) {
	s := mustNew(t, testConfig(2))
	for i := range 20 {
		s.Receive(units.Time(i), 0, pk{dst: hostAddr(1, i)}.build(t))
	}
	s.SetPortUp(20, 0, false) // a frame arriving on a down port is dropped there
	s.Receive(21, 0, pk{dst: hostAddr(1, 0)}.build(t))
	for _, now := range []units.Time{units.Millisecond, 10 * units.Millisecond} {
		for {
			if _, ok := s.Poll(now); !ok {
				break
			}
		}
		got := s.AppendSamples(now, nil)
		depths, stats := s.Depths(now, nil), s.AppendStats(nil)
		for i := range got {
			want := Sample{Depth: depths[i], TxBytes: stats[i].TxBytes, TxPackets: stats[i].TxPackets,
				Drops: stats[i].Dropped(), Marks: stats[i].ECNMarks, Waited: stats[i].Waited}
			if got[i] != want {
				t.Errorf("at %v, port %d: sample %+v; want %+v", now, i, got[i], want)
			}
		}
		if now == 30*units.Microsecond && (got[1].Backlog == 0 || got[1].TxPackets == 0) {
			t.Errorf("at %v: port 1 %+v; want frames sent and a queue left", now, got[1])
		}
		if got[0].Drops != 1 {
			t.Errorf("at %v: port 0 dropped %d frames; want 1", now, got[0].Drops)
		}
		if now == 10*units.Millisecond && got[1].TxPackets != 20 {
			t.Errorf("at %v: port 1 sent %d frames; want 20", now, got[1].TxPackets)
		}
	}
}
