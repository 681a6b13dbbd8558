package topo

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"reef/emulator/internal/yamlpos"
	"reef/emulator/internal/yamlstrict"
)

// Load reads, expands and validates the topology file at path.
func Load(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("topo: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes, expands and validates a topology document; file names it in messages.
func Parse(file string, data []byte) (*Topology, error) {
	return ParseAt(file, data, 1)
}

// ParseAt is Parse for a document that starts at line firstLine of file (a topology
// cut out of a larger file): every message points at the line in file.
func ParseAt(file string, data []byte, firstLine int) (*Topology, error) {
	if firstLine > 1 {
		// Shift every position by padding with newlines: exact, and columns stay right.
		data = append([]byte(strings.Repeat("\n", firstLine-1)), data...)
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlError(file, err)
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, fmt.Errorf("%s: empty topology; want a mapping with name and nodes/links or a generator", file)
	}
	if len(f.Docs) > 1 {
		return nil, fmt.Errorf("%s: %d YAML documents; want one topology", file, len(f.Docs))
	}
	return DecodeNode(file, f.Docs[0].Body)
}

// DecodeNode decodes, expands and validates a topology from node, a YAML mapping parsed
// by github.com/goccy/go-yaml (for example the value of a topology: key in an
// experiment file). Positions in messages are node's own, so they point into file.
func DecodeNode(file string, node ast.Node) (*Topology, error) {
	if node == nil {
		return nil, fmt.Errorf("%s: empty topology", file)
	}
	// Every entry the strict decoder rejects is reported, then what resolving and
	// validating the rest finds, except on lines that already have a decode error.
	var raw rawFile
	decodeErrs, complete := yamlstrict.DecodeAll(node, func(n ast.Node) error {
		raw = rawFile{}
		return decodeStrict(n, &raw)
	})
	var errs []error
	bad := map[int]bool{}
	for _, e := range decodeErrs {
		errs = append(errs, yamlError(file, e))
		var ye yaml.Error
		if errors.As(e, &ye) && ye.GetToken() != nil {
			bad[ye.GetToken().Position.Line] = true
		}
	}
	if !complete {
		return nil, joinUnique(errs)
	}
	r := &resolver{file: file, root: node, raw: &raw}
	t := r.resolve()
	for _, e := range append(r.errs, t.validate(false)...) {
		var pe *Error
		if errors.As(e, &pe) && bad[pe.Line] {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return nil, joinUnique(errs)
	}
	return t, nil
}

// decodeStrict decodes node into v, rejecting unknown fields. goccy can panic on odd
// input (a custom tag on a scalar where a sequence is expected); that is turned into an
// error here, since user input must never crash reef.
func decodeStrict(node ast.Node, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot decode the document (YAML decoder failed: %v); check tags and structure", r)
		}
	}()
	if tag := findTag(node); tag != nil {
		return &tagError{tk: tag.GetToken()}
	}
	return yaml.NodeToValue(node, v, yaml.Strict())
}

// findTag returns the first explicit tag (!foo) in the tree: topology files have no use
// for them, and goccy mishandles some.
func findTag(n ast.Node) (found ast.Node) {
	ast.Walk(visitor(func(n ast.Node) bool {
		if _, ok := n.(*ast.TagNode); ok && found == nil {
			found = n
		}
		return found == nil
	}), n)
	return found
}

type visitor func(ast.Node) bool

func (v visitor) Visit(n ast.Node) ast.Visitor {
	if n == nil || !v(n) {
		return nil
	}
	return v
}

type tagError struct{ tk *token.Token }

func (e *tagError) Error() string { return e.GetMessage() }

// GetToken returns the tag's token.
func (e *tagError) GetToken() *token.Token { return e.tk }

// GetMessage says what was wrong.
func (e *tagError) GetMessage() string {
	v := ""
	if e.tk != nil {
		v = e.tk.Value
	}
	return fmt.Sprintf("YAML tag %q is not supported in topology files; remove it", v)
}

// FormatError formats like goccy's own errors.
func (e *tagError) FormatError(bool, bool) string { return e.Error() }

// yamlError turns a goccy error into "file:line:col: message".
func yamlError(file string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		p := ye.GetToken().Position
		return fmt.Errorf("%s:%d:%d: %s", file, p.Line, p.Column, ye.GetMessage())
	}
	return fmt.Errorf("%s: %w", file, err)
}

// joinUnique joins errs in line order, dropping repeats (a bad default is reported
// once, not once per link).
func joinUnique(errs []error) error {
	seen := map[string]bool{}
	var out []error
	for _, e := range errs {
		if s := e.Error(); !seen[s] {
			seen[s] = true
			out = append(out, e)
		}
	}
	line := func(e error) int {
		var pe *Error
		if errors.As(e, &pe) {
			return pe.Line
		}
		return 0
	}
	slices.SortStableFunc(out, func(a, b error) int { return line(a) - line(b) })
	return errors.Join(out...)
}

