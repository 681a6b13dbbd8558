package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"reef/hostd/workload"
)

// TestTraceGenWritesTheExampleTrace regenerates experiments/examples/websearch-1k.csv
// with the command its header names: the shipped trace is what trace-gen writes, and
// it reads back as a trace.
func TestTraceGenWritesTheExampleTrace(t *testing.T) {
	want, err := os.ReadFile("../../experiments/examples/websearch-1k.csv")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	g := &traceGenOptions{cdf: "websearch", load: 0.6, duration: "14ms", seed: 7, format: "csv"}
	if err := traceGen(&got, "../../experiments/websearch-fct.yaml", g); err != nil {
		t.Fatal(err)
	}
	body := func(b []byte) string { _, rest, _ := strings.Cut(string(b), "\n"); return rest } // after the header comment
	if body(got.Bytes()) != body(want) {
		t.Error("trace-gen no longer writes the shipped example trace; regenerate it with the command in its first line")
	}
	flows, err := workload.ParseTrace("websearch-1k.csv", want)
	if err != nil || len(flows) < 1000 {
		t.Fatalf("%d flows, %v; want at least 1000", len(flows), err)
	}
	for _, bad := range []*traceGenOptions{
		{cdf: "websearch", load: 0.6, duration: "14", format: "csv"},
		{cdf: "nosuch", load: 0.6, duration: "1ms", format: "csv"},
		{cdf: "websearch", load: 0.6, duration: "1ms", format: "csv", hosts: []string{"h1"}},
		{cdf: "websearch", load: 0.6, duration: "1ms", format: "xml"},
	} {
		if err := traceGen(&bytes.Buffer{}, "../../experiments/websearch-fct.yaml", bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
