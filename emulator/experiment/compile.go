package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"strings"

	"reef/cc"
	"reef/emulator/expect"
	"reef/emulator/plan"
	"reef/emulator/scenario"
	"reef/emulator/topo"
	"reef/switchd"
	"reef/units"
)

// Run is one compiled sweep point: everything a backend needs, in emulator units.
type Run struct {
	// Experiment is the experiment's name, Point the sweep point it came from.
	Experiment string
	Point      *Point
	// TimeScale is τ.
	TimeScale float64
	Plan      *plan.Plan
	Scenario  *scenario.Scenario
	// Expectations are the experiment's checks, parsed and resolved against this
	// run's plan (every check; the report selects by when: and compares runs).
	Expectations []*expect.Expectation
}

// CompileOptions adjust compilation.
type CompileOptions struct {
	// Seed, when non-zero, replaces the file's seed.
	Seed uint64
	// Backend is the backend the runs are for (it selects backend_time_scale).
	Backend string
	// TimeScale, when non-zero, replaces the file's time_scale (reef run --time-scale);
	// it is an error on a backend the file gives its own backend_time_scale, which
	// would still win. BackendTimeScale, when non-zero, replaces τ on Backend whatever
	// the file says (reef run --backend-time-scale). Both must be > 0 when set.
	TimeScale        float64
	BackendTimeScale float64
}

// timeScale returns τ for f under opts, and the flag that set it ("" when the file's
// value holds).
func (f *File) timeScale(opts CompileOptions) (float64, string, error) {
	for _, o := range []struct {
		flag string
		v    float64
	}{{"--time-scale", opts.TimeScale}, {"--backend-time-scale", opts.BackendTimeScale}} {
		if o.v != 0 && !(o.v > 0 && !math.IsInf(o.v, 1)) {
			return 0, "", fmt.Errorf("%s %g: want a finite time scale > 0", o.flag, o.v)
		}
	}
	own, perBackend := f.backendScale(opts.Backend)
	switch {
	case opts.BackendTimeScale > 0:
		return opts.BackendTimeScale, "--backend-time-scale", nil
	case opts.TimeScale > 0 && perBackend:
		return 0, "", fmt.Errorf("--time-scale %g does not apply on backend %s: the file's backend_time_scale.%s (%g) does; use --backend-time-scale",
			opts.TimeScale, opts.Backend, opts.Backend, own)
	case opts.TimeScale > 0:
		return opts.TimeScale, "--time-scale", nil
	}
	return f.scale(opts.Backend), "", nil
}

// Compile turns one point into a plan and a scenario: the topology scaled by τ and
// planned, the switch features applied, flows and workloads expanded with their
// algorithms' parameters decoded, validated and scaled, timeline events resolved to
// links. Every problem names the file and line.
func (x *Experiment) Compile(pt *Point, opts CompileOptions) (*Run, error) {
	r, err := x.compile(pt, opts)
	if err != nil {
		return nil, pointErr(pt, err)
	}
	return r, nil
}

