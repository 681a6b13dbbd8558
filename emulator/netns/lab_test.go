package netns

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"reef/emulator/lab"
	_ "reef/labs/incast-dctcp/solution/mycc" // my-dctcp, for the checker's cc lookup
)

// labHostd builds a hostd that has the incast lab's reference algorithm (my-dctcp), as
// reef build --with gives a student: a file importing it laid over cmd/hostd.
func labHostd(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	imp := filepath.Join(dir, "mycc.go")
	if err := os.WriteFile(imp, []byte("package main\n\nimport _ \"reef/labs/incast-dctcp/solution/mycc\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, "cmd", "hostd", "zz_labmycc.go"): imp}})
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hostd")
	cmd := exec.Command("go", "build", "-overlay", overlay, "-o", bin, "reef/cmd/hostd")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building hostd with my-dctcp: %v\n%s", err, out)
	}
	return bin
}

// Every teaching lab's reference solution passes reef lab check on netns, as a student
// would run it (each run in its own lab, STUDENT-CODE-c, with one switch daemon). A
// check that failed on a run whose fidelity was degraded is logged, not failed: the
// grade does not hold it against the student either.
func TestLabSolutionsOnNetns(t *testing.T) {
	needRoot(t)
	t.Setenv("REEF_SWITCHD", testSwitchd(t))
	t.Setenv("REEF_HOSTD", labHostd(t))
	labs, err := lab.List(filepath.Join("..", "..", "labs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range labs {
		t.Run(l.Name, func(t *testing.T) {
			out := t.TempDir()
			g, err := lab.Check(context.Background(), l, lab.CheckOptions{Answers: filepath.Join(l.Dir, lab.SolutionDir),
				Backend: "netns", Student: labName("t"), Out: out})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range g.Checks {
				switch r.Status {
				case lab.StatusFail:
					t.Errorf("%s: value %s, bound %s %s", r.Name, r.Value, r.Bound, r.Detail)
				case lab.StatusDegraded:
					t.Logf("%s: degraded (value %s, bound %s): %s", r.Name, r.Value, r.Bound, r.Detail)
				}
			}
			for _, r := range g.Runs {
				t.Logf("%s %v: fidelity %s %s", r.Experiment, r.Vars, r.Fidelity, r.Why)
			}
		})
	}
}
