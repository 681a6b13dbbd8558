// Package analysis turns one run's raw results (emulator/results) into its Summary:
// per-flow, per-group and per-queue figures over the measurement window, the fidelity
// verdict, the expectations' results and the paper-unit view (Summary.Scale,
// InPaperUnits); and a sweep's runs into sweep.json with the checks that compare runs.
// It owns the files of a run directory that hold data (summary.json, input.json,
// results.json, the CSV series, sweep.json). It sits at the end of the flow, before
// emulator/comparison (which reads summaries) and emulator/render (which draws them):
// the runner calls Summarize after each run, `reef report` recomputes a summary from a
// run directory (LoadRun, SummarizeInput).
//
// # Units
//
// Every number is in emulator units (what the laptop ran). Where the scenario has a time
// scale τ ≠ 1, the *_paper fields give the paper's units: rates × τ, times ÷ τ (sizes are
// the same in both).
//
// # Fidelity
//
// The real backends compute every frame's schedule and carry it from daemon to daemon,
// so a daemon that runs late releases frames late (lateness: actual minus scheduled
// release) without changing the times the experiment measures, as long as it still
// handles every frame in the computed order. What a late daemon does distort is
// recorded as skew: a switch port that enqueues a frame it read late behind frames that
// arrived after it (their serialisation), a host that reads a frame after it already
// acted at later times (how much later). The verdict is "degraded" when any port's p99
// skew exceeds DegradedP99Packets packet times (an MTU at its rate), when the emulator
// reordered packets by more than a packet's own length, so the queues and delays it
// measured are distorted, or when a host's exceeds that or FeedbackRTTFraction of its
// flows' base RTT, whichever is more, when its algorithms acted on feedback noticeably
// later than a real host would; when a host read a frame after a timer it should have
// preceded had fired (a stall longer than the host's timer grace); and when any port's
// or host's p99 release lateness exceeds LatenessRTTFraction of the base RTT and
// LatenessFloor; or when a host daemon was stalled (not scheduled past its deadline)
// for more than MaxStallFraction of the run. By the argument above neither lateness nor a stall
// should distort anything by itself, but measured they do: runs whose p99 lateness
// reached half an RTT and more, with skew under its bound, had flows 12-19% off the sim,
// where quiet runs stay under a twentieth of the RTT; a sender's daemon stopped for 6%
// of the run cost its flow 13% with neither lateness nor skew to show. That one was
// the host sending, after a stall, all it owed from the last ACK it read (fixed:
// afpacket.ArrivalClocked); what a stalled sender still loses to flows that kept
// sending meanwhile shows in few frames, so the verdict judges all three. On the sim
// all are zero.
package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"reef/emulator/expect"
	"reef/emulator/metrics"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/hostd/transport"
	"reef/units"
)

// BulkIntervals is how many sample intervals a sized flow must last to count as a bulk
// flow for the fair-share oracle (see Flow.FairShareBps).
const BulkIntervals = 10

