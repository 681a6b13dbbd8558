package experiment

import (
	"fmt"
	"strings"
	"testing"

	"reef/cc"
	"reef/units"
)

// testParams is a tiny algorithm parameter set registered for these tests only.
type testParams struct {
	Target units.Time `yaml:"target"`
	Max    units.Rate `yaml:"max_rate"`
	Gain   float64    `yaml:"gain"`
}

func (p *testParams) Validate() error {
	if p.Target <= 0 {
		return fmt.Errorf("xtest: target must be > 0, got %v", p.Target)
	}
	return nil
}

func init() {
	for _, name := range []string{"xtest", "ytest"} {
		cc.Register(cc.Spec{
			Name:     name,
			Doc:      "test only",
			Defaults: func() cc.Params { return &testParams{Target: 25 * units.Microsecond, Gain: 1} },
			New:      func(cc.Env, cc.Params) (cc.Algorithm, error) { return nil, fmt.Errorf("not for running") },
		})
	}
}

const good = `name: multihop
paper: {ref: "Poseidon NSDI'23 Fig. 14", claim: "victim gets its share"}
topology: {file: ../topologies/parking-lot.yaml}
time_scale: 100
duration: 10ms
warmup: 2ms
sample_interval: 50us
seed: 1
vars: {base: h, gain: {by: cc, xtest: 3, default: 5}}
switches:
  "*": {int: {mode: mpd, mpd_unit: 256ns}}
  s2: {ecn: {mode: step, k: 30KB}}
defaults:
  cc: "${cc}"
  cc_params:
    xtest: {gain: 2}
flows:
  - {name: victim, src: h1, dst: "${base}4", start: 0s}
  - {group: bulk, count: "${M}", src: "b{i}", dst: h3, params: {target: 50us, gain: "${gain}"}, start_step: 1ms}
timeline:
  - {at: 5ms, link: "s1-s2", rate: 100Gbps}
sweep:
  cc: [xtest, ytest]
  M: [0, 1, 4]
expectations:
  - {name: share, when: "cc == 'xtest'", check: "victim.goodput >= 0.85 * victim.fair_share"}
`

