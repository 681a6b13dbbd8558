package experiment

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"reef/emulator/plan"
	"reef/emulator/scenario"
	"reef/emulator/topo"
	"reef/hostd/workload"
	"reef/units"
)

// DefaultMaxFlows caps the flows one workload may generate.
const DefaultMaxFlows = 100000

// expandWorkload turns a workload into flows (emulator units) with IDs after *id, using
// hostd/workload's generators and a random source seeded by the run's seed and the
// workload's position.
func (x *Experiment) expandWorkload(f *File, w *Workload, p *plan.Plan, t *topo.Topology, ts units.TimeScale, seed uint64, id *uint32) ([]scenario.Flow, error) {
	idx := 0
	for i := range f.Workloads {
		if &f.Workloads[i] == w {
			idx = i
		}
	}
	r := rand.New(rand.NewPCG(seed, 0x776f726b6c6f6164+uint64(idx)))
	names := make([]string, len(p.Hosts))
	index := map[string]int{}
	for i, h := range p.Hosts {
		names[i] = h.Config.Name
		index[h.Config.Name] = i
	}
	resolve := func(field string, specs []string, dflt []int) ([]int, error) {
		if len(specs) == 0 {
			return dflt, nil
		}
		var out []int
		seen := map[int]bool{}
		for _, s := range specs {
			var hit []int
			switch {
			case s == "all":
				for i := range names {
					hit = append(hit, i)
				}
			case t.Groups[s] != nil:
				for _, h := range t.Groups[s] {
					hit = append(hit, index[h])
				}
			default:
				for i, n := range names {
					if ok, _ := path.Match(s, n); ok {
						hit = append(hit, i)
					}
				}
			}
			if len(hit) == 0 {
				return nil, fmt.Errorf("%s: %q matches no host or group%s", field, s, suggestHost(s, names))
			}
			for _, h := range hit {
				if !seen[h] {
					seen[h] = true
					out = append(out, h)
				}
			}
		}
		return out, nil
	}
	all := make([]int, len(names))
	for i := range all {
		all[i] = i
	}
	hosts, err := resolve("hosts", w.Hosts, all)
	if err != nil {
		return nil, err
	}
	start := ts.Time(w.Start)
	stop := ts.Time(w.Stop)
	if stop == 0 {
		stop = ts.Time(f.Duration)
	}
	var gen []workload.Flow
	var rows []workload.TraceFlow // a trace's rows, one per flow of gen
	switch w.Kind {
	case WorkloadTrace:
		gen, rows, err = x.trace(w, index, start, ts)
		if err != nil {
			return nil, err
		}
	case WorkloadPoisson:
		srcs, err := resolve("senders", w.Senders, hosts)
		if err != nil {
			return nil, err
		}
		dsts, err := resolve("receivers", w.Receivers, hosts)
		if err != nil {
			return nil, err
		}
		cdf, err := x.cdf(w)
		if err != nil {
			return nil, err
		}
		rate := p.Hosts[srcs[0]].Config.Rate
		for _, s := range srcs {
			rate = min(rate, p.Hosts[s].Config.Rate)
		}
		gen, err = workload.Poisson{Srcs: srcs, Dsts: dsts, Load: w.Load, Rate: rate, CDF: cdf,
			Start: start, Duration: stop - start}.Generate(r)
		if err != nil {
			return nil, err
		}
	case WorkloadIncast:
		srcs, err := resolve("senders", w.Senders, nil)
		if err != nil {
			return nil, err
		}
		recv := w.Receivers
		if w.Receiver != "" {
			recv = append([]string{w.Receiver}, recv...)
		}
		dsts, err := resolve("receivers", recv, nil)
		if err != nil {
			return nil, err
		}
		if len(srcs) == 0 || len(dsts) == 0 {
			return nil, fmt.Errorf("want senders and a receiver (or receivers)")
		}
		period := ts.Time(w.Period)
		rounds := w.Rounds
		if rounds == 0 {
			rounds = 1
			if period > 0 {
				rounds = int((stop - start + period - 1) / period)
			}
		}
		for k := 0; k < rounds; k++ {
			dst := dsts[k%len(dsts)]
			var senders []int
			for _, s := range srcs {
				if s != dst {
					senders = append(senders, s)
				}
			}
			gen = append(gen, workload.Incast(senders, dst, w.Size, start+units.Time(k)*period, 1, 0, ts.Time(w.Jitter), r)...)
		}
	case WorkloadAllToAll:
		rounds := max(w.Rounds, 1)
		for k := 0; k < rounds; k++ {
			for _, fl := range workload.AllPairs(len(hosts), w.Size, start+units.Time(k)*ts.Time(w.Period)) {
				fl.Src, fl.Dst = hosts[fl.Src], hosts[fl.Dst]
				gen = append(gen, fl)
			}
		}
	}
	limit := w.MaxFlows
	if limit == 0 {
		limit = DefaultMaxFlows
	}
	if len(gen) > limit {
		return nil, fmt.Errorf("generates %d flows, more than max_flows (%d); lower the load or duration, or raise max_flows", len(gen), limit)
	}
	name := f.ccName(w.CC)
	raw, err := f.scaledParams(name, w.Params, ts.Tau())
	if err != nil {
		return nil, &paramsError{err}
	}
	// a trace's flows may name their own algorithms: each gets its parameters as a flow
	// of the experiment would (the workload's params when it is the workload's cc)
	params := map[string][]byte{name: raw}
	var errs []error
	for _, r := range rows {
		if _, done := params[r.CC]; r.CC == "" || done {
			continue
		}
		if params[r.CC], err = f.scaledParams(r.CC, Params{}, ts.Tau()); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: cc: %w", w.Trace, r.Line, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	group := w.group()
	out := make([]scenario.Flow, 0, len(gen))
	for i, g := range gen {
		if g.Start >= stop {
			continue
		}
		fcc, fraw := name, raw
		if rows != nil && rows[i].CC != "" {
			fcc, fraw = rows[i].CC, params[rows[i].CC]
		}
		*id++
		fstop := g.Stop
		if w.Stop != 0 && (fstop == 0 || fstop > stop) {
			fstop = stop
		}
		out = append(out, scenario.Flow{ID: *id, Name: fmt.Sprintf("%s%d", group, i+1), Group: group,
			Src: names[g.Src], Dst: names[g.Dst], CC: fcc, CCParams: fraw, Start: g.Start, Stop: fstop, Size: g.Size,
			INTHops: f.Defaults.INTHops, AckEvery: f.Defaults.AckEvery})
	}
	return out, nil
}

// cdf finds a workload's size distribution: a shipped name or a file relative to the
// experiment.
func (x *Experiment) cdf(w *Workload) (*workload.CDF, error) {
	if w.CDF == "" {
		if w.Size <= 0 {
			return nil, fmt.Errorf("cdf: missing (or give a fixed size)")
		}
		return workload.ParseCDF(fmt.Sprintf("fixed %v", w.Size), []byte(fmt.Sprintf("%d 0\n%d 1\n", w.Size, w.Size)))
	}
	if !strings.ContainsAny(w.CDF, "/.") {
		return workload.Builtin(w.CDF)
	}
	p := w.CDF
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(x.Path), p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("cdf: %w", err)
	}
	return workload.ParseCDF(w.CDF, b)
}