// Summary is summary.json.
type Summary struct {
	// Experiment is the experiment's name and Run the run's scenario name
	// ("poseidon-multihop/cc=swift,M=4"); Vars its sweep variables.
	Experiment string            `json:"experiment"`
	Run        string            `json:"run"`
	Vars       map[string]string `json:"vars,omitempty"`
	// Paper is the result the experiment reproduces, when the runner passed it.
	Paper   *Paper `json:"paper,omitempty"`
	Backend string `json:"backend"`
	// TimeScale is τ: paper time = emulator time / τ, paper rate = emulator rate × τ.
	TimeScale float64 `json:"time_scale"`
	// TimeScaleFlag names the reef run flag that set TimeScale in place of the
	// experiment file's FileTimeScale (empty, and FileTimeScale 0, when the file's
	// value held).
	TimeScaleFlag string  `json:"time_scale_flag,omitempty"`
	FileTimeScale float64 `json:"file_time_scale,omitempty"`
	Seed          uint64  `json:"seed"`
	// FairShareMethod says how the max-min oracle placed the flows where a switch had a
	// choice of ports (plan.Placement): each flow's fair share is computed on the paths
	// it took.
	FairShareMethod string `json:"fair_share_method"`
	// DurationUS is the emulated time covered; WindowUS the measurement window
	// [from, to) every steady-state metric uses.
	DurationUS float64    `json:"duration_us"`
	WindowUS   [2]float64 `json:"window_us"`
	// WallTimeUS is what the run took; it is shown in report.html and kept in
	// results.json, not in summary.json, so that a sim run's summary.json is the same
	// byte for byte whenever the experiment and seed are.
	WallTimeUS float64 `json:"-"`
	// Attempts is how many times the runner ran this point (reef run --retry-degraded);
	// omitted when once.
	Attempts int `json:"attempts,omitempty"`
	// Tunnels are the clock offsets and transit times measured between the machines
	// of a lab across machines, beside the least delay of the links cut between them.
	Tunnels []results.Tunnel `json:"tunnels,omitempty"`
	Flows   []Flow           `json:"flows"`
	Groups  []Group          `json:"groups"`
	// FCTBuckets is the FCT slowdown of finished sized flows by size bucket.
	FCTBuckets   []Bucket        `json:"fct_buckets,omitempty"`
	Queues       []Queue         `json:"queues"`
	Fidelity     Fidelity        `json:"fidelity"`
	Expectations []expect.Result `json:"expectations"`
	// Pass is true when every evaluated expectation passed.
	Pass bool `json:"pass"`
	// Checks are all of the experiment's expectations as written (also those this run's
	// when: does not select, and those comparing runs), so a summary.json is enough to
	// re-evaluate them (`reef report`).
	Checks []expect.Spec `json:"checks,omitempty"`
	// Warnings say what limits the run's figures without making them wrong: a sample
	// interval too coarse for the plots and time-series checks, or window figures the
	// results held no exact counters for.
	Warnings []string `json:"warnings,omitempty"`

	in *Input // what the summary was computed from (for WriteRun and sweeps)
	// inexact names the flows and ports whose window figures were interpolated
	// between samples (no exact counter at a window edge).
	inexact []string
	env     *expect.Env // the metric environment (for checks that compare runs)
	// hostRTT is, per host, the shortest base RTT of the flows it sends or receives
	// (what a host's schedule skew is measured against).
	hostRTT map[string]units.Time
}

// Pct is a distribution's percentiles (nearest rank, see metrics.Percentile).
type Pct struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// pct summarises xs scaled by f; nil when there are no samples.
func pct(xs []float64, f float64) *Pct {
	if len(xs) == 0 {
		return nil
	}
	s := metrics.Summarize(xs)
	return &Pct{Count: s.Count, Mean: s.Mean * f, P50: s.P50 * f, P90: s.P90 * f, P99: s.P99 * f, P999: s.P999 * f, Max: s.Max * f}
}

func (p *Pct) scaled(f float64) *Pct {
	if p == nil {
		return nil
	}
	q := *p
	q.Mean, q.P50, q.P90, q.P99, q.P999, q.Max = p.Mean*f, p.P50*f, p.P90*f, p.P99*f, p.P999*f, p.Max*f
	return &q
}

// Flow is one flow's line in summary.json.
type Flow struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	CC    string `json:"cc"`
	Src   string `json:"src"`
	Dst   string `json:"dst"`
	// SizeBytes is the message size (0: long-lived).
	SizeBytes int64   `json:"size_bytes,omitempty"`
	StartUS   float64 `json:"start_us"`
	// GoodputBps is over the flow's active part of the window. FairShareWireBps is the
	// max-min oracle's share of link capacity over the same time (time-weighted when the
	// set of flows changes; a constant-rate flow is capped at its rate); FairShareBps is that share as goodput: times the payload
	// efficiency of the flow's full-size packets (MSS over frame bytes, see
	// PayloadEfficiency), so a flow alone on its path has a ShareRatio near 1.
	// ShareRatio is GoodputBps / FairShareBps.
	GoodputBps       float64 `json:"goodput_bps"`
	FairShareBps     float64 `json:"fair_share_bps"`
	FairShareWireBps float64 `json:"fair_share_wire_bps"`
	ShareRatio       float64 `json:"share_ratio"`
	LineRateBps      float64 `json:"line_rate_bps"`
	// RTTUS summarises the sampled RTTs in the window, in µs.
	RTTUS *Pct `json:"rtt_us,omitempty"`
	// FCTUS is the completion time of a finished sized flow, IdealFCTUS the same alone on
	// the network (metrics.IdealFCT), Slowdown their quotient.
	FCTUS       *float64 `json:"fct_us,omitempty"`
	IdealFCTUS  *float64 `json:"ideal_fct_us,omitempty"`
	Slowdown    *float64 `json:"fct_slowdown,omitempty"`
	Retransmits int64    `json:"retransmits"`
	Timeouts    int64    `json:"timeouts"`

	GoodputBpsPaper   *float64 `json:"goodput_bps_paper,omitempty"`
	FairShareBpsPaper *float64 `json:"fair_share_bps_paper,omitempty"`
	RTTUSPaper        *Pct     `json:"rtt_us_paper,omitempty"`
	FCTUSPaper        *float64 `json:"fct_us_paper,omitempty"`
}