func TestParseSweep(t *testing.T) {
	x, err := Parse("good.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Points) != 6 {
		t.Fatalf("points = %d, want 2×3 = 6", len(x.Points))
	}
	wantLabels := []string{"cc=xtest,M=0", "cc=xtest,M=1", "cc=xtest,M=4", "cc=ytest,M=0", "cc=ytest,M=1", "cc=ytest,M=4"}
	for i, pt := range x.Points {
		if pt.Label != wantLabels[i] {
			t.Errorf("point %d label %q, want %q (first variable slowest)", i, pt.Label, wantLabels[i])
		}
	}
	p := x.Points[2] // xtest, M=4
	f := p.File
	if f.Defaults.CC != "xtest" || *f.Flows[1].Count != 4 || f.Flows[0].Dst != "h4" {
		t.Fatalf("substitution: cc %q count %d dst %q", f.Defaults.CC, *f.Flows[1].Count, f.Flows[0].Dst)
	}
	if got := f.Flows[1].names(); strings.Join(got, ",") != "bulk1,bulk2,bulk3,bulk4" {
		t.Fatalf("group names %v", got)
	}
	if f.Duration != 10*units.Millisecond || *f.TimeScale != 100 || f.Timeline[0].Rate != 100*units.Gbps {
		t.Fatalf("decoded %v %v %v", f.Duration, *f.TimeScale, f.Timeline[0].Rate)
	}
	// parameters layer: defaults, cc_params, flow params
	pp, err := f.params(f.Flows[1].CC, f.Flows[1].Params)
	if err != nil {
		t.Fatal(err)
	}
	tp := pp.(*testParams)
	if tp.Target != 50*units.Microsecond || tp.Gain != 3 {
		t.Fatalf("params %+v, want target 50µs and gain 3 from the flow (derived var gain by cc)", tp)
	}
	pp, _ = f.params("", Params{})
	if pp.(*testParams).Gain != 2 {
		t.Fatalf("gain %v, want 2 from cc_params", pp.(*testParams).Gain)
	}
	if g, _ := x.Points[3].File.params(x.Points[3].File.Flows[1].CC, x.Points[3].File.Flows[1].Params); g.(*testParams).Gain != 5 {
		t.Fatalf("ytest gain %v, want the derived default 5", g.(*testParams).Gain)
	}
	// cc_params of xtest do not leak into ytest
	pp, _ = x.Points[3].File.params("", Params{})
	if pp.(*testParams).Gain != 1 {
		t.Fatalf("ytest gain %v, want default 1", pp.(*testParams).Gain)
	}
	for _, tc := range []struct {
		tmpl string
		i    int
		want string
	}{{"b{i+3}", 2, "b5"}, {"h{i%10}", 14, "h4"}, {"h{i%10}", 10, "h10"}, {"h{i%4+2}", 5, "h3"}, {"x{i-1}y", 1, "x0y"}} {
		if g := f.Flows[1].host(tc.tmpl, tc.i); g != tc.want {
			t.Errorf("host template %s at %d = %q, want %q", tc.tmpl, tc.i, g, tc.want)
		}
	}
	if len(x.Points[0].File.Switches) != 2 || x.Points[0].File.Switches[0].Pattern != "*" {
		t.Fatalf("switches order lost: %+v", x.Points[0].File.Switches)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want []string // substrings of the error, in particular file:line
	}{
		{"unknown field", func(s string) string { return strings.Replace(s, "seed: 1", "seed: 1\nsed: 2", 1) }, []string{"bad.yaml:9:1", `unknown field "sed"`}},
		{"unknown nested field", func(s string) string { return strings.Replace(s, "mode: mpd,", "mode: mpd, unit: 3,", 1) }, []string{"bad.yaml:11:", `unknown field "unit"`}},
		{"unknown algorithm", func(s string) string { return strings.Replace(s, "ytest]", "swfit]", 1) }, []string{"bad.yaml:14: defaults: cc: algorithm", "bad.yaml:19: flows[1]", `algorithm "swfit" is not supported`, `"xtest"`, "cc=swfit"}},
		{"time scale zero", func(s string) string { return strings.Replace(s, "time_scale: 100", "time_scale: 0", 1) }, []string{"bad.yaml:4:", "time_scale: must be > 0, got 0"}},
		{"backend time scale zero", func(s string) string {
			return strings.Replace(s, "time_scale: 100", "time_scale: 100\nbackend_time_scale: {netns: 0}", 1)
		}, []string{"bad.yaml:5:", "backend_time_scale.netns: must be > 0"}},
		{"time scale negative", func(s string) string { return strings.Replace(s, "time_scale: 100", "time_scale: -2", 1) }, []string{"bad.yaml:4:", "must be > 0"}},
		{"bad duration unit", func(s string) string { return strings.Replace(s, "duration: 10ms", "duration: 10xs", 1) }, []string{"bad.yaml:5:", "duration", `"10xs"`}},
		{"bad param", func(s string) string { return strings.Replace(s, "target: 50us", "target: 0s", 1) }, []string{"bad.yaml:19:", "target must be > 0"}},
		{"unknown param", func(s string) string { return strings.Replace(s, "target: 50us", "targt: 50us", 1) }, []string{"bad.yaml:19:", `unknown field "targt"`}},
		{"unknown variable", func(s string) string { return strings.Replace(s, `"${M}"`, `"${N}"`, 1) }, []string{"bad.yaml:19:", "unknown variable ${N}"}},
		{"when syntax", func(s string) string { return strings.Replace(s, "cc == 'xtest'", "cc = 'xtest'", 1) }, []string{"bad.yaml:26:", `expectation "share"`}},
		{"when over unknown var", func(s string) string { return strings.Replace(s, "cc == 'xtest'", "algo == 'xtest'", 1) }, []string{"bad.yaml:26:", `algo`}},
		{"unknown flow", func(s string) string { return strings.Replace(s, "victim.goodput", "victm.goodput", 1) }, []string{"bad.yaml:26:", `victm`}},
		{"unknown metric", func(s string) string { return strings.Replace(s, "victim.goodput", "victim.badput", 1) }, []string{"bad.yaml:26:", `badput`}},
		{"dimension mismatch", func(s string) string { return strings.Replace(s, "0.85 * victim.fair_share", "25us", 1) }, []string{"bad.yaml:26:"}},
		{"timeline two actions", func(s string) string { return strings.Replace(s, "rate: 100Gbps", "rate: 100Gbps, down: true", 1) }, []string{"bad.yaml:21:", "exactly one of"}},
		{"duplicate flow", func(s string) string { return strings.Replace(s, "name: victim", "name: bulk1", 1) }, []string{"bad.yaml:19:", `"bulk1" already used on line 18`}},
		{"negative count", func(s string) string { return strings.Replace(s, `count: "${M}"`, "count: -1", 1) }, []string{"bad.yaml:19:", "count: must be ≥ 0, got -1"}},
		{"count without group", func(s string) string { return strings.Replace(s, "group: bulk, ", "name: bulk, ", 1) }, []string{"count needs a group"}},
		{"same src dst", func(s string) string { return strings.Replace(s, `dst: "${base}4"`, "dst: h1", 1) }, []string{"bad.yaml:18:", "src and dst are both"}},
		{"warmup past end", func(s string) string { return strings.Replace(s, "warmup: 2ms", "warmup: 20ms", 1) }, []string{"bad.yaml:6:", "warmup"}},
		{"bad int mode", func(s string) string { return strings.Replace(s, "mode: mpd", "mode: mdp", 1) }, []string{"bad.yaml:11:", `"mdp"`}},
		{"no topology", func(s string) string {
			return strings.Replace(s, "topology: {file: ../topologies/parking-lot.yaml}\n", "", 1)
		}, []string{"topology: missing"}},
		{"syntax", func(s string) string { return strings.Replace(s, "seed: 1", "seed: [1", 1) }, []string{"bad.yaml:"}},
		{"sweep not list", func(s string) string { return strings.Replace(s, "M: [0, 1, 4]", "M: {a: 1}", 1) }, []string{"bad.yaml:", "sweep.M"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.edit(good)
			if src == good {
				t.Fatal("edit did not change the file")
			}
			_, err := Parse("bad.yaml", []byte(src))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("name: x\nsweep: {a: [1]}\nduration: ${a}ms\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Parse("fuzz.yaml", b) // must not panic
	})
}

// TestParseReportsEveryError checks that one Parse reports every problem of a file, each
// at its line: entries the decoder rejects (dropped, the rest still checked), bad
// parameters in defaults (once, where they are written) and what validation finds.
func TestParseReportsEveryError(t *testing.T) {
	src := strings.NewReplacer(
		"seed: 1", "seed: 1\ncolour: blue",
		"xtest: {gain: 2}", "xtest: {gain: 2, gian: 3}",
		"start: 0s}", "start: 0s, sise: 3}",
		"warmup: 2ms", "warmup: 20ms",
		"mode: mpd", "mode: mdp",
	).Replace(good)
	_, err := Parse("bad.yaml", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{
		`bad.yaml:6: warmup: must be in [0, duration=10ms)`,
		`bad.yaml:9:1: colour: unknown field "colour"`,
		`bad.yaml:12: switches.*.int.mode: "mdp"`,
		`bad.yaml:17: defaults.cc_params.xtest (xtest): gian: unknown field "gian"`,
		`bad.yaml:19:`, `flows[0].sise: unknown field "sise"`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error\n%v\nlacks %q", err, w)
		}
	}
	if n := strings.Count(err.Error(), `unknown field "gian"`); n != 1 {
		t.Errorf("the bad cc_params entry is reported %d times, want once:\n%v", n, err)
	}
}
