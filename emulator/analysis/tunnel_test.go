package analysis

import (
	"strings"
	"testing"

	"reef/emulator/expect"
	"reef/emulator/results"
	"reef/units"
)

// TestTunnelVerdict: a lab across machines whose tunnel, measured during the run, needed
// more than the cut links' delay is degraded and says which tunnel; one that stayed
// within it is not.
func TestTunnelVerdict(t *testing.T) {
	p := testPlan(t)
	for _, tc := range []struct {
		worst   units.Time
		verdict string
	}{
		{worst: 300 * units.Microsecond, verdict: "ok"},
		{worst: 1600 * units.Microsecond, verdict: "degraded"},
	} {
		sc, run := testRun("exp", 1, 1)
		run.Tunnels = []results.Tunnel{{From: "m1", To: "m2", Transit: 40 * units.Microsecond, Jitter: 200 * units.Microsecond,
			MinDelay: 1400 * units.Microsecond, WorstMargin: tc.worst}}
		s, err := Summarize(p, sc, run, []*expect.Expectation{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Fidelity.Verdict != tc.verdict {
			t.Errorf("worst margin %v against 1.4ms: verdict %s; want %s", tc.worst, s.Fidelity.Verdict, tc.verdict)
		}
		if why := DegradedWhy(s.Fidelity); tc.verdict == "degraded" && !strings.Contains(why, "m1→m2") {
			t.Errorf("degraded for the tunnel: why %q; want it to name m1→m2", why)
		}
		if len(s.Tunnels) != 1 {
			t.Errorf("summary tunnels %v; want the run's", s.Tunnels)
		}
	}
}