// Group aggregates a flow group.
type Group struct {
	Name  string `json:"name"`
	Flows int    `json:"flows"`
	// GoodputBps and FairShareBps are sums over the group; Jain is over its goodputs.
	GoodputBps   float64  `json:"goodput_bps"`
	FairShareBps float64  `json:"fair_share_bps"`
	Jain         *float64 `json:"jain,omitempty"`
	RTTUS        *Pct     `json:"rtt_us,omitempty"`
	// FCTUS and Slowdown summarise the group's finished sized flows.
	FCTUS    *Pct `json:"fct_us,omitempty"`
	Slowdown *Pct `json:"fct_slowdown,omitempty"`

	GoodputBpsPaper *float64 `json:"goodput_bps_paper,omitempty"`
	RTTUSPaper      *Pct     `json:"rtt_us_paper,omitempty"`
	FCTUSPaper      *Pct     `json:"fct_us_paper,omitempty"`
}

// Bucket is the FCT slowdown of one size bucket.
type Bucket struct {
	Name     string `json:"name"`
	MinBytes int64  `json:"min_bytes"`
	MaxBytes int64  `json:"max_bytes,omitempty"`
	Slowdown *Pct   `json:"fct_slowdown,omitempty"`
	FCTUS    *Pct   `json:"fct_us,omitempty"`
}

// Queue is one switch egress port.
type Queue struct {
	// Name is "switch:port".
	Name    string  `json:"name"`
	Switch  string  `json:"switch"`
	Port    string  `json:"port"`
	Peer    string  `json:"peer"`
	RateBps float64 `json:"rate_bps"`
	// MTU is the port's MTU in bytes.
	MTU int `json:"mtu,omitempty"`
	// Utilisation is the fraction of the port's rate used in the window.
	Utilisation float64 `json:"utilisation"`
	// QueueDelayUS and QueueBytes are over the port's samples (time averages);
	// PacketDelayUS is the mean queueing delay the packets departing in the window met
	// (a packet average, computed per packet from the schedule).
	QueueDelayUS  *Pct    `json:"queue_delay_us,omitempty"`
	QueueBytes    *Pct    `json:"queue_bytes,omitempty"`
	PacketDelayUS float64 `json:"packet_delay_us"`
	// Drops and Marks are counted in the window; PauseUS over the run.
	Drops   int64   `json:"drops"`
	Marks   int64   `json:"marks"`
	PauseUS float64 `json:"pause_us"`

	QueueDelayUSPaper *Pct `json:"queue_delay_us_paper,omitempty"`
}

// Paper cites the result an experiment reproduces (the experiment file's paper:).
type Paper struct {
	Ref   string `json:"ref,omitempty"`
	Claim string `json:"claim,omitempty"`
	// Notes says how the laptop figures relate to the paper's.
	Notes string `json:"notes,omitempty"`
}

// Input is what a summary is computed from; WriteRun stores it in the run directory
// (input.json, results.json) so `reef report` can recompute everything.
type Input struct {
	Experiment string
	Vars       map[string]string
	// Paper, if set, is shown in the reports.
	Paper    *Paper
	Plan     *plan.Plan
	Scenario *scenario.Scenario
	Run      *results.Run
	// Expectations are the parsed checks; Specs their source (kept for re-rendering).
	Expectations []*expect.Expectation
}

