package dashboard

import (
	"fmt"

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
	PlanGen  uint64      `json:"plan_gen"`
	Title    string      `json:"title"`
	Live     bool        `json:"live"`
	Now      int64       `json:"now"` // ns
	Note     string      `json:"note,omitempty"`
	Links    []LinkState `json:"links"`
	Ports    []PortState `json:"ports"`
	Flows    []FlowState `json:"flows"`
	Verdicts []Verdict   `json:"verdicts"`
}

// LinkState is a link's load: the busier direction's utilisation, the deeper queue.
type LinkState struct {
	// Util is the utilisation (0…1) over the last few samples.
	Util float64 `json:"util"`
	// Queue is the deepest egress backlog of the link's switch ends; QueueFrac that
	// over the link's buffer.
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

// portRate is a port's transmit rate over its last few samples.
func portRate(ss []results.PortSample) units.Rate {
	n := len(ss)
	if n < 2 {
		return 0
	}
	a, b := ss[max(0, n-1-window)], ss[n-1]
	if b.T <= a.T {
		return 0
	}
	return units.Rate(float64(b.TxBytes-a.TxBytes) * 8 / (b.T - a.T).Seconds())
}

// flowGoodput is a flow's goodput over its last few samples.
func flowGoodput(ss []results.FlowSample) units.Rate {
	n := len(ss)
	if n < 2 {
		return 0
	}
	a, b := ss[max(0, n-1-window)], ss[n-1]
	if b.T <= a.T {
		return 0
	}
	return units.Rate(float64(b.Acked-a.Acked) * 8 / (b.T - a.T).Seconds())
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

func stateOf(s *Snapshot, planGen uint64) *State {
	st := &State{Version: s.Version, PlanGen: planGen, Title: s.Title, Live: s.Live, Now: int64(s.Now), Note: s.Note,
		Links: []LinkState{}, Ports: []PortState{}, Flows: []FlowState{}, Verdicts: []Verdict{}}
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
	links := portLinks(s.Plan, run)
	for i := range run.Ports {
		pt := &run.Ports[i]
		ps := PortState{Name: fmt.Sprintf("%s:%s→%s", pt.Switch, pt.Name, pt.Peer), Link: links[i], N: len(pt.Samples)}
		if pt.Rate > 0 {
			ps.Util = float64(portRate(pt.Samples)) / float64(pt.Rate)
		}
		st.Ports = append(st.Ports, ps)
		if l := links[i]; l >= 0 {
			ls := &st.Links[l]
			ls.Ports = append(ls.Ports, i)
			ls.Util = max(ls.Util, ps.Util)
			if n := len(pt.Samples); n > 0 {
				ls.Queue = max(ls.Queue, int64(pt.Samples[n-1].QueueBytes))
			}
			ls.Drops += pt.Drops
			ls.Marks += pt.Marks
		}
	}
	// a host's uplink carries what its flows send: the switches do not see that direction
	sent := map[string]float64{}
	for i := range run.Flows {
		f := &run.Flows[i]
		fs := FlowState{Name: f.Name, Group: f.Group, CC: f.CC, Src: f.Src, Dst: f.Dst, N: len(f.Samples),
			Goodput: float64(flowGoodput(f.Samples)), Done: f.Finish > 0}
		if n := len(f.Samples); n > 0 {
			last := f.Samples[n-1]
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
