package experiment

import (
	"fmt"

	"reef/emulator/plan"
	"reef/emulator/scenario"
	"reef/emulator/topo"
)

// expandWorkload turns a workload into flows with IDs after *id.
func (x *Experiment) expandWorkload(f *File, w *Workload, p *plan.Plan, t *topo.Topology, tau float64, seed uint64, id *uint32) ([]scenario.Flow, error) {
	return nil, fmt.Errorf("workload kind %q: generator not available yet", w.Kind)
}
