package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"reef/units"
)

const traceExperiment = `name: tr
topology:
  name: tr
  defaults: {rate: 100Gbps, delay: 1us, buffer: 1MB, mtu: 1500}
  generator: {kind: dumbbell, hosts_left: 2, hosts_right: 2}
time_scale: 100
duration: 1ms
defaults: {cc: xtest, cc_params: {ytest: {gain: 7}}}
workloads:
  - {kind: trace, group: mine, trace: flows.csv, start: 10us, params: {gain: 3}}
`

// writeTrace writes the experiment and its trace into a directory and parses it.
func writeTrace(t *testing.T, trace string) (*Experiment, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "tr.yaml")
	if err := os.WriteFile(path, []byte(traceExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "flows.csv"), []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := Parse(path, []byte(traceExperiment))
	if err != nil {
		t.Fatal(err)
	}
	return x, path
}

func TestTraceWorkload(t *testing.T) {
	x, _ := writeTrace(t, "start,src,dst,size,cc\n0us,h1,h3,10KB,\n2us,h2,h4,2MB,ytest\n20ms,h1,h4,1KB,\n")
	runs, err := x.CompileAll(CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fl := runs[0].Scenario.Flows
	if len(fl) != 2 {
		t.Fatalf("%d flows, want 2 (the third starts after the run)", len(fl))
	}
	want := []struct {
		name, src, dst, cc, params string
		start                      units.Time
		size                       units.Bytes
	}{
		{"mine1", "h1", "h3", "xtest", `"Gain":3`, 1 * units.Millisecond, 10 * units.Kilobyte},
		{"mine2", "h2", "h4", "ytest", `"Gain":7`, 1200 * units.Microsecond, 2 * units.Megabyte},
	}
	for i, w := range want {
		f := fl[i]
		if f.Name != w.name || f.Group != "mine" || f.Src != w.src || f.Dst != w.dst || f.CC != w.cc ||
			f.Start != w.start || f.Size != w.size || !strings.Contains(string(f.CCParams), w.params) {
			t.Errorf("flow %d = %+v (params %s), want %+v", i, f, f.CCParams, w)
		}
	}
}

// TestTraceWorkloadErrors checks that every bad row of a trace is reported with the
// experiment's line, and the trace's file, line and field.
func TestTraceWorkloadErrors(t *testing.T) {
	x, path := writeTrace(t, "start,src,dst,size,cc,priority\n0us,h1,h3,10KB,,0\n1us,h9,h3,1KB,,0\n2us,h1,h2,1KB,swfit,0\n3us,h1,h2,1KB,,2\n4us,h1,h2,-3,,0\n")
	_, err := x.CompileAll(CompileOptions{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{
		path + `:10: workloads[0] (trace): flows.csv:6: size: -3B; want > 0`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error\n%v\nlacks %q", err, w)
		}
	}
	// once the file itself is right, the experiment's view of it is checked
	x, _ = writeTrace(t, "start,src,dst,size,cc,priority\n0us,h1,h3,10KB,,0\n1us,h9,h3,1KB,,0\n2us,h1,h2,1KB,swfit,0\n3us,h1,h2,1KB,,2\n")
	_, err = x.CompileAll(CompileOptions{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{
		`workloads[0] (trace): flows.csv:3: src: no host "h9" in the topology (did you mean "h1"?)`,
		`workloads[0] (trace): flows.csv:5: priority: 2; reef's fabric has one traffic class`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error\n%v\nlacks %q", err, w)
		}
	}
	x, _ = writeTrace(t, "start,src,dst,size,cc\n0us,h1,h3,10KB,\n2us,h1,h2,1KB,swfit\n")
	if _, err = x.CompileAll(CompileOptions{}); err == nil || !strings.Contains(err.Error(), `flows.csv:3: cc: cc: algorithm "swfit" is not supported`) {
		t.Errorf("unknown algorithm in a trace: %v", err)
	}
}
