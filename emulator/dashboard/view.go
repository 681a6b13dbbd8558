package dashboard

import (
	"fmt"
	"math"
	"sort"

	"reef/emulator/expect"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/units"
)

// This file turns snapshots into what the page draws: the topology (sent once per plan),
// the state (sent on every update: one number set per link and flow) and a series (sent
// on request, incrementally).

// Topology is the graph the page draws.
type Topology struct {
	Title string     `json:"title"`
	Nodes []Node     `json:"nodes"`
	Links []LinkInfo `json:"links"`
}

// LinkInfo is one drawn link.
type LinkInfo struct {
	ID int    `json:"id"`
	A  string `json:"a"`
	B  string `json:"b"`
	// Label is "a:iface—b:iface".
	Label string `json:"label"`
	// Rate in bit/s, Delay in ns, Buffer in bytes (plain numbers for the page).
	Rate   float64 `json:"rate"`
	Delay  int64   `json:"delay"`
	Buffer int64   `json:"buffer"`
}

func topologyOf(s *Snapshot) *Topology {
	t := &Topology{Title: s.Title, Nodes: []Node{}, Links: []LinkInfo{}}
	if s.Plan == nil {
		return t
	}
	t.Nodes = Layout(s.Plan)
	for i, l := range s.Plan.Links {
		t.Links = append(t.Links, LinkInfo{ID: i, A: l.A.Node, B: l.B.Node,
			Label: l.A.Node + ":" + l.A.Iface + "—" + l.B.Node + ":" + l.B.Iface, Rate: float64(l.Rate), Delay: int64(l.Delay), Buffer: int64(l.Buffer)})
	}
	return t
}

// State is what changes: sent to the page on every update.
type State struct {
	Version uint64 `json:"version"`
	// PlanGen changes when the topology does (the page then fetches it again).
	PlanGen uint64 `json:"plan_gen"`
	Title   string `json:"title"`
	Live    bool   `json:"live"`
	Now     int64  `json:"now"` // ns
	Note    string `json:"note,omitempty"`
	// View says what the figures measure: "latest" (the last few samples), "at" (the
	// few samples up to At) or "window" (the measurement window, Window).
	View string `json:"view"`
	At   int64  `json:"at"` // ns
	// Window is the run's measurement window in ns ([0, 0] when unknown); Step its
	// sample interval, the step of the page's time slider.
	Window   [2]int64    `json:"window"`
	Step     int64       `json:"step"`
	Links    []LinkState `json:"links"`
	Ports    []PortState `json:"ports"`
	Flows    []FlowState `json:"flows"`
	Verdicts []Verdict   `json:"verdicts"`
}

// LinkState is a link's load: the busier direction's utilisation, the deeper queue.
type LinkState struct {
	// Util is the utilisation (0…1) over the state's span (see State.View).
	Util float64 `json:"util"`
	// Queue is the deepest egress backlog of the link's switch ends (in the window
	// view, the larger mean over the window); QueueFrac that over the link's buffer.
	Queue     int64   `json:"queue"`
	QueueFrac float64 `json:"queue_frac"`
	Drops     int64   `json:"drops"`
	Marks     int64   `json:"marks"`
	// Ports are the indices in State.Ports of the link's switch egress ports.
	Ports []int `json:"ports"`
}

// PortState is one switch egress port.
type PortState struct {
	Name string  `json:"name"` // "switch:port→peer"
	Link int     `json:"link"` // -1 when not on a drawn link
	N    int     `json:"n"`    // samples so far
	Util float64 `json:"util"`
}

// FlowState is one flow's latest figures.
type FlowState struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	CC    string `json:"cc"`
	Src   string `json:"src"`
	Dst   string `json:"dst"`
	N     int    `json:"n"`
	Done  bool   `json:"done"`
	// Goodput and Rate in bit/s, Cwnd in bytes, RTT and MPD in ns.
	Goodput float64 `json:"goodput"`
	Rate    float64 `json:"rate"`
	Cwnd    int64   `json:"cwnd"`
	RTT     int64   `json:"rtt"`
	MPD     int64   `json:"mpd"`
}

