package emulator

import (
	"context"
	"strings"
	"testing"

	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
)

// runOnly is a backend whose labs cannot stay up (as the sim); labKeeper one whose can,
// owning the labs named in owned.
type runOnly struct{ name string }

func (b runOnly) Name() string { return b.name }
func (runOnly) Run(context.Context, *plan.Plan, *scenario.Scenario, RunOptions) (*results.Run, error) {
	return nil, nil
}

type labKeeper struct {
	runOnly
	owned string
}

func (labKeeper) Up(context.Context, *plan.Plan, UpOptions) (*LabUp, error)   { return nil, nil }
func (labKeeper) Down(context.Context, string) error                          { return nil }
func (labKeeper) Exec(context.Context, string, string, []string, Stdio) error { return nil }
func (b labKeeper) Owns(lab string) bool                                      { return lab == b.owned }

// up, down and exec reach backends through the registry: a run-only backend is refused
// for up with the names of those that can keep a lab, and a lab's owner is found by
// asking each.
func TestLabRegistry(t *testing.T) {
	Register(runOnly{"t-run"})
	Register(labKeeper{runOnly{"t-lab1"}, "alpha"})
	Register(labKeeper{runOnly{"t-lab2"}, "beta"})
	if _, err := LookupLab("t-run"); err == nil || !strings.Contains(err.Error(), "t-lab1") {
		t.Errorf("LookupLab(run-only) = %v, want an error naming the backends that keep labs", err)
	}
	if b, err := LookupLab("t-lab1"); err != nil || b.Name() != "t-lab1" {
		t.Errorf("LookupLab(t-lab1) = %v, %v", b, err)
	}
	for lab, want := range map[string]string{"alpha": "t-lab1", "beta": "t-lab2"} {
		if b, err := OwnerOf(lab); err != nil || b.Name() != want {
			t.Errorf("OwnerOf(%s) = %v, %v; want %s", lab, b, err, want)
		}
	}
	if _, err := OwnerOf("gamma"); err == nil {
		t.Error("OwnerOf found an owner for a lab nobody has")
	}
}