// compile is Compile without naming the point in its errors.
func (x *Experiment) compile(pt *Point, opts CompileOptions) (*Run, error) {
	f := pt.File
	tau, flag, err := f.timeScale(opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", x.Path, err)
	}
	seed := f.Seed
	if opts.Seed != 0 {
		seed = opts.Seed
	}
	t, err := x.topology(f)
	if err != nil {
		return nil, err
	}
	// The time scale is applied here, once, through ts: from now on the run is in
	// emulator units.
	ts := units.TimeScale(tau)
	t = t.Scale(ts)
	p, err := plan.Build(t, plan.Options{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("%s:%d: topology: %w", x.Path, f.Topology.line, err)
	}
	var errs errList
	hosts := map[string]bool{}
	for _, h := range p.Hosts {
		hosts[h.Config.Name] = true
	}
	scaleT := ts.Time
	interval := f.SampleInterval
	if interval == 0 {
		interval = f.Duration / 200
	}
	sc := &scenario.Scenario{
		Name: x.Name, Seed: seed, TimeScale: tau, TimeScaleFlag: flag,
		Duration: scaleT(f.Duration), Warmup: scaleT(f.Warmup), SampleInterval: max(scaleT(interval), units.Microsecond),
	}
	if flag != "" {
		sc.FileTimeScale = f.scale(opts.Backend)
	}
	if sc.Transport, err = scenario.TuningAt(tau); err != nil {
		return nil, fmt.Errorf("%s: %w", x.Path, err)
	}
	if pt.Label != "" {
		sc.Name += "/" + pt.Label
	}
	var id uint32
	for i, fl := range f.Flows {
		name := f.ccName(fl.CC)
		raw, err := f.scaledParams(name, fl.Params, tau)
		for _, e := range splitErrors(err) { // and check its hosts still
			errs = append(errs, &paramsError{fmt.Errorf("%s:%d: flows[%d]: %w", x.Path, fl.line, i, e)})
		}
		group := fl.Group
		if group == "" {
			group = fl.Name
		}
		for k, nm := range fl.names() {
			src, dst := fl.host(fl.Src, k+1), fl.host(fl.Dst, k+1)
			ok := true
			for _, h := range []string{src, dst} {
				if !hosts[h] {
					errs.add(x.Path, fl.line, "flows[%d] (%s): no host %q in topology %s%s", i, nm, h, t.Name, suggestHost(h, t.Hosts()))
					ok = false
				}
			}
			if !ok || err != nil {
				continue
			}
			id++
			stop := fl.Stop
			if stop != 0 {
				stop += units.Time(k) * fl.StopStep
			}
			sc.Flows = append(sc.Flows, scenario.Flow{
				ID: id, Name: nm, Group: group, Src: src, Dst: dst, CC: name, CCParams: raw,
				Start: scaleT(fl.Start + units.Time(k)*fl.StartStep), Stop: scaleT(stop),
				Size: fl.Size, INTHops: firstNonZero(fl.INTHops, f.Defaults.INTHops), AckEvery: firstNonZero(fl.AckEvery, f.Defaults.AckEvery),
			})
		}
	}
	for i, w := range f.Workloads {
		flows, err := x.expandWorkload(f, &w, p, t, ts, seed, &id)
		if err != nil {
			for _, e := range splitErrors(err) {
				if pe := (*paramsError)(nil); errors.As(e, &pe) {
					errs = append(errs, &paramsError{fmt.Errorf("%s:%d: workloads[%d] (%s): %w", x.Path, w.line, i, w.Kind, e)})
					continue
				}
				errs.add(x.Path, w.line, "workloads[%d] (%s): %v", i, w.Kind, e)
			}
			continue
		}
		sc.Flows = append(sc.Flows, flows...)
	}
	for i, ev := range f.Timeline {
		li, err := findLink(p, ev.Link)
		if err != nil {
			errs.add(x.Path, ev.line, "timeline[%d].link: %v", i, err)
			continue
		}
		e := scenario.Event{At: scaleT(ev.At), Link: li}
		switch {
		case ev.Rate > 0:
			e.Kind, e.Rate = scenario.EventRate, ts.Rate(ev.Rate)
		case ev.Down:
			e.Kind = scenario.EventDown
		case ev.Up:
			e.Kind = scenario.EventUp
		}
		sc.Events = append(sc.Events, e)
	}
	for _, se := range f.Switches {
		if err := applyFeatures(p, sc, se, ts); err != nil {
			errs.add(x.Path, se.Line, "switches.%s: %v", se.Pattern, err)
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	sortEvents(sc.Events)
	run := &Run{Experiment: x.Name, Point: pt, TimeScale: tau, Plan: p, Scenario: sc}
	var ports []string
	for _, s := range p.Switches {
		for _, pc := range s.Config.Ports {
			ports = append(ports, s.Config.Name+":"+pc.Name)
		}
	}
	c := x.Catalogue(ports)
	for _, e := range f.Expectations {
		ex, err := expect.Parse(e.Spec())
		if err == nil {
			err = ex.Resolve(c)
		}
		if err != nil {
			errs.add(x.Path, e.line, "%v", err)
			continue
		}
		run.Expectations = append(run.Expectations, ex)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return run, nil
}

// paramsError is a problem with a flow's or workload's algorithm parameters, which
// validation also checks (before the time scale).
type paramsError struct{ err error }

func (e *paramsError) Error() string { return e.err.Error() }
func (e *paramsError) Unwrap() error { return e.err }

// CompileAll compiles every point, so that a bad point is found before anything runs.
// It reports the problems of every point at once, each once (naming the points it
// concerns when not all of them do).
func (x *Experiment) CompileAll(opts CompileOptions) ([]*Run, error) {
	runs := make([]*Run, 0, len(x.Points))
	errs := newSweepErrors(len(x.Points))
	for _, pt := range x.Points {
		r, err := x.compile(pt, opts)
		if err != nil {
			errs.add(pt, err)
			continue
		}
		runs = append(runs, r)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return runs, nil
}

func firstNonZero(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// Topology is the topology point pt runs on, as written (paper units, before the time
// scale).
func (x *Experiment) Topology(pt *Point) (*topo.Topology, error) { return x.topology(pt.File) }

// topology loads the point's topology (relative paths are relative to the experiment).
func (x *Experiment) topology(f *File) (*topo.Topology, error) {
	if f.Topology.Inline != nil {
		t, err := topo.DecodeNode(x.Path, f.Topology.Inline)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	p := f.Topology.File
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(x.Path), p)
	}
	t, err := topo.Load(p)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: topology: %w", x.Path, f.Topology.line, err)
	}
	return t, nil
}

// scaledParams decodes, validates and scales an algorithm's parameters and returns them
// as the JSON Scenario.Flow.CCParams carries.
func (f *File) scaledParams(name string, own Params, tau float64) ([]byte, error) {
	p, err := f.params(name, own)
	if err != nil {
		return nil, err
	}
	if err := cc.ScaleParams(p, tau); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s parameters after time scale %g: %w", name, tau, err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("%s parameters: %w", name, err)
	}
	return b, nil
}

// findLink resolves "a-b" or "a:port-b:port" (node names, either order) to a link index.
func findLink(p *plan.Plan, spec string) (int, error) {
	ends := strings.SplitN(spec, "-", 2)
	// node names may contain '-': try every split point
	for i := 0; i < len(spec); i++ {
		if spec[i] != '-' {
			continue
		}
		a, b := spec[:i], spec[i+1:]
		for li, l := range p.Links {
			if matchEnd(l.A, a) && matchEnd(l.B, b) || matchEnd(l.A, b) && matchEnd(l.B, a) {
				return li, nil
			}
		}
	}
	if len(ends) != 2 {
		return 0, fmt.Errorf("%q: want NODE-NODE", spec)
	}
	return 0, fmt.Errorf("%q: no link between those nodes", spec)
}

func matchEnd(e plan.Endpoint, s string) bool {
	if n, iface, ok := strings.Cut(s, ":"); ok {
		return e.Node == n && e.Iface == iface
	}
	return e.Node == s
}

// applyFeatures sets the features of every switch whose name matches se.Pattern.
func applyFeatures(p *plan.Plan, sc *scenario.Scenario, se SwitchEntry, ts units.TimeScale) error {
	matched := false
	for i := range p.Switches {
		cfg := &p.Switches[i].Config
		if ok, _ := path.Match(se.Pattern, cfg.Name); !ok {
			continue
		}
		matched = true
		ft := se.Features
		if ft.ECN != nil {
			cfg.ECN = *ft.ECN
		}
		if ft.INT != nil {
			cfg.INT = *ft.INT
			if cfg.INT.Mode == switchd.INTMPD && cfg.INT.MPDUnit == 0 {
				cfg.INT.MPDUnit = topo.DefaultMPDUnit
			}
			cfg.INT.MPDUnit = ts.Time(cfg.INT.MPDUnit)
		}
		if ft.LB != nil {
			cfg.LB = *ft.LB
			cfg.LB.FlowletGap = ts.Time(cfg.LB.FlowletGap)
		}
		if ft.PFC != nil {
			for j := range cfg.Ports {
				cfg.Ports[j].PFC = *ft.PFC
			}
		}
		for _, pin := range ft.Pins {
			port := -1
			for j, pc := range cfg.Ports {
				peer, _, _ := strings.Cut(pc.Peer, ":")
				if pc.Name == pin.Port || peer == pin.Port {
					port = j
					break
				}
			}
			if port < 0 {
				return fmt.Errorf("pin: switch %s has no port %q (name or peer)", cfg.Name, pin.Port)
			}
			n := 0
			for _, fl := range sc.Flows {
				if (pin.Flow != "" && fl.Name == pin.Flow) || (pin.Group != "" && fl.Group == pin.Group) {
					src, _ := p.HostAddr(fl.Src)
					dst, _ := p.HostAddr(fl.Dst)
					cfg.Pins = append(cfg.Pins, switchd.Pin{Src: src, Dst: dst, Port: port})
					n++
				}
			}
			if n == 0 {
				return fmt.Errorf("pin: no flow named %q or in group %q", pin.Flow, pin.Group)
			}
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	if !matched {
		return fmt.Errorf("matches no switch")
	}
	return nil
}

func sortEvents(evs []scenario.Event) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].At < evs[j-1].At; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}

// suggestHost names a close host, if any.
func suggestHost(h string, hosts []string) string {
	best, bd := "", 3
	for _, c := range hosts {
		if d := editDistance(h, c); d < bd {
			best, bd = c, d
		}
	}
	if best == "" {
		if len(hosts) > 0 {
			return fmt.Sprintf(" (hosts are %s … %s)", hosts[0], hosts[len(hosts)-1])
		}
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	d := make([]int, len(b)+1)
	for j := range d {
		d[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := d[0]
		d[0] = i
		for j := 1; j <= len(b); j++ {
			cur := d[j]
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[j] = min(d[j]+1, d[j-1]+1, prev+cost)
			prev = cur
		}
	}
	return d[len(b)]
}