// Verdict is one expectation's verdict as shown.
type Verdict struct {
	Label string `json:"label"`
	Check string `json:"check"`
	Value string `json:"value"`
	Bound string `json:"bound"`
	Pass  bool   `json:"pass"`
	Error string `json:"error,omitempty"`
}

// window is how many samples back rates are measured over.
const window = 4

// A view is the span of samples a State measures: the measurement window [from, to]
// (rates between the samples at its edges, queues averaged over it), or the few
// samples up to to (rates over the last window samples, queues at the last).
type view struct {
	window   bool
	from, to units.Time
}

// latest is the view of the last few samples, whatever their time.
var latest = view{to: math.MaxInt64}

// edges are the indices of the samples a view measures between, of n samples whose
// times T gives in order: b the last at or before v.to, a the last at or before v.from
// (the window view) or window samples before b. b is -1 without a sample in view.
func (v view) edges(n int, T func(int) units.Time) (a, b int) {
	b = sort.Search(n, func(i int) bool { return T(i) > v.to }) - 1
	if b < 0 {
		return -1, -1
	}
	if v.window {
		return max(0, sort.Search(n, func(i int) bool { return T(i) > v.from })-1), b
	}
	return max(0, b-window), b
}

// perSecond is the rate of a counter that went from x to y over [s, t].
func perSecond(x, y int64, s, t units.Time) float64 {
	if t <= s {
		return 0
	}
	return float64(y-x) / (t - s).Seconds()
}

// portRate is a port's transmit rate over its last few samples.
func portRate(ss []results.PortSample) units.Rate {
	a, b := latest.edges(len(ss), func(i int) units.Time { return ss[i].T })
	if b < 0 {
		return 0
	}
	return units.Rate(8 * perSecond(ss[a].TxBytes, ss[b].TxBytes, ss[a].T, ss[b].T))
}

// flowGoodput is a flow's goodput over its last few samples.
func flowGoodput(ss []results.FlowSample) units.Rate {
	return flowGoodputIn(ss, latest)
}

// flowGoodputIn is a flow's goodput over v.
func flowGoodputIn(ss []results.FlowSample, v view) units.Rate {
	a, b := v.edges(len(ss), func(i int) units.Time { return ss[i].T })
	if b < 0 {
		return 0
	}
	return units.Rate(8 * perSecond(int64(ss[a].Acked), int64(ss[b].Acked), ss[a].T, ss[b].T))
}

// portIn is a port's utilisation, backlog (the last sample's, or the mean over a
// window), drops and marks in v.
func portIn(pt *results.Port, v view) (util float64, queue, drops, marks int64) {
	ss := pt.Samples
	a, b := v.edges(len(ss), func(i int) units.Time { return ss[i].T })
	if b < 0 {
		return 0, 0, 0, 0
	}
	if pt.Rate > 0 {
		util = 8 * perSecond(ss[a].TxBytes, ss[b].TxBytes, ss[a].T, ss[b].T) / float64(pt.Rate)
	}
	switch {
	case v == latest:
		// the counters at the end of the run, which the samples may not reach
		return util, int64(ss[b].QueueBytes), pt.Drops, pt.Marks
	case v.window:
		var sum int64
		for _, x := range ss[a+1 : b+1] {
			sum += int64(x.QueueBytes)
		}
		if b > a {
			queue = sum / int64(b-a)
		}
		return util, queue, ss[b].Drops - ss[a].Drops, ss[b].Marks - ss[a].Marks
	}
	return util, int64(ss[b].QueueBytes), ss[b].Drops, ss[b].Marks
}

