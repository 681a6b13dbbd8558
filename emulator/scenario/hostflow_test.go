package scenario_test

import (
	"strings"
	"testing"

	"reef/emulator/scenario"
	"reef/hostd"
	"reef/internal/testlab"
	"reef/units"
)

// NetworkRTT is the largest base RTT of the run's flows, each for a full data frame of
// its source host; a flow from an unknown host is an error.
func TestNetworkRTT(t *testing.T) {
	p := testlab.PlanFile(t, "../../topologies/parking-lot.yaml")
	frame := func(hops int) units.Bytes { return hostd.Config{}.FlowEnv(hops).PacketSize }
	rtt := func(src, dst string, hops int) units.Time {
		r, err := p.BaseRTT(src, dst, frame(hops))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	short := scenario.Flow{ID: 1, Name: "green", Src: "h2", Dst: "h11"}             // one switch-to-switch hop
	long := scenario.Flow{ID: 2, Name: "victim", Src: "h1", Dst: "h29", INTHops: 3} // the whole chain
	for _, tc := range []struct {
		name  string
		flows []scenario.Flow
		want  units.Time
	}{
		{"no flows", nil, 0},
		{"one flow", []scenario.Flow{short}, rtt("h2", "h11", 0)},
		{"the longest of two", []scenario.Flow{short, long}, rtt("h1", "h29", 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := (&scenario.Scenario{Flows: tc.flows}).NetworkRTT(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("NetworkRTT = %v, want %v", got, tc.want)
			}
		})
	}
	if rtt("h1", "h29", 3) <= rtt("h2", "h11", 0) {
		t.Error("the victim's path is no longer than the green one's: the test cannot tell them apart")
	}
	_, err := (&scenario.Scenario{Flows: []scenario.Flow{{ID: 3, Name: "x", Src: "h99", Dst: "h1"}}}).NetworkRTT(p)
	if err == nil || !strings.Contains(err.Error(), "h99") {
		t.Errorf("unknown source host: err %v, want one naming h99", err)
	}
}
