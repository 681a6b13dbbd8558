// Package calibrate measures how fast the machine at hand can emulate: for a chain of
// switches and for a fat-tree, and for each MTU, the fastest link rate at which a run
// of long Swift flows keeps the fidelity verdict ok on a real backend (netns). It
// writes the figures down (Limits, a JSON file), and Check tells a run whose links are
// faster than them, before the run starts, that its verdict will likely be degraded.
//
// It sits beside the runner: `reef calibrate` runs its trials through emulator/runner
// like any experiment, and `reef run` reads the limits it wrote.
//
// # How a trial is built
//
// Every trial is the same experiment in paper units (100 Gbit/s links, 1 µs each, a
// deep buffer, Swift) emulated at a backend time scale T, so its link rate is
// 100 Gbit/s / T and everything else (BDP in packets, targets in packet times) stays
// as it is: exactly what an experiment's backend_time_scale does. T goes down from
// 16,000 (6.25 Mbit/s) until a run comes out degraded twice in a row; the limit is
// the fastest rate that came out ok.
package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"reef/emulator/plan"
	"reef/internal/jsonfile"
	"reef/units"
)

// DefaultPath is where `reef calibrate` writes the limits and `reef run` reads them.
const DefaultPath = "/var/lib/reef/calibration.json"

// Limits is what calibration found on one machine.
type Limits struct {
	// Machine and CPUs identify the machine; Backend the backend measured.
	Machine string `json:"machine"`
	CPUs    int    `json:"cpus"`
	Backend string `json:"backend"`
	// Date is when the calibration ran.
	Date time.Time `json:"date"`
	// Limits are the figures, one per topology and MTU.
	Limits []Limit `json:"limits"`
}

// Limit is the fastest link rate at which one topology kept fidelity ok at one MTU.
type Limit struct {
	// Topology is "chain" (three switches in a line) or "fat-tree" (k = 4).
	Topology string `json:"topology"`
	MTU      int    `json:"mtu"`
	// MaxRate is the fastest link rate that came out ok (0: none did).
	MaxRate units.Rate `json:"max_rate"`
	// Trials are the runs it took, fastest last.
	Trials []Trial `json:"trials"`
}

// Trial is one calibration run.
type Trial struct {
	Rate      units.Rate `json:"rate"`
	TimeScale float64    `json:"time_scale"`
	Verdict   string     `json:"verdict"`
	// Why says what made a degraded run degraded.
	Why string `json:"why,omitempty"`
}

// Topologies are the fabrics calibration measures.
var Topologies = []string{"chain", "fat-tree"}

// TimeScales are the backend time scales tried, slowest first: 6.25 Mbit/s to
// 2 Gbit/s links.
var TimeScales = []float64{16000, 8000, 4000, 2000, 1000, 500, 200, 100, 50}

// PaperRate is the trials' link rate in paper units.
const PaperRate = 100 * units.Gbps

// Load reads limits from path.
func Load(path string) (*Limits, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	var l Limits
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", path, err)
	}
	return &l, nil
}

// Save writes l to path, creating its directory.
func (l *Limits) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	if err := jsonfile.Write(path, l, true); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	return nil
}

// Runner runs one trial: the experiment document doc (YAML) on the backend, and
// returns the fidelity verdict of its one run and why it was degraded.
type Runner func(ctx context.Context, doc string) (verdict, why string, err error)

// Measure calibrates each topology at each MTU with run, reporting every trial to
// progress (may be nil). A trial whose run fails with an error ends the calibration
// with that error.
func Measure(ctx context.Context, mtus []int, run Runner, progress func(topology string, mtu int, t Trial)) ([]Limit, error) {
	var out []Limit
	for _, topo := range Topologies {
		for _, mtu := range mtus {
			l := Limit{Topology: topo, MTU: mtu}
			bad := 0
			for _, ts := range TimeScales {
				t := Trial{TimeScale: ts, Rate: units.Rate(float64(PaperRate) / ts)}
				var err error
				t.Verdict, t.Why, err = run(ctx, Doc(topo, mtu, ts))
				if err != nil {
					return out, fmt.Errorf("calibrate: %s, MTU %d, %v: %w", topo, mtu, t.Rate, err)
				}
				l.Trials = append(l.Trials, t)
				if progress != nil {
					progress(topo, mtu, t)
				}
				if t.Verdict == "ok" {
					l.MaxRate, bad = t.Rate, 0
					continue
				}
				if bad++; bad == 2 {
					break
				}
			}
			out = append(out, l)
		}
	}
	return out, nil
}

