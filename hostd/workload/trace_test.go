package workload

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"reef/units"
)

func TestParseTrace(t *testing.T) {
	want := []TraceFlow{
		{Start: 0, Src: "h1", Dst: "h9", Size: 14 * units.Kilobyte, Line: 3},
		{Start: 2500, Src: "h3", Dst: "h12", Size: 1460000, CC: "dctcp", Priority: 0, Line: 4},
	}
	csvSrc := "# a comment\nstart, src, dst, size, cc\n0us,h1,h9,14KB,\n2.5us,h3,h12,1460000,dctcp\n"
	jsonSrc := "# a comment\n\n{\"start\": \"0s\", \"src\": \"h1\", \"dst\": \"h9\", \"size\": \"14KB\"}\n" +
		"{\"start\": \"2.5us\", \"src\": \"h3\", \"dst\": \"h12\", \"size\": 1460000, \"cc\": \"dctcp\", \"priority\": 0}\n"
	for name, src := range map[string]string{"csv": csvSrc, "jsonl": jsonSrc} {
		got, err := ParseTrace("t."+name, []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w := want
		if name == "jsonl" {
			w = slicesWithLines(want, 3, 4)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: got %+v, want %+v", name, got, w)
		}
	}
}

func slicesWithLines(fs []TraceFlow, lines ...int) []TraceFlow {
	out := append([]TraceFlow(nil), fs...)
	for i := range out {
		out[i].Line = lines[i]
	}
	return out
}

// TestParseTraceErrors checks that every bad row is reported with file, line and field.
func TestParseTraceErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"empty", "# nothing\n", []string{"t.csv: empty trace"}},
		{"no header", "0us,h1,h2,10\n", []string{`t.csv:1: header: "0us", "h1", "h2", "10"; want a header row`}},
		{"missing column", "start,src,size\n0us,h1,10\n", []string{"t.csv:1: header: no dst column"}},
		{"every bad row", "start,src,dst,size,priority\n" +
			"0us,h1,h2,10,0\n" +
			"5,h1,h2,10,0\n" +
			"1us,h1,h1,10,0\n" +
			"1us,h1,h2,0,0\n" +
			"1us,,h2,10KX,9\n" +
			"1us,h1,h2\n",
			[]string{`t.csv:3: start: time "5": want a number with a unit`, `t.csv:4: dst: "h1" is also the source`,
				`t.csv:5: size: 0B; want > 0`, `t.csv:6: size: size "10KX"`, `t.csv:6: src: missing`,
				`t.csv:6: priority: 9; want a number from 0 to 7`, `t.csv:7: 3 fields; want 5`}},
		{"json rows", "{\"start\": \"1us\", \"src\": \"h1\", \"dst\": \"h2\", \"size\": 10}\n" +
			"{\"start\": 5, \"src\": \"h1\", \"dst\": \"h2\", \"size\": 1.5}\n" +
			"{\"start\": \"1us\", \"src\": \"h1\", \"dst\": \"h2\", \"bytes\": 10}\n",
			[]string{`t.csv:2: start: 5; want a time with a unit`, `t.csv:2: size: 1.5; want a whole number`,
				`t.csv:3: json: unknown field "bytes"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTrace("t.csv", []byte(tc.src))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nlacks %q", err, w)
				}
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != len(tc.want) {
				t.Errorf("%d problems reported, want %d:\n%v", n, len(tc.want), err)
			}
		})
	}
}

// TestWriteTraceRoundTrip writes generated flows in both formats and reads them back.
func TestWriteTraceRoundTrip(t *testing.T) {
	cdf, err := Builtin("websearch")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := Poisson{Srcs: []int{0, 1, 2}, Dsts: []int{0, 1, 2}, Load: 0.5, Rate: 10 * units.Gbps, CDF: cdf,
		Duration: units.Millisecond}.Generate(rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "b", "c"}
	var flows []TraceFlow
	for i, g := range gen {
		f := TraceFlow{Start: g.Start, Src: names[g.Src], Dst: names[g.Dst], Size: g.Size}
		if i%3 == 0 {
			f.CC, f.Priority = "swift", 1
		}
		flows = append(flows, f)
	}
	for _, format := range []string{"csv", "jsonl"} {
		var b bytes.Buffer
		if err := WriteTrace(&b, flows, format); err != nil {
			t.Fatal(err)
		}
		got, err := ParseTrace("t."+format, b.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for i := range got {
			got[i].Line = 0
		}
		if !reflect.DeepEqual(got, flows) {
			t.Errorf("%s: %d flows read back differ from the %d written", format, len(got), len(flows))
		}
	}
	if err := WriteTrace(&bytes.Buffer{}, flows, "xml"); err == nil {
		t.Error("format xml: no error")
	}
}
