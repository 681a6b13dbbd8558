package analysis

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"reef/emulator/expect"
)

// A run directory, in the format WriteRunData writes and in the one it wrote before
// the samples moved out of results.json, loads back into the same run, and the summary
// recomputed from it is the same byte for byte.
func TestLoadRunRoundTrip(t *testing.T) {
	p := testPlan(t)
	sc, run := testRun("exp/cc=swift", 1, 1)
	xs := parse(t, expect.Spec{Name: "fair", Check: "jain(bulk) >= 0.95"})
	s, err := Summarize(p, sc, run, xs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		write func(dir string) error
	}{
		{"current", func(dir string) error { return WriteRunData(dir, s, nil) }},
		{"samples in results.json", func(dir string) error {
			if err := WriteRunData(dir, s, nil); err != nil {
				return err
			}
			for _, f := range []string{FlowsCSV, QueuesCSV} {
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					return err
				}
			}
			return writeJSON(filepath.Join(dir, ResultsFile), run)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := c.write(dir); err != nil {
				t.Fatal(err)
			}
			in, err := LoadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(in.Run, run) {
				t.Fatalf("loaded run\n%+v\nwant\n%+v", in.Run, run)
			}
			var n int
			for _, f := range in.Run.Flows {
				n += len(f.Samples)
			}
			if n == 0 {
				t.Fatal("the test run has no flow samples to carry")
			}
			again, err := Summarize(in.Plan, in.Scenario, in.Run, in.Expectations)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(again, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("summary recomputed from the directory differs:\n%s\nwant\n%s", got, want)
			}
		})
	}
}
