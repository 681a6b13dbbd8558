package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildWithExampleAlgorithm builds a reef with the out-of-tree example algorithm
// (examples/ecnreno, its own module) and checks that the new binary lists it and runs
// its experiment on sim with every expectation holding, while a reef without it (this
// test's own) names the missing algorithm.
func TestBuildWithExampleAlgorithm(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles reef")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	bin := filepath.Join(t.TempDir(), "reef-ecnreno")
	if err := buildReef(t.Context(), &buildOptions{with: []string{"../../examples/ecnreno"}, out: bin, src: "../.."}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "algorithms", "ecn-reno").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ecn-reno: example out-of-tree algorithm") || !strings.Contains(string(out), "beta") {
		t.Fatalf("reef algorithms ecn-reno: %v\n%s", err, out)
	}
	exp := "../../examples/ecnreno/experiment.yaml"
	out, err = exec.Command(bin, "run", exp, "--backend", "sim", "--no-figures", "--out", t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("reef run with ecn-reno: %v\n%s", err, out)
	}
	if err := validateFile(exp); err == nil || !strings.Contains(err.Error(), `algorithm "ecn-reno" is not supported`) {
		t.Errorf("a reef without the algorithm: %v; want an error naming ecn-reno", err)
	}
}

func TestReefSource(t *testing.T) {
	if dir, err := reefSource(""); err != nil || filepath.Base(filepath.Join(dir, "cmd", "reef")) != "reef" {
		t.Errorf("reefSource inside the checkout = %q, %v", dir, err)
	}
	if _, err := reefSource(t.TempDir()); err == nil || !strings.Contains(err.Error(), "needs reef's source") {
		t.Errorf("reefSource outside a checkout: %v", err)
	}
}
