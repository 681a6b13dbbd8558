package yamlstrict

import (
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"reef/units"
)

type inner struct {
	Rate units.Rate `yaml:"rate"`
	Mode string     `yaml:"mode"`
}

type doc struct {
	Name  string     `yaml:"name"`
	Delay units.Time `yaml:"delay"`
	MTU   int        `yaml:"mtu"`
	Items []inner    `yaml:"items"`
}

func TestDecodeAll(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		want     []string // each error's message, in order
		complete bool
		decoded  doc
	}{
		{"clean", "name: a\ndelay: 1us\n", nil, true, doc{Name: "a", Delay: units.Microsecond}},
		{"every unknown field",
			"name: a\ncolour: red\nitems:\n  - {rate: 1Gbps, mdoe: x}\n  - {rate: 2Gbps, size: 3}\n",
			[]string{`colour: unknown field "colour"`, `items[0].mdoe: unknown field "mdoe"`, `items[1].size: unknown field "size"`},
			true, doc{Name: "a", Items: []inner{{Rate: units.Gbps}, {Rate: 2 * units.Gbps}}}},
		{"wrong type and bad unit",
			"name: a\nmtu: big\ndelay: 3xs\nitems: [{rate: fast, mode: m}]\n",
			[]string{`mtu: `, `delay: `, `items[0].rate: `},
			true, doc{Name: "a", Items: []inner{{Mode: "m"}}}},
		{"syntax errors are the parser's", "name: [a\n", nil, false, doc{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parser.ParseBytes([]byte(tc.src), 0)
			if err != nil {
				if tc.complete {
					t.Fatal(err)
				}
				return
			}
			before := f.String()
			var d doc
			errs, complete := DecodeAll(f.Docs[0].Body, func(n ast.Node) error {
				d = doc{}
				return yaml.NodeToValue(n, &d, yaml.Strict(), yaml.DisallowUnknownField())
			})
			if complete != tc.complete {
				t.Errorf("complete = %v, want %v (errors %v)", complete, tc.complete, errs)
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d %q", len(errs), errs, len(tc.want), tc.want)
			}
			// the decoder's order is its own: match each wanted message to some error
			for _, w := range tc.want {
				found := false
				for _, e := range errs {
					if fe, ok := e.(*FieldError); ok && strings.HasPrefix(fe.GetMessage(), w) {
						found = true
					}
				}
				if !found {
					t.Errorf("no FieldError starting %q in %v", w, errs)
				}
			}
			if complete && !equal(d, tc.decoded) {
				t.Errorf("decoded %+v, want %+v", d, tc.decoded)
			}
			if after := f.String(); after != before {
				t.Errorf("node not restored:\n%s\nwant\n%s", after, before)
			}
		})
	}
}

func equal(a, b doc) bool {
	if a.Name != b.Name || a.Delay != b.Delay || a.MTU != b.MTU || len(a.Items) != len(b.Items) {
		return false
	}
	for i := range a.Items {
		if a.Items[i] != b.Items[i] {
			return false
		}
	}
	return true
}
