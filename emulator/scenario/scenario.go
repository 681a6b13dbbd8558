// Package scenario is the backend-neutral description of what happens in one run: which
// flows start and stop when, with which congestion control, and which timeline events
// change the fabric. The experiment layer compiles an experiment file (with its time
// scale, workloads and sweeps) into one Scenario per run, in emulator units; every
// backend (sim, netns, docker) executes a Scenario against a plan.Plan and returns a
// results.Run.
package scenario

import (
	"encoding/json"
	"fmt"

	"reef/cc"
	"reef/hostd/transport"
	"reef/units"
)

// Scenario is one run, in emulator units (the time scale is already applied).
type Scenario struct {
	// Name labels the run ("poseidon-multihop/cc=swift,M=4").
	Name string `json:"name"`
	// Seed drives every random choice of the run.
	Seed uint64 `json:"seed"`
	// TimeScale is τ, kept for reports: paper time = emulator time / τ.
	TimeScale float64 `json:"time_scale"`
	// TimeScaleFlag names the reef run flag that set TimeScale in place of the
	// experiment file's FileTimeScale ("--time-scale", "--backend-time-scale"); both
	// are empty when the file's value held.
	TimeScaleFlag string  `json:"time_scale_flag,omitempty"`
	FileTimeScale float64 `json:"file_time_scale,omitempty"`
	// Duration is how long the run lasts from time 0.
	Duration units.Time `json:"duration"`
	// Warmup is excluded from steady-state metrics (the measurement window is
	// [Warmup, Duration) unless the experiment says otherwise).
	Warmup units.Time `json:"warmup"`
	// SampleInterval is how often flow and port time series are sampled.
	SampleInterval units.Time `json:"sample_interval"`
	// Flows in start order.
	Flows []Flow `json:"flows"`
	// Events in time order.
	Events []Event `json:"events,omitempty"`
	// Transport, when set, is the hosts' loss-recovery tuning in emulator units
	// (compile sets TuningAt(TimeScale)); the transport's defaults otherwise.
	Transport *transport.Tuning `json:"transport,omitempty"`
}

// WindowEdges are the times a backend snapshots every flow and port exactly
// (results.Flow.Edges, results.Port.Edges), so the figures over the measurement window
// [Warmup, Duration] do not depend on the sample interval: Warmup (when inside the
// run) and Duration.
func (s *Scenario) WindowEdges() []units.Time {
	if s.Warmup > 0 && s.Warmup < s.Duration {
		return []units.Time{s.Warmup, s.Duration}
	}
	return []units.Time{s.Duration}
}

// Flow is one transport flow from Src to Dst.
type Flow struct {
	// ID is unique in the run; it is the reef header's FlowID.
	ID uint32 `json:"id"`
	// Name is unique in the run ("victim", "bulk3", "msg1234"); Group gathers flows for
	// metrics and expectations ("victim", "bulk", "incast").
	Name  string `json:"name"`
	Group string `json:"group"`
	// Src and Dst are host names.
	Src string `json:"src"`
	Dst string `json:"dst"`
	// CC is the algorithm's registered name and CCParams its resolved, scaled Params
	// as JSON (decode into cc.Lookup(CC).Defaults()).
	CC       string          `json:"cc"`
	CCParams json.RawMessage `json:"cc_params,omitempty"`
	// Start and Stop bound the flow; Stop 0 means the end of the run.
	Start units.Time `json:"start"`
	Stop  units.Time `json:"stop,omitempty"`
	// Size is the message size; 0 means long-lived (sends until Stop).
	Size units.Bytes `json:"size,omitempty"`
	// INTHops is the number of INT hop slots data packets reserve (HPCC, PowerTCP).
	INTHops int `json:"int_hops,omitempty"`
	// AckEvery coalesces ACKs (1 = one per data packet; 0 means 1).
	AckEvery int `json:"ack_every,omitempty"`
}

// Algorithm builds the flow's congestion controller from CC and CCParams.
func (f *Flow) Algorithm(env cc.Env) (cc.Algorithm, error) {
	spec, err := cc.Lookup(f.CC)
	if err != nil {
		return nil, fmt.Errorf("flow %s: %w", f.Name, err)
	}
	p := spec.Defaults()
	if len(f.CCParams) > 0 {
		if err := json.Unmarshal(f.CCParams, p); err != nil {
			return nil, fmt.Errorf("flow %s: %s parameters: %w", f.Name, f.CC, err)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("flow %s: %w", f.Name, err)
	}
	return spec.New(env, p)
}

// Event kinds.
const (
	EventRate = "rate" // set the link's rate (both directions)
	EventDown = "down" // take the link down
	EventUp   = "up"   // bring it back
)

// Event changes the fabric at a point in time.
type Event struct {
	At units.Time `json:"at"`
	// Link is the index in plan.Plan.Links.
	Link int    `json:"link"`
	Kind string `json:"kind"`
	// Rate is the new rate for EventRate.
	Rate units.Rate `json:"rate,omitempty"`
}
