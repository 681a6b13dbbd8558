// Package experiment reads reef experiment files: a topology, a time scale, flows,
// workloads, a timeline of fabric events, a sweep and the expectations that carry a
// paper's claim. It sits between the YAML a person writes and the backends: Load parses
// and validates the file (strictly: an unknown field is an error naming file, line and
// field), expands the sweep into one Point per combination, and Compile turns a Point into
// the plan.Plan and scenario.Scenario a backend runs, in emulator units.
//
// # Usage
//
//	x, err := experiment.Load("experiments/poseidon-multihop.yaml")
//	for _, pt := range x.Points {
//		run, err := x.Compile(pt, experiment.CompileOptions{})
//		// run.Plan, run.Scenario, run.Expectations
//	}
//
// # Format
//
// Values are written in the paper's units; time_scale τ divides every rate and
// multiplies every time when compiled (DESIGN.md principle 4). Sizes are unchanged.
// ${var} placeholders take their values from vars and sweep; a placeholder that is a
// whole quoted scalar ("${M}") takes the value's own type, so count: "${M}" is a number.
// See experiments/*.yaml for complete files.
//
// # Limitations
//
// Sweep values are scalars. Expectations are parsed and resolved here and evaluated
// by the report.
package experiment

import (
	"reef/emulator/expect"
	"reef/switchd"
	"reef/units"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// File is one experiment file after ${var} substitution for one sweep point.
type File struct {
	// Name names the experiment and its results directory.
	Name string `yaml:"name"`
	// Description is free text for the report.
	Description string `yaml:"description"`
	// Paper is the result being reproduced.
	Paper Paper `yaml:"paper"`
	// Topology is a topology file or an inline topology.
	Topology Topology `yaml:"topology"`
	// TimeScale is τ (paper rates ÷ τ, paper times × τ); 1 when absent.
	TimeScale *float64 `yaml:"time_scale"`
	// BackendTimeScale overrides τ on named backends ({netns: 2000}): the same paper
	// experiment then runs slower on a backend that cannot keep up with the sim's rates
	// (real packets on a laptop want a few hundred Mbit/s in aggregate).
	BackendTimeScale map[string]float64 `yaml:"backend_time_scale"`
	// Duration is the run's length, Warmup the part excluded from steady-state
	// metrics, SampleInterval the time-series period (paper units).
	Duration       units.Time `yaml:"duration"`
	Warmup         units.Time `yaml:"warmup"`
	SampleInterval units.Time `yaml:"sample_interval"`
	// Seed drives every random choice; reef run --seed overrides it.
	Seed uint64 `yaml:"seed"`
	// Vars are constants for ${var} placeholders (a sweep variable of the same name
	// wins). A value {by: VAR, VALUE: x, …, default: y} takes the entry for VAR's value at
	// each point (int_mode: {by: cc, hpcc: hpcc, poseidon: mpd, default: "off"}).
	Vars yaml.MapSlice `yaml:"vars"`
	// Switches sets features per switch: keys are switch names or glob patterns ("*",
	// "tor*"); later keys override earlier ones.
	Switches SwitchMap `yaml:"switches"`
	// Defaults apply to every flow and workload that does not say otherwise.
	Defaults FlowDefaults `yaml:"defaults"`
	// Flows are explicit flows and flow groups.
	Flows []FlowSpec `yaml:"flows"`
	// Workloads generate flows (Poisson arrivals over a size distribution, incast).
	Workloads []Workload `yaml:"workloads"`
	// Timeline changes the fabric at given times.
	Timeline []TimelineEvent `yaml:"timeline"`
	// Sweep maps variable names to the values they take; runs are the cartesian product
	// in the order written (the first variable varies slowest).
	Sweep Sweep `yaml:"sweep"`
	// Expectations are the paper's claims as checks over each run's metrics.
	Expectations []Expectation `yaml:"expectations"`
}

// Paper cites the result an experiment reproduces.
type Paper struct {
	Ref   string `yaml:"ref"`
	Claim string `yaml:"claim"`
	// Notes says how the laptop figures relate to the paper's.
	Notes string `yaml:"notes"`
}

// Topology is either File (a path relative to the experiment file) or an inline
// topology in emulator/topo's format.
type Topology struct {
	File   string
	Inline ast.Node
	line   int
}

// SwitchFeatures are the per-switch features an experiment may set; each non-nil field
// replaces the planner's value. Times are in paper units.
type SwitchFeatures struct {
	ECN *switchd.ECNConfig `yaml:"ecn"`
	INT *switchd.INTConfig `yaml:"int"`
	LB  *switchd.LBConfig  `yaml:"lb"`
	// PFC is applied to every port of the switch.
	PFC *switchd.PFCConfig `yaml:"pfc"`
	// Pins force flows onto ports: {flow: NAME, port: PORTNAME}.
	Pins []PinSpec `yaml:"pins"`
}

// PinSpec pins a named flow (or every flow of a group) to a port of the switch.
type PinSpec struct {
	Flow  string `yaml:"flow"`
	Group string `yaml:"group"`
	// Port is the switch port's name (as in the plan, "p2") or the peer node's name.
	Port string `yaml:"port"`
}

// FlowDefaults are inherited by flows and workloads.
type FlowDefaults struct {
	CC     string `yaml:"cc"`
	Params Params `yaml:"params"`
	// CCParams are parameters per algorithm name, applied to every flow using it
	// (handy when a sweep varies cc).
	CCParams map[string]Params `yaml:"cc_params"`
	INTHops  int               `yaml:"int_hops"`
	AckEvery int               `yaml:"ack_every"`
}

// FlowSpec is one flow, or with Count a group of flows named Group1..GroupN.
type FlowSpec struct {
	// Name of a single flow; Group gathers flows for metrics (defaults to Name).
	Name  string `yaml:"name"`
	Group string `yaml:"group"`
	// Count makes a group of Count flows (0 or 1 makes a single flow; Count may be 0
	// through a placeholder only when Group is set, giving no flows).
	Count *int `yaml:"count"`
	// Src and Dst are host names; in a group, "{i}" is replaced by the flow's index
	// (1-based), so src: "b{i}" spreads the group over hosts b1..bN.
	Src string `yaml:"src"`
	Dst string `yaml:"dst"`
	// CC and Params override Defaults; Params are decoded strictly into the
	// algorithm's parameter struct, in paper units.
	CC     string `yaml:"cc"`
	Params Params `yaml:"params"`
	// Start and Stop bound the flow (paper units; Stop 0 = end of run). In a group,
	// flow i starts at Start + (i-1)*StartStep and stops at Stop + (i-1)*StopStep.
	Start     units.Time `yaml:"start"`
	StartStep units.Time `yaml:"start_step"`
	Stop      units.Time `yaml:"stop"`
	StopStep  units.Time `yaml:"stop_step"`
	// Size is a message size (0 = long-lived).
	Size     units.Bytes `yaml:"size"`
	INTHops  int         `yaml:"int_hops"`
	AckEvery int         `yaml:"ack_every"`
	line     int
}

// Workload generates flows; Kind selects the generator.
type Workload struct {
	// Kind is poisson (messages with Poisson arrivals and sizes from CDF at Load of each
	// sender's NIC), incast (Senders each send Size to Receiver every Period),
	// all-to-all or trace (the flows listed in the Trace file).
	Kind string `yaml:"kind"`
	// Group names the generated flows (defaults to Kind).
	Group string `yaml:"group"`
	// CDF is a flow-size distribution name (websearch, hadoop, cachefollower) or a file.
	CDF string `yaml:"cdf"`
	// Trace is the file of a trace workload (relative to the experiment): one flow per
	// row, CSV or JSON lines (hostd/workload.ParseTrace; reef trace-gen writes one).
	// Its start times are in paper units after Start; a row's cc replaces the
	// workload's.
	Trace string `yaml:"trace"`
	// Load is the offered load as a fraction of each sender's NIC rate.
	Load float64 `yaml:"load"`
	// Hosts are the participating hosts: names, glob patterns ("h*"), topology groups
	// ("left", "pod1") or "all" (the default).
	Hosts []string `yaml:"hosts"`
	// Senders and Receiver for incast (Receivers rotate per round); for poisson they
	// narrow the sources and destinations (default: Hosts).
	Senders   []string `yaml:"senders"`
	Receiver  string   `yaml:"receiver"`
	Receivers []string `yaml:"receivers"`
	// Size is a fixed message size; Period the incast repetition period and Rounds the
	// number of rounds (default: as many as fit before Stop, at least 1); Jitter spreads
	// each sender's start uniformly over [0, Jitter) (paper units).
	Size   units.Bytes `yaml:"size"`
	Period units.Time  `yaml:"period"`
	Rounds int         `yaml:"rounds"`
	Jitter units.Time  `yaml:"jitter"`
	// Start and Stop bound the arrivals (paper units; Stop 0 = end of run).
	Start  units.Time `yaml:"start"`
	Stop   units.Time `yaml:"stop"`
	CC     string     `yaml:"cc"`
	Params Params     `yaml:"params"`
	// MaxFlows caps the generated flows (a safety net; default 100000).
	MaxFlows int `yaml:"max_flows"`
	line     int
}

// TimelineEvent changes a link at a point in time.
type TimelineEvent struct {
	At units.Time `yaml:"at"`
	// Link names the link by its two nodes, "s1-s2" (either order), or "s1:p1-s2:p2".
	Link string `yaml:"link"`
	// Rate sets the link's rate (paper units); Down and Up take it down and up.
	Rate units.Rate `yaml:"rate"`
	Down bool       `yaml:"down"`
	Up   bool       `yaml:"up"`
	line int
}

// Expectation is one named claim over a run's metrics, in emulator/expect's language.
type Expectation struct {
	// Name identifies the check in reports.
	Name string `yaml:"name"`
	// Check is the comparison ("victim.goodput >= 0.85 * victim.fair_share").
	Check string `yaml:"check"`
	// When restricts the check to sweep points it selects ("cc == 'poseidon' && M > 0").
	When string `yaml:"when"`
	// Claim is the paper's claim the check carries, shown beside the verdict.
	Claim string `yaml:"claim"`
	line  int
}

// Line is where the expectation was written.
func (e Expectation) Line() int { return e.line }

// Spec is the expectation in emulator/expect's form.
func (e Expectation) Spec() expect.Spec {
	return expect.Spec{Name: e.Name, Check: e.Check, When: e.When, Claim: e.Claim}
}

// Params holds an algorithm parameter map until the algorithm is known.
type Params struct {
	node ast.Node
}

// IsZero reports whether no parameters were given.
func (p Params) IsZero() bool { return p.node == nil }

// group is the workload's flow group (its kind unless named).
func (w *Workload) group() string {
	if w.Group != "" {
		return w.Group
	}
	return w.Kind
}
