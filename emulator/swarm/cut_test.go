package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"reef/emulator"
	"reef/emulator/analysis"
	"reef/emulator/comparison"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/runner"
	"reef/emulator/scenario"
	_ "reef/emulator/sim/simbackend"
)

// cutSim is the sim with the lab placed on two machines and its cut links' delays moved
// to the receiving side (CutDelays), as a lab across machines runs them.
type cutSim struct{}

func init() { emulator.Register(cutSim{}) }

func (cutSim) Name() string { return "sim-cut" }

func (cutSim) Run(ctx context.Context, p *plan.Plan, sc *scenario.Scenario, opts emulator.RunOptions) (*results.Run, error) {
	pl, err := Place(p, []Machine{{Name: "m1"}, {Name: "m2"}}, nil)
	if err != nil {
		return nil, err
	}
	if len(pl.Cut) == 0 {
		return nil, errors.New("sim-cut: placing on two machines cut no link")
	}
	b, _ := json.Marshal(p)
	var cp plan.Plan
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, err
	}
	CutDelays(&cp, pl)
	sim, err := emulator.Lookup("sim")
	if err != nil {
		return nil, err
	}
	return sim.Run(ctx, &cp, sc, opts)
}

// TestCutMovesNoResult runs reproductions on the sim as they are and with their cut
// links' delays moved from the sender's egress to the receiver's ingress: in virtual
// time, where nothing is late, every flow's goodput and every busy queue's delay must
// be the same, so whatever a real cut changes comes from the tunnel, not from the
// placement.
func TestCutMovesNoResult(t *testing.T) {
	for _, tc := range []struct{ exp, only string }{
		{"poseidon-multihop", "cc=poseidon,M=2,N=4"},
		{"poseidon-reverse-path", "cc=swift,N=4"},
	} {
		t.Run(tc.exp, func(t *testing.T) {
			var sums [2]*analysis.Summary
			for i, be := range []string{"sim", "sim-cut"} {
				o := runner.Options{Backend: be, OutDir: t.TempDir(), NoFigures: true, Only: splitOnly(tc.only), Jobs: 1}
				out, err := runner.Run(context.Background(), "../../experiments/"+tc.exp+".yaml", o)
				if err != nil {
					t.Fatal(err)
				}
				sums[i] = out.Summaries[0]
			}
			c := comparison.Compare(sums[0], sums[1])
			g, flow := c.MaxGoodputDiff()
			q, port := c.MaxQueueDelayDiff()
			t.Logf("%s: cut against whole: goodput %.4f%% (%s), queue delay %.4f%% (%s)", tc.exp, 100*g, flow, 100*q, port)
			if g > 0.001 || q > 0.01 {
				t.Errorf("%s: moving the cut links' delay to ingress changed flow %s's goodput by %.3f%% and queue %s's delay by %.3f%%; want none",
					tc.exp, flow, 100*g, port, 100*q)
			}
		})
	}
}