// ParseRunName splits a scenario name "experiment/k=v,k=v" into the experiment and its
// sweep variables (none when there is no "/").
func ParseRunName(name string) (experiment string, vars map[string]string) {
	exp, rest, ok := strings.Cut(name, "/")
	if !ok {
		return name, nil
	}
	vars = map[string]string{}
	for _, kv := range strings.Split(rest, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return exp, vars
}

// Summarize computes the summary of one run: per-flow goodput against the max-min fair
// share over the topology, RTT and FCT percentiles, per-queue delay, drops and marks,
// fidelity, and every expectation that does not compare runs (those are evaluated by
// WriteSweep). The experiment name and sweep variables come from the scenario's name
// ("experiment/k=v,..."; see SummarizeInput to set them directly).
func Summarize(p *plan.Plan, sc *scenario.Scenario, run *results.Run, exps []*expect.Expectation) (*Summary, error) {
	exp, vars := ParseRunName(sc.Name)
	return SummarizeInput(&Input{Experiment: exp, Vars: vars, Plan: p, Scenario: sc, Run: run, Expectations: exps})
}

// SummarizeInput is Summarize with the experiment name and variables given.
func SummarizeInput(in *Input) (*Summary, error) {
	if in.Plan == nil || in.Scenario == nil || in.Run == nil {
		return nil, fmt.Errorf("report: summarize needs a plan, a scenario and results")
	}
	sc, run := in.Scenario, in.Run
	to := run.Duration
	if to <= 0 || (sc.Duration > 0 && sc.Duration < to) {
		to = sc.Duration
	}
	from := sc.Warmup
	if from >= to {
		from = 0
	}
	s := &Summary{
		Experiment: in.Experiment, Run: sc.Name, Vars: in.Vars, Paper: in.Paper, Backend: run.Backend,
		TimeScale: sc.TimeScale, TimeScaleFlag: sc.TimeScaleFlag, FileTimeScale: sc.FileTimeScale, Seed: sc.Seed,
		DurationUS: run.Duration.Microseconds(), WallTimeUS: run.WallTime.Microseconds(), Attempts: attempts(run.Attempts),
		Tunnels:  run.Tunnels,
		WindowUS: [2]float64{from.Microseconds(), to.Microseconds()},
		in:       in,
	}
	env := &expect.Env{Vars: in.Vars, From: from, To: to, TimeScale: sc.TimeScale}
	if err := s.flows(env, from, to); err != nil {
		return nil, err
	}
	s.groups(env)
	s.queues(env, from, to)
	s.warnings(from, to)
	s.fidelity()
	s.env = env
	s.Expectations = expect.EvaluateRun(in.Expectations, env)
	for _, x := range in.Expectations {
		s.Checks = append(s.Checks, x.Spec)
	}
	s.Pass = true
	for _, r := range s.Expectations {
		s.Pass = s.Pass && r.Pass
	}
	return s, nil
}

func ptr(v float64) *float64 { return &v }

// flowEnd is when a flow stopped being active (finish, stop or the run's end).
func flowEnd(f *results.Flow, sf *scenario.Flow, to units.Time) units.Time {
	end := to
	if f.Finish > 0 && f.Finish < end {
		end = f.Finish
	}
	if sf != nil && sf.Stop > 0 && sf.Stop < end {
		end = sf.Stop
	}
	return end
}

// shareRun is a bulk flow's fair share over an interval (from, to]: over consecutive
// segments (intervals with a constant set of active bulk flows) where it stayed the
// same.
type shareRun struct {
	from, to units.Time
	share    units.Rate
}

func (s *Summary) flows(env *expect.Env, from, to units.Time) error {
	in := s.in
	p, sc, run := in.Plan, in.Scenario, in.Run
	byID := map[uint32]*scenario.Flow{}
	for i := range sc.Flows {
		byID[sc.Flows[i].ID] = &sc.Flows[i]
	}
	n := len(run.Flows)
	ends := make([]units.Time, n)
	for i := range run.Flows {
		ends[i] = flowEnd(&run.Flows[i], byID[run.Flows[i].ID], to)
	}
	// Bulk flows (long-lived ones, and sized ones active for at least BulkIntervals
	// sample intervals) set the fair shares: segments over their starts and ends, each
	// with the oracle's shares among the bulk flows active then. Shorter messages get
	// their share among the bulk flows active at their start and themselves, so a
	// workload of thousands of messages costs a look at each message's links, not a
	// segment each.
	minBulk := BulkIntervals * sc.SampleInterval
	if minBulk <= 0 {
		minBulk = BulkIntervals * units.Millisecond
	}
	bulk := make([]bool, n)
	cuts := []units.Time{0, to}
	for i, f := range run.Flows {
		if bulk[i] = f.Size == 0 || ends[i]-f.Start >= minBulk; bulk[i] {
			cuts = append(cuts, f.Start, ends[i])
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
	// placed gathers how the oracle placed the flows.
	var placed plan.Placement
	defer func() { s.FairShareMethod = placed.String() }()
	// A link going down makes ECMP switches hash over fewer ports: the flows' paths
	// are then the measured ones.
	linkDown := false
	for _, ev := range sc.Events {
		linkDown = linkDown || ev.Kind == scenario.EventDown
	}
	// Every call places each flow once (metrics.Oracle): a large fabric's thousands of
	// messages would otherwise route every bulk flow again for each one.
	fe := make([]metrics.FlowEnds, n)
	for i := range run.Flows {
		rf := &run.Flows[i]
		fe[i] = metrics.FlowEnds{Src: rf.Src, Dst: rf.Dst, Active: true, Demand: demand(byID[rf.ID]),
			ID: rf.ID, Moved: rf.Repaths > 0 || linkDown, Egress: rf.Egress}
	}
	oracle := metrics.NewOracle(p, fe)
	// fillBulk fills the bulk flows idx; the filling is valid until the next.
	fillBulk := func(idx []int) (*plan.Filling, error) {
		f, how, err := oracle.Fill(idx)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		placed |= how
		return f, nil
	}
	// longAt lists the bulk flows active at t (started, not yet ended).
	var long []int
	for i := range run.Flows {
		if bulk[i] {
			long = append(long, i)
		}
	}
	longAt := func(t units.Time) []int {
		var idx []int
		for _, i := range long {
			if run.Flows[i].Start <= t && ends[i] > t {
				idx = append(idx, i)
			}
		}
		return idx
	}
	// A message's share is its share with the bulk flows active at its start: the
	// filling of its segment (the bulk flows change only at the cuts) answers every
	// message starting in it, one look at the links each crosses (Filling.With).
	var msgs []int
	for i := range run.Flows {
		if !bulk[i] {
			msgs = append(msgs, i)
		}
	}
	sort.SliceStable(msgs, func(x, y int) bool { return run.Flows[msgs[x]].Start < run.Flows[msgs[y]].Start })
	msgShare := make([]float64, n)
	shareWith := func(fill *plan.Filling, i int) error {
		r, how, err := oracle.ShareWith(fill, i)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		placed |= how
		msgShare[i] = float64(r)
		return nil
	}
	runs := make([][]shareRun, n) // each bulk flow's shares, by run flow index
	var early []int               // messages no segment holds
	next := 0
	for k := 0; k+1 < len(cuts); k++ {
		a, b := cuts[k], cuts[k+1]
		if b <= a || a >= to {
			continue
		}
		idx := longAt(a)
		fill, err := fillBulk(idx)
		if err != nil {
			return err
		}
		for j, rate := range fill.Rates() {
			r := &runs[idx[j]]
			if last := len(*r) - 1; last >= 0 && (*r)[last].to == a && (*r)[last].share == rate {
				(*r)[last].to = b
			} else {
				*r = append(*r, shareRun{a, b, rate})
			}
		}
		for ; next < len(msgs) && run.Flows[msgs[next]].Start < b; next++ {
			i := msgs[next]
			if run.Flows[i].Start < a {
				early = append(early, i)
				continue
			}
			if err := shareWith(fill, i); err != nil {
				return err
			}
		}
	}
	for _, i := range append(early, msgs[next:]...) {
		fill, err := fillBulk(longAt(run.Flows[i].Start))
		if err != nil {
			return err
		}
		if err := shareWith(fill, i); err != nil {
			return err
		}
	}
	// shareAt is bulk flow i's share at t (0 outside its runs, and for a message).
	shareAt := func(i int, t units.Time) float64 {
		r := runs[i]
		if k := sort.Search(len(r), func(k int) bool { return r[k].to >= t }); k < len(r) && t > r[k].from {
			return float64(r[k].share)
		}
		return 0
	}
	rttCache := map[[2]string]units.Time{}
	bnCache := map[[2]string]units.Rate{}
	for i := range run.Flows {
		f := &run.Flows[i]
		lineRate := units.Rate(0)
		mtu := 1500
		if h, ok := p.HostByName(f.Src); ok {
			lineRate, mtu = h.Config.Rate, h.Config.MTU
		}
		a, b := max(from, f.Start), min(to, ends[i])
		fl := Flow{Name: f.Name, Group: f.Group, CC: f.CC, Src: f.Src, Dst: f.Dst, SizeBytes: int64(f.Size),
			StartUS: f.Start.Microseconds(), LineRateBps: float64(lineRate), Retransmits: f.Retransmits, Timeouts: f.Timeouts}
		ef := expect.Flow{Name: f.Name, Group: f.Group, CC: f.CC, Size: f.Size, Start: f.Start, End: ends[i],
			LineRate: lineRate, Retransmits: f.Retransmits, Timeouts: f.Timeouts}
		// Fair share: time-weighted over the flow's active part of the window (a short
		// message: its share among the bulk flows active at its start, and itself).
		var share float64
		if bulk[i] {
			var w float64
			for _, r := range runs[i] {
				lo, hi := max(a, r.from), min(b, r.to)
				if hi > lo {
					share += float64(r.share) * float64(hi-lo)
					w += float64(hi - lo)
				}
			}
			if w > 0 {
				share /= w
			}
		} else {
			share = msgShare[i]
		}
		if b > a {
			g, exact := metrics.WindowGoodput(f, a, b)
			fl.GoodputBps = float64(g)
			if !exact {
				s.inexact = append(s.inexact, f.Name)
			}
		}
		intHops := 0
		if sf := byID[f.ID]; sf != nil {
			intHops = sf.INTHops
		}
		eff := PayloadEfficiency(mtu, intHops)
		fl.FairShareWireBps = math.Round(share)
		share *= eff
		fl.FairShareBps = math.Round(share)
		if fl.FairShareBps > 0 {
			fl.ShareRatio = fl.GoodputBps / fl.FairShareBps
		}
		ef.Goodput, ef.FairShare = units.Rate(fl.GoodputBps), units.Rate(fl.FairShareBps)
		var rtts []float64
		for _, smp := range f.Samples {
			if smp.T >= from && smp.T <= to && smp.RTT > 0 {
				rtts = append(rtts, float64(smp.RTT))
				ef.RTT = append(ef.RTT, smp.RTT)
			}
		}
		fl.RTTUS = pct(rtts, 1e-3)
		key := [2]string{f.Src, f.Dst}
		base, ok := rttCache[key]
		if !ok {
			var err error
			if base, err = p.BaseRTT(f.Src, f.Dst, units.Bytes(mtu)); err != nil {
				return fmt.Errorf("report: flow %s: %w", f.Name, err)
			}
			rttCache[key] = base
		}
		if s.hostRTT == nil {
			s.hostRTT = map[string]units.Time{}
		}
		for _, h := range key {
			if r, ok := s.hostRTT[h]; !ok || base < r {
				s.hostRTT[h] = base
			}
		}
		if f.Size > 0 && f.Finish > 0 {
			fct := f.Finish - f.Start
			bn, ok := bnCache[key]
			if !ok {
				bn = bottleneck(p, f.Src, f.Dst)
				bnCache[key] = bn
			}
			ideal := metrics.IdealFCT(f.Size, bn, base)
			fl.FCTUS, fl.IdealFCTUS = ptr(fct.Microseconds()), ptr(ideal.Microseconds())
			fl.Slowdown = ptr(metrics.Slowdown(fct, ideal))
			ef.FCT, ef.IdealFCT = fct, ideal
		}
		// Rate series for plots and convergence: a moving average over max(sample
		// interval, 4 base RTTs), with the fair share at each point.
		win := max(sc.SampleInterval, 4*base)
		for _, pt := range metrics.RateSeries(f.Start, f.Samples, win) {
			pt.Share = shareAt(i, pt.T) * eff
			ef.Series = append(ef.Series, pt)
		}
		fl.GoodputBpsPaper, fl.FairShareBpsPaper = s.PaperRate(fl.GoodputBps), s.PaperRate(fl.FairShareBps)
		fl.RTTUSPaper = s.PaperPct(fl.RTTUS)
		if fl.FCTUS != nil {
			fl.FCTUSPaper = s.PaperTime(*fl.FCTUS)
		}
		s.Flows = append(s.Flows, fl)
		env.Flows = append(env.Flows, ef)
	}
	return nil
}

// demand is a flow's fixed sending rate, when its algorithm has one: "none" with a rate
// parameter (a constant-rate background flow). 0 means the flow is backlogged.
func demand(f *scenario.Flow) units.Rate {
	if f == nil || f.CC != "none" || len(f.CCParams) == 0 {
		return 0
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(f.CCParams, &params) != nil {
		return 0
	}
	for k, v := range params {
		if !strings.EqualFold(k, "rate") {
			continue
		}
		var r units.Rate
		if json.Unmarshal(v, &r) == nil {
			return r
		}
		var n float64
		if json.Unmarshal(v, &n) == nil {
			return units.Rate(n)
		}
	}
	return 0
}

// PayloadEfficiency is the fraction of a full-size data frame that is payload, for an
// IP MTU of mtu bytes and intHops INT slots: transport.MSS over its frame length. It
// turns a share of link capacity into the goodput it can carry.
func PayloadEfficiency(mtu, intHops int) float64 {
	mss := transport.MSS(mtu, intHops)
	if mss <= 0 {
		return 1
	}
	return float64(mss) / float64(transport.DataFrameLen(mss, intHops))
}

// bottleneck is the slowest link rate on the first path from src to dst.
func bottleneck(p *plan.Plan, src, dst string) units.Rate {
	path, err := p.FirstPath(src, dst)
	if err != nil {
		return 0
	}
	r := units.Rate(math.MaxInt64)
	for _, h := range path {
		r = min(r, p.Links[h.Link].Rate)
	}
	return r
}

func (s *Summary) groups(env *expect.Env) {
	idx := map[string]int{}
	var flows [][]int
	for i, f := range s.Flows {
		j, ok := idx[f.Group]
		if !ok {
			j = len(s.Groups)
			idx[f.Group] = j
			s.Groups = append(s.Groups, Group{Name: f.Group})
			flows = append(flows, nil)
		}
		flows[j] = append(flows[j], i)
	}
	for j := range s.Groups {
		g := &s.Groups[j]
		var good, rtt, fct, slow []float64
		for _, i := range flows[j] {
			f := &s.Flows[i]
			g.Flows++
			g.GoodputBps += f.GoodputBps
			g.FairShareBps += f.FairShareBps
			good = append(good, f.GoodputBps)
			for _, r := range env.Flows[i].RTT {
				rtt = append(rtt, float64(r))
			}
			if f.FCTUS != nil {
				fct = append(fct, *f.FCTUS)
				slow = append(slow, *f.Slowdown)
			}
		}
		if jn := metrics.Jain(good); !math.IsNaN(jn) {
			g.Jain = ptr(jn)
		}
		g.RTTUS, g.FCTUS, g.Slowdown = pct(rtt, 1e-3), pct(fct, 1), pct(slow, 1)
		g.GoodputBpsPaper, g.RTTUSPaper, g.FCTUSPaper = s.PaperRate(g.GoodputBps), s.PaperPct(g.RTTUS), s.PaperPct(g.FCTUS)
	}
	for _, b := range metrics.DefaultBuckets() {
		var fct, slow []float64
		for _, f := range s.Flows {
			if f.FCTUS != nil && units.Bytes(f.SizeBytes) >= b.Min && units.Bytes(f.SizeBytes) < b.Max {
				fct = append(fct, *f.FCTUS)
				slow = append(slow, *f.Slowdown)
			}
		}
		if len(fct) == 0 {
			continue
		}
		bk := Bucket{Name: b.Name, MinBytes: int64(b.Min), Slowdown: pct(slow, 1), FCTUS: pct(fct, 1)}
		if b.Max != units.MaxBytes {
			bk.MaxBytes = int64(b.Max)
		}
		s.FCTBuckets = append(s.FCTBuckets, bk)
	}
}

// MinWindowSamples is how many samples the measurement window should hold for the
// plots and the time-series checks (convergence, RTT and queue percentiles); fewer is
// a warning. Window figures (goodput, utilisation, drops, marks) come from exact
// counters at the window's edges and do not depend on it.
const MinWindowSamples = 20

// warnings fills Warnings.
func (s *Summary) warnings(from, to units.Time) {
	if iv := s.in.Scenario.SampleInterval; iv > 0 && to > from {
		if n := int64((to - from) / iv); n < MinWindowSamples {
			s.Warnings = append(s.Warnings, fmt.Sprintf("sample interval %v leaves %d samples in the %v measurement window: plots, rate series and time-series checks (convergence, RTT and queue percentiles) are coarse; want at least %d (window figures come from exact counters and are not affected)",
				iv, n, to-from, MinWindowSamples))
		}
	}
	if n := len(s.inexact); n > 0 {
		names := s.inexact
		more := ""
		if len(names) > 5 {
			names, more = names[:5], fmt.Sprintf(" and %d more", n-5)
		}
		s.Warnings = append(s.Warnings, fmt.Sprintf("the results hold no exact counters at the window's edges for %s%s (results from an older reef?): their window figures are interpolated between samples",
			strings.Join(names, ", "), more))
	}
}

func (s *Summary) queues(env *expect.Env, from, to units.Time) {
	for _, pt := range s.in.Run.Ports {
		q := Queue{Name: pt.Switch + ":" + pt.Name, Switch: pt.Switch, Port: pt.Name, Peer: pt.Peer,
			RateBps: float64(pt.Rate), MTU: portMTU(s.in.Plan, pt.Switch, pt.Port), Drops: pt.Drops, Marks: pt.Marks, PauseUS: pt.PauseTime.Microseconds()}
		ep := expect.Port{Name: q.Name, PauseTime: pt.PauseTime}
		var delays, qbytes []float64
		for _, smp := range pt.Samples {
			if smp.T >= from && smp.T <= to {
				delays = append(delays, float64(smp.QueueDelay))
				qbytes = append(qbytes, float64(smp.QueueBytes))
				ep.QueueDelay = append(ep.QueueDelay, smp.QueueDelay)
				ep.QueueBytes = append(ep.QueueBytes, smp.QueueBytes)
			}
		}
		if len(pt.Samples) > 0 || len(pt.Edges) > 0 {
			// diff is a counter's increase over the window, exact where the run
			// snapshotted the port at the window's edges.
			exact := true
			diff := func(get func(*results.PortSample) int64) float64 {
				hi, okHi := metrics.PortCounterAt(&pt, to, get)
				lo, okLo := metrics.PortCounterAt(&pt, from, get)
				if from == 0 {
					lo, okLo = 0, true // every counter starts at 0
				}
				exact = exact && okHi && okLo
				return hi - lo
			}
			tx := diff(func(p *results.PortSample) int64 { return p.TxBytes })
			if pt.Rate > 0 && to > from {
				q.Utilisation = tx * 8e9 / (float64(pt.Rate) * float64(to-from))
			}
			q.Drops = int64(math.Round(diff(func(p *results.PortSample) int64 { return p.Drops })))
			q.Marks = int64(math.Round(diff(func(p *results.PortSample) int64 { return p.Marks })))
			pkts := diff(func(p *results.PortSample) int64 { return p.TxPackets })
			if pkts >= 1 {
				waited := diff(func(p *results.PortSample) int64 { return int64(p.Waited) })
				q.PacketDelayUS = waited / pkts / 1e3
			}
			if !exact {
				s.inexact = append(s.inexact, q.Name)
			}
		} else if pt.Rate > 0 && s.in.Run.Duration > 0 {
			q.Utilisation = float64(pt.TxBytes) * 8e9 / (float64(pt.Rate) * float64(s.in.Run.Duration))
		}
		q.QueueDelayUS, q.QueueBytes = pct(delays, 1e-3), pct(qbytes, 1)
		q.QueueDelayUSPaper = s.PaperPct(q.QueueDelayUS)
		ep.Utilisation, ep.Drops, ep.Marks = q.Utilisation, q.Drops, q.Marks
		s.Queues = append(s.Queues, q)
		env.Ports = append(env.Ports, ep)
	}
}

// UnknownMTU is the MTU assumed for a port whose MTU is not known.
const UnknownMTU = 1500

// portMTU is the MTU of a switch port from the plan (UnknownMTU if unknown).
func portMTU(p *plan.Plan, sw string, port int) int {
	if s, ok := p.SwitchByName(sw); ok && port >= 0 && port < len(s.Config.Ports) && s.Config.Ports[port].MTU > 0 {
		return s.Config.Ports[port].MTU
	}
	return UnknownMTU
}

// Env is the summary's metric environment (for evaluating checks across a sweep).
func (s *Summary) Env() *expect.Env { return s.env }

// Input is what the summary was computed from (nil for one read from summary.json).
func (s *Summary) Input() *Input { return s.in }
