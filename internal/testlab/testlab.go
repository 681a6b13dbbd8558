// Package testlab is what the tests that plan labs share: a fresh lab name per test, so
// runs of one test never collide, and a plan from a topology document or file.
package testlab

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"reef/emulator/plan"
	"reef/emulator/topo"
)

// Name returns prefix followed by five random hex digits: a lab name no other test
// run on the machine uses.
func Name(prefix string) string { return fmt.Sprintf("%s%05x", prefix, rand.Uint32()&0xfffff) }

// Plan parses doc as the topology file name.yaml and plans it with seed 1, failing t
// on any error.
func Plan(t testing.TB, name, doc string) *plan.Plan {
	t.Helper()
	tp, err := topo.Parse(name+".yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return build(t, tp)
}

// PlanFile loads the topology file at path and plans it with seed 1, failing t on any
// error.
func PlanFile(t testing.TB, path string) *plan.Plan {
	t.Helper()
	tp, err := topo.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return build(t, tp)
}

func build(t testing.TB, tp *topo.Topology) *plan.Plan {
	t.Helper()
	p, err := plan.Build(tp, plan.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