// defaultView is what a snapshot is shown as unless the page asks otherwise: a
// finished run over its measurement window when known, anything else as of its latest
// samples.
func defaultView(s *Snapshot) view {
	if !s.Live && s.Window[1] > s.Window[0] {
		return view{window: true, from: s.Window[0], to: s.Window[1]}
	}
	return latest
}

// step is the run's sample interval: the gap between the first two samples of a port
// or, without ports, of a flow (0 without two samples).
func step(run *results.Run) units.Time {
	for _, p := range run.Ports {
		if len(p.Samples) > 1 {
			return p.Samples[1].T - p.Samples[0].T
		}
	}
	for _, f := range run.Flows {
		if len(f.Samples) > 1 {
			return f.Samples[1].T - f.Samples[0].T
		}
	}
	return 0
}

// portLinks maps each of run's ports to its link in p (-1 when none).
func portLinks(p *plan.Plan, run *results.Run) []int {
	out := make([]int, len(run.Ports))
	type key struct {
		node string
		port int
	}
	at := map[key]int{}
	if p != nil {
		for i, l := range p.Links {
			for _, e := range []plan.Endpoint{l.A, l.B} {
				if !e.IsHost {
					at[key{e.Node, e.Port}] = i
				}
			}
		}
	}
	for i, pt := range run.Ports {
		l, ok := at[key{pt.Switch, pt.Port}]
		if !ok {
			l = -1
		}
		out[i] = l
	}
	return out
}

// stateOf is s as its default view shows it.
func stateOf(s *Snapshot, planGen uint64) *State { return stateIn(s, planGen, defaultView(s)) }

// stateIn is s as v shows it.
func stateIn(s *Snapshot, planGen uint64, v view) *State {
	st := &State{Version: s.Version, PlanGen: planGen, Title: s.Title, Live: s.Live, Now: int64(s.Now), Note: s.Note,
		View: "at", At: int64(min(v.to, s.Now)), Window: [2]int64{int64(s.Window[0]), int64(s.Window[1])},
		Links: []LinkState{}, Ports: []PortState{}, Flows: []FlowState{}, Verdicts: []Verdict{}}
	switch {
	case v == latest:
		st.View = "latest"
	case v.window:
		st.View = "window"
	}
	if s.Plan != nil {
		st.Links = make([]LinkState, len(s.Plan.Links))
	}
	for _, v := range s.Verdicts {
		st.Verdicts = append(st.Verdicts, verdictOf(v))
	}
	run := s.Run
	if run == nil {
		return st
	}
	st.Step = int64(step(run))
	links := portLinks(s.Plan, run)
	for i := range run.Ports {
		pt := &run.Ports[i]
		ps := PortState{Name: fmt.Sprintf("%s:%s→%s", pt.Switch, pt.Name, pt.Peer), Link: links[i], N: len(pt.Samples)}
		util, queue, drops, marks := portIn(pt, v)
		ps.Util = util
		st.Ports = append(st.Ports, ps)
		if l := links[i]; l >= 0 {
			ls := &st.Links[l]
			ls.Ports = append(ls.Ports, i)
			ls.Util = max(ls.Util, ps.Util)
			ls.Queue = max(ls.Queue, queue)
			ls.Drops += drops
			ls.Marks += marks
		}
	}
	// a host's uplink carries what its flows send: the switches do not see that direction
	sent := map[string]float64{}
	for i := range run.Flows {
		f := &run.Flows[i]
		fs := FlowState{Name: f.Name, Group: f.Group, CC: f.CC, Src: f.Src, Dst: f.Dst, N: len(f.Samples),
			Goodput: float64(flowGoodputIn(f.Samples, v)), Done: f.Finish > 0 && f.Finish <= v.to}
		if _, b := v.edges(len(f.Samples), func(i int) units.Time { return f.Samples[i].T }); b >= 0 {
			last := f.Samples[b]
			fs.Rate, fs.Cwnd, fs.RTT, fs.MPD = float64(last.Rate), int64(last.Cwnd), int64(last.RTT), int64(last.MPD)
		}
		sent[f.Src] += fs.Goodput
		st.Flows = append(st.Flows, fs)
	}
	if s.Plan != nil {
		for i, l := range s.Plan.Links {
			ls := &st.Links[i]
			for _, e := range []plan.Endpoint{l.A, l.B} {
				if e.IsHost && l.Rate > 0 {
					ls.Util = max(ls.Util, sent[e.Node]/float64(l.Rate))
				}
			}
			if l.Buffer > 0 {
				ls.QueueFrac = min(1, float64(ls.Queue)/float64(l.Buffer))
			}
			ls.Util = min(ls.Util, 1.5)
		}
	}
	return st
}

