package jsonfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write's file is json.MarshalIndent's (or json.Marshal's) bytes and a newline, for
// values of every kind JSON has (HTML characters escaped alike), and a value that
// cannot be encoded leaves the file as it was, and nothing beside it.
func TestWriteIsMarshal(t *testing.T) {
	type inner struct {
		Name string            `json:"name"`
		Tags map[string]string `json:"tags,omitempty"`
	}
	type doc struct {
		A     int              `json:"a"`
		F     float64          `json:"f"`
		S     string           `json:"s"`
		Empty []int            `json:"empty"`
		Nil   []int            `json:"nil"`
		In    []inner          `json:"in"`
		M     map[string]inner `json:"m"`
		Raw   json.RawMessage  `json:"raw"`
		P     *inner           `json:"p,omitempty"`
	}
	values := map[string]any{
		"struct": doc{A: -3, F: 0.1, S: "<a href=\"x\">&</a>\u2028", Empty: []int{}, In: []inner{{"x", map[string]string{"b": "2", "a": "1"}}, {Name: "y"}},
			M: map[string]inner{"k": {Name: "v"}}, Raw: json.RawMessage(`{"z": [1, 2]}`)},
		"scalar":  42,
		"string":  "line\nbreak",
		"nested":  []any{map[string]any{}, []any{}, nil, true, 1.5e300, []any{[]any{map[string]any{"a": []any{}}}}},
		"quoting": map[string]any{"k\"{[,:]}": "\\\"}], {x: y}\\", "raw": json.RawMessage(` { "a" : [ 1 , { } ] , "b\\\"" : "  " } `)},
	}
	dir := t.TempDir()
	for name, v := range values {
		for _, indent := range []bool{true, false} {
			want, err := json.Marshal(v)
			if indent {
				want, err = json.MarshalIndent(v, "", "  ")
			}
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name+".json")
			if err := Write(path, v, indent); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append(want, '\n')) {
				t.Errorf("%s (indent %v): wrote\n%s\nwant\n%s", name, indent, got, want)
			}
		}
	}

	path := filepath.Join(dir, "keep.json")
	if err := Write(path, values["struct"], true); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	err := Write(path, map[string]float64{"nan": math.NaN()}, true)
	if err == nil || !strings.Contains(err.Error(), "keep.json") {
		t.Fatalf("writing NaN: error %v; want one naming keep.json", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Error("a failed write changed the file")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".keep.json.*")); len(left) > 0 {
		t.Errorf("a failed write left %v", left)
	}
}

// The indenter indents any valid JSON text as json.Indent does, written to it whole or
// a byte at a time.
func FuzzIndenter(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,{"b":"}\"]"},[],{}],"c":null}`, ` [ true , false , -1.5e3 , "\\\"" ] `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var want bytes.Buffer
		if err := json.Indent(&want, data, "", "  "); err != nil {
			t.Fatal(err)
		}
		for _, step := range []int{len(data), 1} {
			var got bytes.Buffer
			w := bufio.NewWriter(&got)
			in := &indenter{w: w}
			for i := 0; i < len(data); i += max(step, 1) {
				in.Write(data[i:min(i+max(step, 1), len(data))])
			}
			w.Flush()
			// json.Indent keeps what surrounds the value; the indenter drops it.
			if trimmed := bytes.TrimSpace(want.Bytes()); !bytes.Equal(got.Bytes(), trimmed) {
				t.Fatalf("indenting %q (%d bytes a write): got\n%s\nwant\n%s", data, step, got.Bytes(), trimmed)
			}
		}
	})
}
