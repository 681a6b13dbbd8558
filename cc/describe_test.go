package cc_test

import (
	"reflect"
	"testing"

	"github.com/goccy/go-yaml"

	"reef/cc"
	_ "reef/cc/all"
	"reef/units"
)

type describedParams struct {
	Target units.Time  `yaml:"target"`
	Line   units.Rate  `yaml:"line_rate"`
	Buf    units.Bytes `yaml:"buf"`
	Gain   float64     `yaml:"gain"`
	Rounds int         `yaml:"rounds"`
	On     bool        `yaml:"on"`
	Signal string      `yaml:"signal"`
	Inner  struct {
		Step units.Time `yaml:"step"`
	} `yaml:"inner"`
	Skipped int `yaml:"-"`
	hidden  int
}

func (*describedParams) Validate() error { return nil }

func TestParametersDescribesEveryKind(t *testing.T) {
	spec := cc.SpecOf("described", "test", func() *describedParams {
		p := &describedParams{Target: 25 * units.Microsecond, Line: 100 * units.Gbps, Buf: 64 * units.Kilobyte,
			Gain: 0.8, Rounds: 5, On: true, Signal: "fabric", hidden: 1}
		p.Inner.Step = units.Millisecond
		return p
	}, func(cc.Env, *describedParams) (cc.Algorithm, error) { return nil, nil })
	want := []cc.Param{
		{Name: "target", Kind: "time", Default: "25µs"},
		{Name: "line_rate", Kind: "rate", Default: "100Gbps"},
		{Name: "buf", Kind: "bytes", Default: "64KB"},
		{Name: "gain", Kind: "float", Default: "0.8"},
		{Name: "rounds", Kind: "int", Default: "5"},
		{Name: "on", Kind: "bool", Default: "true"},
		{Name: "signal", Kind: "string", Default: `"fabric"`},
		{Name: "inner.step", Kind: "time", Default: "1ms"},
	}
	if got := spec.Parameters(); !reflect.DeepEqual(got, want) {
		t.Errorf("Parameters() =\n%+v\nwant\n%+v", got, want)
	}
}

// TestParametersDefaultsDecodeBack checks, for every registered algorithm, that each
// parameter's Default written into an experiment's params gives the default back: what
// reef algorithms prints can be copied into a file.
func TestParametersDefaultsDecodeBack(t *testing.T) {
	for _, name := range cc.Names() {
		spec, err := cc.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		params := spec.Parameters()
		if len(params) == 0 && name != "none" {
			t.Errorf("%s: no parameters described", name)
		}
		for _, p := range params {
			got := spec.Defaults()
			doc := p.Name + ": " + p.Default
			if err := yaml.UnmarshalWithOptions([]byte(nested(p.Name, p.Default)), got, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
				t.Errorf("%s: %s does not decode: %v", name, doc, err)
				continue
			}
			if want := spec.Defaults(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s decodes to %+v, want the defaults %+v", name, doc, got, want)
			}
		}
	}
}

// nested writes a.b: v as a: {b: v}.
func nested(name, value string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			return nested(name[:i], "{"+name[i+1:]+": "+value+"}")
		}
	}
	return name + ": " + value
}