// mapKeys returns the keys of the mapping at p under root, in file order.
func mapKeys(root ast.Node, p yamlpos.Path) []string {
	_, n, found := yamlpos.Find(root, p)
	if found < len(p) {
		return nil
	}
	var keys []string
	for _, mv := range yamlpos.Entries(n) {
		keys = append(keys, yamlpos.Key(mv.Key))
	}
	return keys
}

// The raw document, as decoded strictly by goccy. Quantities stay strings so that each
// bad one is reported with its own position (goccy drops positions of TextUnmarshaler
// errors) and all of them are reported, not only the first.

type rawFile struct {
	Name      string                 `yaml:"name"`
	Defaults  *rawParams             `yaml:"defaults"`
	Classes   map[string]rawParams   `yaml:"classes"`
	Nodes     []rawNode              `yaml:"nodes"`
	Links     []rawLink              `yaml:"links"`
	Generator *rawGenerator          `yaml:"generator"`
	Overrides []rawOverride          `yaml:"overrides"`
	Switches  map[string]rawFeatures `yaml:"switches"`
}

type rawParams struct {
	Rate   *string `yaml:"rate"`
	Delay  *string `yaml:"delay"`
	Buffer *string `yaml:"buffer"`
	MTU    *int    `yaml:"mtu"`
	PFC    *rawPFC `yaml:"pfc"`
}

type rawPFC struct {
	XOff *string `yaml:"xoff"`
	XOn  *string `yaml:"xon"`
}

type rawNode struct {
	Name string `yaml:"name"`
	Kind string `yaml:"kind"`
}

// rawLink is a link in brief form ([a, b]) or long form.
type rawLink struct {
	A, B   string
	Class  string
	Params rawParams
	Brief  bool
}

type rawLinkLong struct {
	A      string  `yaml:"a"`
	B      string  `yaml:"b"`
	Class  string  `yaml:"class"`
	Rate   *string `yaml:"rate"`
	Delay  *string `yaml:"delay"`
	Buffer *string `yaml:"buffer"`
	MTU    *int    `yaml:"mtu"`
	PFC    *rawPFC `yaml:"pfc"`
}

// UnmarshalYAML decodes either form.
func (l *rawLink) UnmarshalYAML(n ast.Node) error {
	if s, ok := yamlpos.Unwrap(n).(*ast.SequenceNode); ok {
		var v []string
		if err := yaml.NodeToValue(s, &v, yaml.Strict()); err != nil {
			return err
		}
		if len(v) != 2 {
			return &briefError{tk: s.GetToken(), n: len(v)}
		}
		*l = rawLink{A: v[0], B: v[1], Brief: true}
		return nil
	}
	var long rawLinkLong
	if err := yaml.NodeToValue(n, &long, yaml.Strict()); err != nil {
		return err
	}
	*l = rawLink{A: long.A, B: long.B, Class: long.Class, Params: rawParams{
		Rate: long.Rate, Delay: long.Delay, Buffer: long.Buffer, MTU: long.MTU, PFC: long.PFC}}
	return nil
}

type rawOverride = rawLinkLong

type rawFeatures struct {
	ECN *rawECN `yaml:"ecn"`
	INT *rawINT `yaml:"int"`
	LB  *rawLB  `yaml:"lb"`
}

type rawECN struct {
	Mode string   `yaml:"mode"`
	K    *string  `yaml:"k"`
	Min  *string  `yaml:"min"`
	Max  *string  `yaml:"max"`
	PMax *float64 `yaml:"pmax"`
}

type rawINT struct {
	Mode    string  `yaml:"mode"`
	MPDUnit *string `yaml:"mpd_unit"`
}

type rawLB struct {
	Mode       string  `yaml:"mode"`
	FlowletGap *string `yaml:"flowlet_gap"`
	Quantum    *string `yaml:"quantum"`
}

type rawGenerator struct {
	Kind             string   `yaml:"kind"`
	Hosts            *int     `yaml:"hosts"`
	HostsLeft        *int     `yaml:"hosts_left"`
	HostsRight       *int     `yaml:"hosts_right"`
	Hops             *int     `yaml:"hops"`
	HostsPerSwitch   []int    `yaml:"hosts_per_switch"`
	ReverseSenders   *int     `yaml:"reverse_senders"`
	Bottleneck       *string  `yaml:"bottleneck"`
	Spines           *int     `yaml:"spines"`
	Leaves           *int     `yaml:"leaves"`
	HostsPerLeaf     *int     `yaml:"hosts_per_leaf"`
	Oversubscription *float64 `yaml:"oversubscription"`
	K                *int     `yaml:"k"`
	// Names renames generated nodes: {h1: vsrc, s1: tor0}.
	Names map[string]string `yaml:"names"`
}

// briefError is a brief-form link without exactly two node names.
type briefError struct {
	tk *token.Token
	n  int
}

func (e *briefError) Error() string { return e.GetMessage() }

// GetToken returns the link's token (for its position).
func (e *briefError) GetToken() *token.Token { return e.tk }

// GetMessage says what was wrong.
func (e *briefError) GetMessage() string {
	return fmt.Sprintf("brief link form has %d names; want exactly two, [a, b]", e.n)
}

// FormatError formats like goccy's own errors.
func (e *briefError) FormatError(bool, bool) string { return e.Error() }
