package switchd

import (
	"testing"

	"reef/internal/hist"
	"reef/units"
)

// AppendCounters gives AppendStats' counters without the histograms' summaries.
func TestAppendCounters(t *testing.T) {
	s := mustNew(t, testConfig(2))
	for i := range 20 {
		s.Receive(units.Time(i), 0, pk{dst: hostAddr(1, i)}.build(t))
	}
	for {
		if _, ok := s.Poll(10 * units.Millisecond); !ok {
			break
		}
	}
	full, counters := s.AppendStats(nil), s.AppendCounters(nil)
	if full[1].Lateness.Count != 20 || full[1].TxPackets != 20 {
		t.Fatalf("stats: %d sent, lateness of %d; want 20", full[1].TxPackets, full[1].Lateness.Count)
	}
	for i := range full {
		if counters[i].Lateness != (hist.Summary{}) || counters[i].Skew != (hist.Summary{}) {
			t.Fatalf("port %d: counters carry summaries", i)
		}
		full[i].Lateness, full[i].Skew = hist.Summary{}, hist.Summary{}
		if full[i] != counters[i] {
			t.Fatalf("port %d: counters %+v, stats %+v", i, counters[i], full[i])
		}
	}
}
