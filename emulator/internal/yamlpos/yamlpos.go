// Package yamlpos finds where a field is written in a YAML document parsed by
// github.com/goccy/go-yaml, so that reef's file loaders (emulator/topo,
// emulator/experiment and emulator/internal/yamlstrict) name the same file, line and
// field in their errors. It only reads the tree it is given.
package yamlpos

import (
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Path names a field in a document: string mapping keys and int sequence indices.
type Path []any

// At is a Path of the given keys and indices.
func At(p ...any) Path { return p }

// With returns p extended by more, never sharing p's backing array.
func (p Path) With(more ...any) Path {
	return append(slices.Clip(p), more...)
}

// String writes the path as reef's messages do: flows[0].params, and a key that is not
// a plain name quoted, as in switches["s*"].
func (p Path) String() string {
	var b strings.Builder
	for i, e := range p {
		switch v := e.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(v) + "]")
		case string:
			if plainKey(v) {
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(v)
			} else {
				b.WriteString("[" + strconv.Quote(v) + "]")
			}
		}
	}
	return b.String()
}

func plainKey(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Unwrap looks through documents, tags and anchors to the node they hold.
func Unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		case *ast.DocumentNode:
			n = v.Body
		default:
			return n
		}
	}
}

// Line is the line n starts on (a document's: its body's), 0 when n (or its token) is
// nil.
func Line(n ast.Node) int {
	if d, ok := n.(*ast.DocumentNode); ok {
		n = d.Body // a document without a start marker has no token of its own
	}
	if n == nil {
		return 0
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}

// Key is a mapping key's text without quotes.
func Key(k ast.MapKeyNode) string {
	if k == nil {
		return ""
	}
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	if tk := k.GetToken(); tk != nil {
		return tk.Value
	}
	return k.String()
}

// Entries are the entries of mapping n (after Unwrap), none when n is not a mapping.
func Entries(n ast.Node) []*ast.MappingValueNode {
	switch v := Unwrap(n).(type) {
	case *ast.MappingNode:
		return v.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}
	}
	return nil
}

// Find follows p from root. It returns the line of the deepest element found (a mapping
// entry's key line, a sequence element's own line; root's line when none is), the node
// there, and how many elements of p it found: found == len(p) when the field exists.
func Find(root ast.Node, p Path) (line int, node ast.Node, found int) {
	line, node = Line(root), root
	for _, e := range p {
		var next ast.Node
		switch v := e.(type) {
		case string:
			for _, mv := range Entries(node) {
				if Key(mv.Key) == v {
					line, next = Line(mv.Key), mv.Value
					break
				}
			}
		case int:
			if s, ok := Unwrap(node).(*ast.SequenceNode); ok && v >= 0 && v < len(s.Values) {
				next = s.Values[v]
				if l := Line(next); l > 0 {
					line = l
				}
			}
		}
		if next == nil {
			break
		}
		node = next
		found++
	}
	return line, node, found
}

// LineOf is the line Find gives for p: the field's own line when it exists, else the
// line of the deepest part of p that does, else root's.
func LineOf(root ast.Node, p Path) int {
	line, _, _ := Find(root, p)
	return line
}