// Doc is the experiment of one trial: Swift flows across a chain of three switches
// (two crossing all three, one on each link besides) or a permutation across the pods
// of a k = 4 fat-tree, at PaperRate / timeScale, for about a second of emulated time.
func Doc(topology string, mtu int, timeScale float64) string {
	dur := units.Time(float64(units.Second) / timeScale)
	var topo, flows, subject string
	switch topology {
	case "chain":
		subject = "long1"
		topo = `generator: {kind: parking-lot, hops: 3, hosts_per_switch: [3, 2, 3]}`
		flows = `  - {name: long1, src: h1, dst: h6}
  - {name: long2, src: h2, dst: h7}
  - {name: cross1, src: h3, dst: h4}
  - {name: cross2, src: h5, dst: h8}`
	default:
		subject = "perm"
		topo = `generator: {kind: fat-tree, k: 4}`
		flows = `  - {group: perm, count: 8, src: "h{i}", dst: "h{i+8}"}`
	}
	return fmt.Sprintf(`name: calibrate-%s
topology:
  name: cal%d
  defaults: {rate: %s, delay: 1us, buffer: 16MB, mtu: %d}
  %s
time_scale: 1
backend_time_scale: {netns: %g, docker: %g}
duration: %s
warmup: %s
sample_interval: %s
seed: 1
defaults: {cc: swift}
flows:
%s
expectations:
  - name: delivers
    check: "%s.goodput >= 0.1 * %s.fair_share"
    claim: "the flows run (their own fidelity is what calibration measures)"
`, topology, mtu, PaperRate, mtu, topo, timeScale, timeScale, dur, dur/4, max(dur/200, units.Microsecond), flows, subject, subject)
}

// ErrNoLimit is returned by Check when the limits hold nothing for the plan's MTU.
var ErrNoLimit = errors.New("calibrate: no limit measured for this MTU")

// Check compares a plan's fastest link with the limit for its kind of fabric (a
// fat-tree's for ten switches or more, a chain's below) and MTU (the smallest MTU
// measured at or above the plan's, else the largest). It returns a warning when the
// plan asks for more than the limit, "" when it does not.
func (l *Limits) Check(p *plan.Plan) (string, error) {
	var rate units.Rate
	mtu := 0
	for _, lk := range p.Links {
		rate, mtu = max(rate, lk.Rate), max(mtu, lk.MTU)
	}
	topo := "chain"
	if len(p.Switches) >= 10 {
		topo = "fat-tree"
	}
	var cands []Limit
	for _, x := range l.Limits {
		if x.Topology == topo {
			cands = append(cands, x)
		}
	}
	if len(cands) == 0 {
		return "", ErrNoLimit
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].MTU < cands[j].MTU })
	i := slices.IndexFunc(cands, func(x Limit) bool { return x.MTU >= mtu })
	if i < 0 {
		i = len(cands) - 1
	}
	lim := cands[i]
	if rate <= lim.MaxRate {
		return "", nil
	}
	return fmt.Sprintf("links at %v (MTU %d) ask for more than this machine kept with fidelity ok: %v for a %s at MTU %d (reef calibrate, %s); expect a degraded verdict, or raise backend_time_scale by %.1fx",
		rate, mtu, lim.MaxRate, topo, lim.MTU, l.Date.Format("2006-01-02"), float64(rate)/float64(max(lim.MaxRate, 1))), nil
}
