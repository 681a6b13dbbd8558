package main

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"reef/emulator/lab"
	"reef/emulator/netns"
	"reef/internal/testenv"
)

// reef lab through the CLI on the sim: a student's directory from lab start --no-up is
// graded 1 (the starting files fail), the solution laid over it 0, a lab that does not
// exist 2; --all grades a class directory and writes class.html, exiting 1 while a
// submission fails.
func TestLabCommand(t *testing.T) {
	labs := filepath.Join("..", "..", "labs")
	dir := t.TempDir()
	ada := filepath.Join(dir, "ada")
	ctx := context.Background()
	if code := run(ctx, []string{"lab", "start", "ecmp-spray", "--labs", labs, "--student", "ada", "--dir", ada, "--no-up"}); code != 0 {
		t.Fatalf("lab start --no-up: exit %d", code)
	}
	if m, err := lab.ReadMarker(ada); err != nil || m == nil || m.Student != "ada" || m.Lab != "ecmp-spray" {
		t.Fatalf("marker %+v, %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(ada, "handout.html")); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		exit int
	}{
		{"starting files", []string{"lab", "check", "ecmp-spray", "--labs", labs, "--answers", ada}, 1},
		{"no such lab", []string{"lab", "check", "nope", "--labs", labs, "--answers", ada}, 2},
		{"bad backend", []string{"lab", "check", "ecmp-spray", "--labs", labs, "--answers", ada, "--backend", "floppy"}, 2},
	} {
		if code := run(ctx, tc.args); code != tc.exit {
			t.Errorf("%s: exit %d, want %d", tc.name, code, tc.exit)
		}
	}
	g, err := lab.ReadGrade(filepath.Join(ada, "grade"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Student != "ada" || g.Pass {
		t.Errorf("grade of the starting files: student %q, pass %v", g.Student, g.Pass)
	}
	bob := filepath.Join(dir, "bob")
	if code := run(ctx, []string{"lab", "start", "ecmp-spray", "--labs", labs, "--student", "bob", "--dir", bob, "--no-up"}); code != 0 {
		t.Fatalf("lab start bob: exit %d", code)
	}
	sol := filepath.Join(labs, "ecmp-spray", lab.SolutionDir)
	for _, f := range []string{"experiment.yaml", "answers.yaml"} {
		b, err := os.ReadFile(filepath.Join(sol, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bob, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code := run(ctx, []string{"lab", "check", "ecmp-spray", "--labs", labs, "--answers", bob}); code != 0 {
		t.Errorf("the solution: exit %d, want 0", code)
	}
	if code := run(ctx, []string{"lab", "check", "--labs", labs, "--all", dir}); code != 1 {
		t.Errorf("--all with one failing submission: exit %d, want 1", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "class.html")); err != nil {
		t.Error(err)
	}
}

// A class on one machine: three students' labs up at once on netns, each bounded,
// each reaching across its own fabric (ping from its first host to its last), each
// graded (its reference solution handed in, checked on the sim) and each stopped on
// its own; afterwards nothing of any of them is left: no namespace, run directory,
// cgroup or daemon.
func TestClassOnNetns(t *testing.T) {
	testenv.RequireRoot(t)
	labs := filepath.Join("..", "..", "labs")
	ctx := context.Background()
	dir := t.TempDir()
	class := []struct{ lab, student string }{{"queues-ecn", "ann"}, {"ecmp-spray", "ben"}, {"int-hpcc", "cai"}}
	names := make([]string, len(class))
	for i, c := range class {
		l, err := lab.Find(labs, c.lab)
		if err != nil {
			t.Fatal(err)
		}
		names[i] = lab.LabName(l, c.student, false)
		t.Cleanup(func() { _ = downRun(context.Background(), names[i]) }) // only if a check below failed
		if code := run(ctx, []string{"lab", "start", c.lab, "--labs", labs, "--student", c.student, "--dir", filepath.Join(dir, c.student)}); code != 0 {
			t.Fatalf("lab start %s --student %s: exit %d", c.lab, c.student, code)
		}
	}
	for i, c := range class { // all three are up now
		st, err := netns.ReadState("", names[i])
		if err != nil {
			t.Fatal(err)
		}
		var hosts []string
		for _, n := range st.Namespaces {
			if strings.HasPrefix(n.Node, "h") {
				hosts = append(hosts, n.Node)
			}
		}
		slices.SortFunc(hosts, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) })
		first, last := hosts[0], hosts[len(hosts)-1]
		code := run(ctx, []string{"exec", "--lab", names[i], first, "--", "ping", "-c", "2", "-W", "2", last})
		// reef exec joined the lab's cgroups to start ping in them, in this process:
		// leave them, as the reef process's exit would.
		for _, h := range []string{"cpu", "memory", "pids"} {
			if err := os.WriteFile(filepath.Join(lab.CgroupRoot, h, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if code != 0 {
			t.Errorf("%s's lab %s: ping %s → %s: exit %d", c.student, names[i], first, last, code)
		}
	}
	for _, c := range class {
		answers := filepath.Join(dir, c.student)
		for _, f := range []string{"experiment.yaml", "answers.yaml"} { // what these labs hand in
			b, err := os.ReadFile(filepath.Join(labs, c.lab, lab.SolutionDir, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(answers, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if code := run(ctx, []string{"lab", "check", c.lab, "--labs", labs, "--answers", answers, "--backend", "sim"}); code != 0 {
			t.Errorf("%s's solution of %s, checked while the class's labs are up: exit %d, want 0", c.student, c.lab, code)
		}
	}
	for i, c := range class {
		if code := run(ctx, []string{"lab", "stop", c.lab, "--labs", labs, "--student", c.student}); code != 0 {
			t.Errorf("lab stop %s --student %s: exit %d", c.lab, c.student, code)
		}
		// The others are still up: one student's stop takes only that student's lab.
		for _, other := range names[i+1:] {
			if _, err := netns.ReadState("", other); err != nil {
				t.Errorf("after %s's lab stopped, %s is gone too: %v", c.student, other, err)
			}
		}
	}
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(netns.DefaultRunDir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: its run directory is left (%v)", name, err)
		}
		out, _ := exec.Command("ip", "netns", "list").Output()
		for _, ns := range strings.Fields(string(out)) {
			if strings.Contains(ns, "-"+name+"-") {
				t.Errorf("%s: namespace %s is left", name, ns)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(lab.CgroupRoot, "*", lab.CgroupName(name))); len(left) > 0 {
			t.Errorf("%s: cgroups %v are left", name, left)
		}
		if out, err := exec.Command("pgrep", "-f", filepath.Join(netns.DefaultRunDir, name)+"/").Output(); err == nil {
			t.Errorf("%s: daemons are left: %s", name, out)
		}
	}
}