func verdictOf(r expect.Result) Verdict {
	return Verdict{Label: r.Label(), Check: r.Check, Value: r.ValueText, Bound: r.BoundText, Pass: r.Pass, Error: r.Error}
}

// Series is part of one flow's or port's time series: rows from index From (of the
// source's samples) to Next, thinned to at most maxRows.
type Series struct {
	Name    string      `json:"name"`
	Columns []string    `json:"columns"` // the first is "t (ms)"
	From    int         `json:"from"`
	Next    int         `json:"next"`
	Rows    [][]float64 `json:"rows"`
}

// seriesRows is the most rows one response carries.
const seriesRows = 2000

// flowColumns and portColumns are the series' columns, in the units the page shows.
var (
	flowColumns = []string{"t (ms)", "goodput (Mb/s)", "rate (Mb/s)", "cwnd (KB)", "RTT (µs)", "MPD (µs)", "fabric delay (µs)"}
	portColumns = []string{"t (ms)", "throughput (Mb/s)", "queue (KB)", "queue delay (µs)", "drops", "ECN marks"}
)

// stride is the step that keeps [from, n) within seriesRows rows.
func stride(from, n int) int {
	return max(1, (n-from+seriesRows-1)/seriesRows)
}

func flowSeries(f *results.Flow, from int) *Series {
	ss := f.Samples
	from = min(max(from, 0), len(ss))
	s := &Series{Name: "flow " + f.Name, Columns: flowColumns, From: from, Next: len(ss), Rows: [][]float64{}}
	step := stride(from, len(ss))
	for i := from; i < len(ss); i += step {
		x := ss[i]
		var good float64
		if i > 0 && x.T > ss[i-1].T {
			good = float64(x.Acked-ss[i-1].Acked) * 8 / (x.T - ss[i-1].T).Seconds()
		}
		s.Rows = append(s.Rows, []float64{ms(x.T), good / 1e6, float64(x.Rate) / 1e6, float64(x.Cwnd) / 1e3,
			us(x.RTT), us(x.MPD), us(x.FabricDelay)})
	}
	return s
}

func portSeries(p *results.Port, from int) *Series {
	ss := p.Samples
	from = min(max(from, 0), len(ss))
	s := &Series{Name: fmt.Sprintf("port %s:%s→%s", p.Switch, p.Name, p.Peer), Columns: portColumns, From: from, Next: len(ss), Rows: [][]float64{}}
	step := stride(from, len(ss))
	for i := from; i < len(ss); i += step {
		x := ss[i]
		var thr float64
		if i > 0 && x.T > ss[i-1].T {
			thr = float64(x.TxBytes-ss[i-1].TxBytes) * 8 / (x.T - ss[i-1].T).Seconds()
		}
		s.Rows = append(s.Rows, []float64{ms(x.T), thr / 1e6, float64(x.QueueBytes) / 1e3, us(x.QueueDelay),
			float64(x.Drops), float64(x.Marks)})
	}
	return s
}

func ms(t units.Time) float64 { return float64(t) / 1e6 }
func us(t units.Time) float64 { return float64(t) / 1e3 }