// trace reads a trace workload's file (relative to the experiment) and returns its
// flows in emulator units, starting at start, with the rows they came from. Every bad
// row is reported: the file's own problems, then hosts the topology lacks and
// priorities the fabric cannot carry, each as "file:line: field: …".
func (x *Experiment) trace(w *Workload, hosts map[string]int, start units.Time, ts units.TimeScale) ([]workload.Flow, []workload.TraceFlow, error) {
	p := w.Trace
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(x.Path), p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, fmt.Errorf("trace: %w", err)
	}
	rows, err := workload.ParseTrace(w.Trace, b)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(hosts))
	for h := range hosts {
		names = append(names, h)
	}
	slices.Sort(names)
	var errs []error
	gen := make([]workload.Flow, 0, len(rows))
	for _, r := range rows {
		for _, e := range [][2]string{{"src", r.Src}, {"dst", r.Dst}} {
			if _, ok := hosts[e[1]]; !ok {
				errs = append(errs, fmt.Errorf("%s:%d: %s: no host %q in the topology%s", w.Trace, r.Line, e[0], e[1], suggestHost(e[1], names)))
			}
		}
		if r.Priority != 0 {
			errs = append(errs, fmt.Errorf("%s:%d: priority: %d; reef's fabric has one traffic class, want 0 (or no priority column)", w.Trace, r.Line, r.Priority))
		}
		gen = append(gen, workload.Flow{Src: hosts[r.Src], Dst: hosts[r.Dst], Size: r.Size, Start: start + ts.Time(r.Start)})
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return gen, rows, nil
}
