package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"reef/emulator/lab"
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
