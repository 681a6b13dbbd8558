package experiment

import (
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"reef/emulator/internal/yamlpos"
)

// strict are the decode options used everywhere: an unknown field is an error.
var strict = []yaml.DecodeOption{yaml.Strict(), yaml.DisallowUnknownField()}

// UnmarshalYAML keeps the parameter map for decoding once the algorithm is known.
func (p *Params) UnmarshalYAML(n ast.Node) error {
	if _, ok := n.(*ast.NullNode); ok {
		return nil
	}
	if _, ok := yamlpos.Unwrap(n).(*ast.MappingNode); !ok {
		return fmt.Errorf("[%d:%d] params: want a mapping of parameter names to values", yamlpos.Line(n), n.GetToken().Position.Column)
	}
	p.node = n
	return nil
}

// UnmarshalYAML accepts "path" or {file: path} or an inline topology.
func (t *Topology) UnmarshalYAML(n ast.Node) error {
	t.line = yamlpos.Line(n)
	n = yamlpos.Unwrap(n)
	if s, ok := n.(*ast.StringNode); ok {
		t.File = s.Value
		return nil
	}
	m, ok := n.(*ast.MappingNode)
	if !ok {
		return fmt.Errorf("[%d:%d] topology: want a file name, {file: PATH} or an inline topology", t.line, n.GetToken().Position.Column)
	}
	if len(m.Values) == 1 && yamlpos.Key(m.Values[0].Key) == "file" {
		var s string
		if err := yaml.NodeToValue(m.Values[0].Value, &s, strict...); err != nil {
			return err
		}
		t.File = s
		return nil
	}
	t.Inline = n
	return nil
}

// Line is where the topology was given.
func (t Topology) Line() int { return t.line }

// SwitchMap is the ordered switches section: pattern → features.
type SwitchMap []SwitchEntry

// SwitchEntry is one key of the switches section.
type SwitchEntry struct {
	Pattern  string
	Features SwitchFeatures
	Line     int
}

// UnmarshalYAML decodes the mapping in order, each value strictly.
func (s *SwitchMap) UnmarshalYAML(n ast.Node) error {
	n = yamlpos.Unwrap(n)
	if _, ok := n.(*ast.NullNode); ok {
		return nil
	}
	m, ok := n.(*ast.MappingNode)
	if !ok {
		return fmt.Errorf("[%d:%d] switches: want a mapping of switch names or patterns to features", yamlpos.Line(n), n.GetToken().Position.Column)
	}
	for _, kv := range m.Values {
		var f SwitchFeatures
		if err := yaml.NodeToValue(kv.Value, &f, strict...); err != nil {
			return err
		}
		*s = append(*s, SwitchEntry{Pattern: yamlpos.Key(kv.Key), Features: f, Line: yamlpos.Line(kv.Key)})
	}
	return nil
}

// Sweep is the ordered sweep section.
type Sweep []SweepVar

// SweepVar is one swept variable with its values.
type SweepVar struct {
	Name   string
	Values []any
	Line   int
}

// UnmarshalYAML decodes name: [values…] pairs in order.
func (s *Sweep) UnmarshalYAML(n ast.Node) error {
	n = yamlpos.Unwrap(n)
	if _, ok := n.(*ast.NullNode); ok {
		return nil
	}
	m, ok := n.(*ast.MappingNode)
	if !ok {
		return fmt.Errorf("[%d:%d] sweep: want a mapping of variable names to lists of values", yamlpos.Line(n), n.GetToken().Position.Column)
	}
	for _, kv := range m.Values {
		var vals []any
		if err := yaml.NodeToValue(kv.Value, &vals); err != nil {
			return fmt.Errorf("[%d:%d] sweep.%s: want a list of values: %w", yamlpos.Line(kv.Value), kv.Value.GetToken().Position.Column, yamlpos.Key(kv.Key), err)
		}
		*s = append(*s, SweepVar{Name: yamlpos.Key(kv.Key), Values: vals, Line: yamlpos.Line(kv.Key)})
	}
	return nil
}

// The element types below record their line with the plain-type trick.

// UnmarshalYAML decodes strictly and records the line.
func (f *FlowSpec) UnmarshalYAML(n ast.Node) error {
	type plain FlowSpec
	var p plain
	if err := yaml.NodeToValue(n, &p, strict...); err != nil {
		return err
	}
	*f = FlowSpec(p)
	f.line = yamlpos.Line(n)
	return nil
}

// UnmarshalYAML decodes strictly and records the line.
func (w *Workload) UnmarshalYAML(n ast.Node) error {
	type plain Workload
	var p plain
	if err := yaml.NodeToValue(n, &p, strict...); err != nil {
		return err
	}
	*w = Workload(p)
	w.line = yamlpos.Line(n)
	return nil
}

// UnmarshalYAML decodes strictly and records the line.
func (e *TimelineEvent) UnmarshalYAML(n ast.Node) error {
	type plain TimelineEvent
	var p plain
	if err := yaml.NodeToValue(n, &p, strict...); err != nil {
		return err
	}
	*e = TimelineEvent(p)
	e.line = yamlpos.Line(n)
	return nil
}

// UnmarshalYAML decodes strictly and records the line.
func (e *Expectation) UnmarshalYAML(n ast.Node) error {
	type plain Expectation
	var p plain
	if err := yaml.NodeToValue(n, &p, strict...); err != nil {
		return err
	}
	*e = Expectation(p)
	e.line = yamlpos.Line(n)
	return nil
}
