package yamlpos

import (
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

const doc = `name: lab          # 1
defaults:          # 2
  rate: 10Gbps     # 3
  pfc:             # 4
    xoff: 20KB     # 5
links:             # 6
  - [h1, s1]       # 7
  -                # 8
    a: s1          # 9
    b: h2          # 10
switches:          # 11
  "s*":            # 12
    ecn: &e {mode: step}  # 13
  s2: *e           # 14
tagged: !!map      # 15
  inner: 1         # 16
`

func parse(t testing.TB, src string) ast.Node {
	t.Helper()
	f, err := parser.ParseBytes([]byte(src), 0)
	if err != nil {
		t.Fatal(err)
	}
	return f.Docs[0]
}

func TestFind(t *testing.T) {
	root := parse(t, doc)
	for _, tc := range []struct {
		path  Path
		line  int
		found int
	}{
		{At(), 1, 0},
		{At("name"), 1, 1},
		{At("defaults"), 2, 1},
		{At("defaults", "rate"), 3, 2},
		{At("defaults", "pfc", "xoff"), 5, 3},
		{At("defaults", "pfc", "xon"), 4, 2}, // missing: the deepest part that exists
		{At("defaults", "delay"), 2, 1},
		{At("missing"), 1, 0},
		{At("links", 0), 7, 2},
		{At("links", 1), 9, 2}, // an element is where its content starts
		{At("links", 1, "b"), 10, 3},
		{At("links", 2), 6, 1}, // out of range
		{At("links", -1), 6, 1},
		{At("links", "a"), 6, 1}, // a key into a sequence
		{At("name", 0), 1, 1},    // an index into a scalar
		{At("switches", "s*"), 12, 2},
		{At("switches", "s*", "ecn", "mode"), 13, 4}, // through an anchor
		{At("switches", "s2"), 14, 2},
		{At("tagged", "inner"), 16, 2}, // through a tag
	} {
		line, node, found := Find(root, tc.path)
		if line != tc.line || found != tc.found {
			t.Errorf("Find(%v) = line %d, found %d; want line %d, found %d", tc.path, line, found, tc.line, tc.found)
		}
		if found == len(tc.path) && node == nil {
			t.Errorf("Find(%v): found but no node", tc.path)
		}
		if got := LineOf(root, tc.path); got != tc.line {
			t.Errorf("LineOf(%v) = %d; want %d", tc.path, got, tc.line)
		}
	}
}

func TestPathString(t *testing.T) {
	for _, tc := range []struct {
		path Path
		want string
	}{
		{At(), ""},
		{At("flows", 0, "params"), "flows[0].params"},
		{At("switches", "s*", "ecn"), `switches["s*"].ecn`},
		{At("a-b", "c_d"), "a-b.c_d"},
		{At(""), `[""]`},
		{At(3), "[3]"},
	} {
		if got := tc.path.String(); got != tc.want {
			t.Errorf("%#v.String() = %q; want %q", tc.path, got, tc.want)
		}
	}
}

func TestWithDoesNotShare(t *testing.T) {
	p := make(Path, 1, 4)
	p[0] = "a"
	x, y := p.With("x"), p.With("y")
	if x.String() != "a.x" || y.String() != "a.y" {
		t.Fatalf("With shared its backing array: %v %v", x, y)
	}
}

func TestKeyAndEntries(t *testing.T) {
	root := parse(t, `{"quoted": 1, plain: 2, 3: x}`)
	var keys []string
	for _, mv := range Entries(root) {
		keys = append(keys, Key(mv.Key))
	}
	want := []string{"quoted", "plain", "3"}
	if len(keys) != len(want) {
		t.Fatalf("keys %q; want %q", keys, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Errorf("key %d = %q; want %q", i, keys[i], want[i])
		}
	}
	if Entries(parse(t, "[1, 2]")) != nil {
		t.Error("Entries of a sequence: want none")
	}
	if Line(nil) != 0 || Key(nil) != "" || LineOf(nil, At("a")) != 0 {
		t.Error("nil nodes: want zero values")
	}
}

// FuzzFind follows paths made of every key and index in any document: it must not
// panic, must report a line inside the document, and must find a path it built.
func FuzzFind(f *testing.F) {
	f.Add(doc)
	f.Add("a: [1, {b: 2}]\n")
	f.Add("- &x {k: v}\n- *x\n")
	f.Add("!!map {? [a]: b}")
	f.Fuzz(func(t *testing.T, src string) {
		file, err := parser.ParseBytes([]byte(src), 0)
		if err != nil || len(file.Docs) == 0 {
			return
		}
		// YAML breaks lines at \n, \r\n and a lone \r; goccy counts some \r\n as two
		// (after a comment), so a line is bounded by counting both characters.
		lines := 1 + strings.Count(src, "\n") + strings.Count(src, "\r")
		root := ast.Node(file.Docs[0])
		var visit func(n ast.Node, p Path, depth int)
		visit = func(n ast.Node, p Path, depth int) {
			if depth > 8 {
				return
			}
			line, _, found := Find(root, p)
			if line < 0 || line > lines {
				t.Fatalf("Find(%v) = line %d; document has %d lines", p, line, lines)
			}
			if found != len(p) {
				t.Fatalf("Find(%v) found %d of %d elements of a path taken from the document", p, found, len(p))
			}
			_ = p.String()
			switch v := Unwrap(n).(type) {
			case *ast.MappingNode, *ast.MappingValueNode:
				seen := map[string]bool{}
				for _, mv := range Entries(v) {
					k := Key(mv.Key)
					if seen[k] {
						continue // Find takes the first of duplicated keys
					}
					seen[k] = true
					visit(mv.Value, p.With(k), depth+1)
				}
			case *ast.SequenceNode:
				for i, e := range v.Values {
					visit(e, p.With(i), depth+1)
				}
			}
		}
		visit(root, nil, 0)
	})
}
