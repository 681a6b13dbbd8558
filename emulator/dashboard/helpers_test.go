package dashboard

import (
	"testing"

	_ "reef/cc/all"
	"reef/emulator/plan"
	"reef/emulator/scenario"
	"reef/emulator/sim"
	"reef/internal/testlab"
	"reef/units"
)

// loadPlan plans one of the shipped topologies.
func loadPlan(tb testing.TB, name string) *plan.Plan {
	tb.Helper()
	return testlab.PlanFile(tb, "../../topologies/"+name+".yaml")
}

// dumbbellSim is the dumbbell (8 + 8 hosts, one shared s1–s2 link at 1 Gbit/s) with
// DCTCP flows from h1, h2, … to h9, h10, …, flow i starting at starts[i].
func dumbbellSim(tb testing.TB, d units.Time, starts ...units.Time) (*plan.Plan, *sim.Sim) {
	tb.Helper()
	p := loadPlan(tb, "dumbbell")
	sc := &scenario.Scenario{Name: "dashboard-dumbbell", Seed: 1, Duration: d, SampleInterval: 100 * units.Microsecond}
	for i, st := range starts {
		sc.Flows = append(sc.Flows, scenario.Flow{ID: uint32(i + 1), Name: "f" + string(rune('1'+i)), Group: "left",
			Src: hostName(i + 1), Dst: hostName(i + 9), CC: "dctcp", Start: st})
	}
	s, err := sim.New(p, sc)
	if err != nil {
		tb.Fatal(err)
	}
	return p, s
}

func hostName(i int) string {
	return "h" + itoa(i)
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// linkBetween is the index of the link joining a and b in p.
func linkBetween(tb testing.TB, p *plan.Plan, a, b string) int {
	tb.Helper()
	for i, l := range p.Links {
		if (l.A.Node == a && l.B.Node == b) || (l.A.Node == b && l.B.Node == a) {
			return i
		}
	}
	tb.Fatalf("no link %s–%s", a, b)
	return -1
}
