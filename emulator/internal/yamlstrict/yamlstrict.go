// Package yamlstrict lets reef's file loaders (emulator/topo, emulator/experiment) report
// every entry a strict YAML decode rejects, not only the first: goccy's decoder stops at
// the first unknown field or badly typed value, so DecodeAll drops the entry it named
// and decodes again, until the document decodes or an error names no entry it can find.
package yamlstrict

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"reef/emulator/internal/yamlpos"
)

// maxErrors bounds the decode passes: a file with more bad entries than this reports
// the first maxErrors.
const maxErrors = 100

// DecodeAll calls decode(node) until it succeeds. After each failure it drops the
// mapping entry the error points at (by the error's token, or, for a value's own parser
// that gives no position, by the quoted value the message names) and tries again. It
// returns every error in the order found (a FieldError when its entry was found), and complete=true when the last decode
// succeeded (the target then holds everything but the dropped entries; decode must reset
// it on each call). node is restored before DecodeAll returns.
func DecodeAll(node ast.Node, decode func(ast.Node) error) (errs []error, complete bool) {
	var dropped []drop
	defer func() {
		for i := len(dropped) - 1; i >= 0; i-- {
			d := dropped[i]
			d.m.Values = slices.Insert(d.m.Values, d.i, d.v)
		}
	}()
	for len(errs) < maxErrors {
		err := decode(node)
		if err == nil {
			return errs, true
		}
		d, ok := locate(node, err)
		if !ok {
			return append(errs, err), false
		}
		errs = append(errs, &FieldError{Path: d.path, Err: err})
		d.v = d.m.Values[d.i]
		d.m.Values = slices.Delete(d.m.Values, d.i, d.i+1)
		dropped = append(dropped, d)
	}
	return errs, false
}

// drop is one entry taken out of a mapping: Values[i] of m was v.
type drop struct {
	m    *ast.MappingNode
	i    int
	v    *ast.MappingValueNode
	path yamlpos.Path
}

var quotedRe = regexp.MustCompile(`"([^"]+)"`)

// locate finds the mapping entry err is about: the innermost one whose key or value
// carries err's token, else the first whose scalar value is the string err quotes.
func locate(root ast.Node, err error) (drop, bool) {
	var tokened interface{ GetToken() *token.Token }
	var tk *token.Token
	if errors.As(err, &tokened) {
		tk = tokened.GetToken()
	}
	quoted := ""
	if m := quotedRe.FindStringSubmatch(err.Error()); m != nil {
		quoted = m[1]
	}
	var byToken, byValue *drop
	walk(root, nil, func(m *ast.MappingNode, i int, path yamlpos.Path) {
		mv := m.Values[i]
		if tk != nil && (samePos(mv.Key, tk) || samePos(mv.Value, tk)) {
			byToken = &drop{m: m, i: i, path: path} // later (deeper) matches win
		}
		if byValue == nil && quoted != "" && isScalar(mv.Value) && mv.Value.GetToken() != nil && mv.Value.GetToken().Value == quoted {
			byValue = &drop{m: m, i: i, path: path}
		}
	})
	switch {
	case byToken != nil:
		return *byToken, true
	case tk == nil && byValue != nil:
		return *byValue, true
	}
	return drop{}, false
}

// walk calls visit for every entry of every mapping under n, in document order, with
// the entry's path from the root.
func walk(n ast.Node, path yamlpos.Path, visit func(m *ast.MappingNode, i int, path yamlpos.Path)) {
	switch v := yamlpos.Unwrap(n).(type) {
	case *ast.MappingNode:
		for i, mv := range v.Values {
			p := path.With(yamlpos.Key(mv.Key))
			visit(v, i, p)
			walk(mv.Value, p, visit)
		}
	case *ast.SequenceNode:
		for i, e := range v.Values {
			walk(e, path.With(i), visit)
		}
	}
}

// FieldError is a decode error about the entry at Path. Its message names the path
// before the decoder's own ("flows[0].sise: unknown field \"sise\""); it keeps the
// decoder error's token and source excerpt.
type FieldError struct {
	Path yamlpos.Path
	Err  error
}

// Error is the decoder's error with the path put before its message.
func (e *FieldError) Error() string { return e.FormatError(false, true) }

// Unwrap returns the decoder's error.
func (e *FieldError) Unwrap() error { return e.Err }

// GetToken returns the decoder error's token (yaml.Error), if it has one.
func (e *FieldError) GetToken() *token.Token {
	var ye yaml.Error
	if errors.As(e.Err, &ye) {
		return ye.GetToken()
	}
	return nil
}

// GetMessage is the path and the decoder's message.
func (e *FieldError) GetMessage() string {
	var ye yaml.Error
	if errors.As(e.Err, &ye) {
		return e.Path.String() + ": " + ye.GetMessage()
	}
	return e.Path.String() + ": " + e.Err.Error()
}

// FormatError formats as the decoder's error does, with the path before the message.
func (e *FieldError) FormatError(colored, inclSource bool) string {
	var ye yaml.Error
	if errors.As(e.Err, &ye) {
		return strings.Replace(ye.FormatError(colored, inclSource), ye.GetMessage(), e.GetMessage(), 1)
	}
	return e.GetMessage()
}

func samePos(n ast.Node, tk *token.Token) bool {
	if n == nil || n.GetToken() == nil || n.GetToken().Position == nil || tk.Position == nil {
		return false
	}
	a, b := n.GetToken().Position, tk.Position
	return a.Line == b.Line && a.Column == b.Column
}

func isScalar(n ast.Node) bool {
	_, ok := n.(ast.ScalarNode)
	return ok
}
