package lab

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "reef/cc/all"
	"reef/emulator"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	_ "reef/emulator/sim/simbackend"
	"reef/emulator/topo"
	_ "reef/labs/incast-dctcp/solution/mycc" // my-dctcp, the incast lab's reference algorithm
	"reef/units"
)

const labsRoot = "../../labs"

func loadAll(t *testing.T) []*Lab {
	t.Helper()
	labs, err := List(labsRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(labs) < 5 {
		t.Fatalf("%d labs, want at least 5", len(labs))
	}
	return labs
}

// Every lab's reference solution passes every check on the sim, and grade.json and
// grade.html say so.
func TestSolutionsPassOnSim(t *testing.T) {
	for _, l := range loadAll(t) {
		t.Run(l.Name, func(t *testing.T) {
			out := t.TempDir()
			g, err := Check(context.Background(), l, CheckOptions{Answers: filepath.Join(l.Dir, SolutionDir), Out: out})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range g.Checks {
				if r.Status != StatusPass {
					t.Errorf("%s: %s (value %s, bound %s) %s", r.Name, r.Status, r.Value, r.Bound, r.Detail)
				}
			}
			if !g.Pass || g.Passed != len(g.Checks) || len(g.Checks) == 0 {
				t.Errorf("grade: pass %v, %d of %d passed", g.Pass, g.Passed, len(g.Checks))
			}
			back, err := ReadGrade(out)
			if err != nil {
				t.Fatal(err)
			}
			if back.Passed != g.Passed || back.Backend != "sim" {
				t.Errorf("grade.json: %+v", back)
			}
			if _, err := os.Stat(filepath.Join(out, GradeHTML)); err != nil {
				t.Error(err)
			}
		})
	}
}

// A deliberately wrong answer to each lab fails the check it should, with the hint that
// names what to look at.
func TestWrongAnswersFailWithHint(t *testing.T) {
	cases := []struct {
		lab   string
		check string // must fail
		hint  string // in its hint
	}{
		{"queues-ecn", "short-queue", "ECN marking"},   // K = 200 KB: a standing queue
		{"queues-ecn", "bdp", "rate × base RTT"},       // 60 KB
		{"incast-dctcp", "no-drops", "cc: none"},       // the starting file
		{"multihop-poseidon", "victim-share", "int"},   // Poseidon without INT
		{"int-hpcc", "near-zero-queue", "int_hops"},    // no room for the records
		{"ecmp-spray", "slowest-flow", "5-tuple hash"}, // ECMP collides two flows
		{"ecmp-spray", "total", "Per-packet"},          // and leaves a spine idle
	}
	grades := map[string]*Grade{}
	for _, c := range cases {
		t.Run(c.lab+"/"+c.check, func(t *testing.T) {
			g := grades[c.lab]
			if g == nil {
				l, err := Load(filepath.Join(labsRoot, c.lab))
				if err != nil {
					t.Fatal(err)
				}
				if g, err = Check(context.Background(), l, CheckOptions{Answers: filepath.Join("testdata", "wrong", c.lab), Out: t.TempDir()}); err != nil {
					t.Fatal(err)
				}
				grades[c.lab] = g
			}
			if g.Pass {
				t.Fatal("the wrong answer passed")
			}
			i := slices.IndexFunc(g.Checks, func(r Result) bool { return r.Name == c.check })
			if i < 0 {
				t.Fatalf("no check %s", c.check)
			}
			r := g.Checks[i]
			if r.Status != StatusFail {
				t.Fatalf("%s: %s (value %s, bound %s), want fail", r.Name, r.Status, r.Value, r.Bound)
			}
			if !strings.Contains(r.Hint, c.hint) {
				t.Errorf("%s's hint %q does not mention %q", r.Name, r.Hint, c.hint)
			}
		})
	}
}

// busyBackend is the sim as a machine busy with other work would leave a real backend:
// every run's host h1 released its frames 10 ms late at p99, so its fidelity verdict is
// degraded.
type busyBackend struct{}

func (busyBackend) Name() string { return "sim-busy-lab" }

func (busyBackend) Run(ctx context.Context, p *plan.Plan, sc *scenario.Scenario, opts emulator.RunOptions) (*results.Run, error) {
	sim, err := emulator.Lookup("sim")
	if err != nil {
		return nil, err
	}
	res, err := sim.Run(ctx, p, sc, opts)
	if err != nil {
		return res, err
	}
	res.Hosts = append(res.Hosts, results.Host{Name: "h1", Rate: units.Gbps,
		Lateness: results.Lateness{Count: 1000, P50: units.Microsecond, P99: 10 * units.Millisecond, Max: 10 * units.Millisecond}})
	return res, nil
}

// A check that fails on a run whose fidelity is degraded is degraded, not failed: the
// grade says why, does not hold it against the student, and passes when nothing else
// failed; a question (no run behind it) still fails.
func TestDegradedRunIsNotHeldAgainst(t *testing.T) {
	emulator.Register(busyBackend{})
	l, err := Load(filepath.Join(labsRoot, "queues-ecn"))
	if err != nil {
		t.Fatal(err)
	}
	none := 0
	// The starting files, ECN off: short-queue fails on the sim.
	g, err := Check(context.Background(), l, CheckOptions{Backend: "sim-busy-lab", Out: t.TempDir(), RetryDegraded: &none})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]Result{}
	for _, r := range g.Checks {
		status[r.Name] = r
	}
	sq := status["short-queue"]
	if sq.Status != StatusDegraded || !strings.Contains(sq.Detail, "not graded against you") || !strings.Contains(sq.Detail, "lateness") {
		t.Errorf("short-queue: %s, %q; want degraded, saying why", sq.Status, sq.Detail)
	}
	if r := status["busy"]; r.Status != StatusPass {
		t.Errorf("busy: %s; a check that holds on a degraded run still passes", r.Status)
	}
	if r := status["bdp"]; r.Status != StatusFail {
		t.Errorf("bdp (unanswered): %s, want fail", r.Status)
	}
	if g.Degraded == 0 || len(g.Runs) != 1 || g.Runs[0].Fidelity != "degraded" {
		t.Errorf("grade: %d degraded, runs %+v", g.Degraded, g.Runs)
	}
	// With the questions answered, nothing but the degraded check fails: the grade passes.
	answers := t.TempDir()
	sol, err := os.ReadFile(filepath.Join(l.Dir, SolutionDir, AnswersFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(answers, AnswersFile), sol, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err = Check(context.Background(), l, CheckOptions{Backend: "sim-busy-lab", Answers: answers, Out: t.TempDir(), RetryDegraded: &none})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Pass || g.Failed != 0 || g.Degraded == 0 {
		t.Errorf("grade with only degraded failures: pass %v, %d failed, %d degraded", g.Pass, g.Failed, g.Degraded)
	}
}

func TestParseManifest(t *testing.T) {
	good := "short: ab\ntitle: t\ntopology: topo.yaml\nexperiments:\n  - file: x.yaml\n    checks:\n      - {name: a, check: \"victim.goodput >= 1Gbps\", hint: h}\n"
	cases := []struct {
		name, src, want string
	}{
		{"good", good, ""},
		{"no title", strings.Replace(good, "title: t\n", "", 1), "title: missing"},
		{"no hint", strings.Replace(good, ", hint: h", "", 1), "hint: missing"},
		{"bad check", strings.Replace(good, ">= 1Gbps", ">= 1s", 1), "expectation"},
		{"unknown field", good + "colour: red\n", "colour"},
		{"outside", strings.Replace(good, "topo.yaml", "../topo.yaml", 1), "inside the lab"},
		{"bad bound", "short: ab\ntitle: t\ntopology: t.yaml\nquestions:\n  - {name: q, answer: q, unit: time, min: 5KB, hint: h}\n", "question q"},
		{"no short", strings.Replace(good, "short: ab\n", "", 1), "short"},
		{"twice", good + "questions:\n  - {name: a, answer: a, min: 1, hint: h}\n", "used twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("lab.yaml", []byte(c.src))
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// A student's lab names fit reef's 12-character lab names, with the checker's suffix.
func TestLabNames(t *testing.T) {
	l := &Lab{Short: "qe"}
	for _, c := range []struct {
		student string
		check   bool
		want    string
	}{{"", false, "qe"}, {"alice", false, "alice-qe"}, {"abcdefg", true, "abcdefg-qe-c"}} {
		if got := LabName(l, c.student, c.check); got != c.want {
			t.Errorf("LabName(%q, %v) = %q, want %q", c.student, c.check, got, c.want)
		}
		if len(c.want) > topo.MaxLabName {
			t.Errorf("%q is longer than a lab name may be", c.want)
		}
	}
	for _, bad := range []string{"", "abcdefgh", "Ada", "a_b", "a-b"} {
		if CheckStudent(bad) == nil {
			t.Errorf("student %q accepted", bad)
		}
	}
}

func TestParseValue(t *testing.T) {
	cases := []struct {
		unit, s string
		want    float64
		err     bool
	}{
		{"time", "250us", 250e3, false},
		{"rate", "85Mbps", 85e6, false},
		{"bytes", "7.5KB", 7500, false},
		{"number", "0.4", 0.4, false},
		{"number", "40%", 0.4, false},
		{"", "3", 3, false},
		{"time", "5KB", 0, true},
		{"colour", "1", 0, true},
	}
	for _, c := range cases {
		v, err := ParseValue(c.unit, c.s)
		if (err != nil) != c.err || (!c.err && v != c.want) {
			t.Errorf("ParseValue(%q, %q) = %v, %v; want %v (error %v)", c.unit, c.s, v, err, c.want, c.err)
		}
	}
}

func TestHandoutRendersMarkdownSafely(t *testing.T) {
	for _, l := range loadAll(t) {
		page, err := Handout(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"<h1>", "<pre><code", l.Title, `id="graded"`} {
			if !strings.Contains(string(page), want) {
				t.Errorf("%s's handout lacks %q", l.Name, want)
			}
		}
	}
	h, err := RenderMarkdown([]byte("# x\n\n<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(h), "<script>") || !strings.Contains(string(h), "<table>") {
		t.Errorf("rendered %q: want raw HTML dropped and the table kept", h)
	}
}

// A class directory: each student's directory graded, one page for the teacher.
func TestClass(t *testing.T) {
	l, err := Load(filepath.Join(labsRoot, "multihop-poseidon"))
	if err != nil {
		t.Fatal(err)
	}
	class := t.TempDir()
	for _, s := range []string{"ada", "bob"} {
		if err := Prepare(l, s, filepath.Join(class, s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyTree(filepath.Join(l.Dir, SolutionDir), filepath.Join(class, "ada"), func(string, os.DirEntry) bool { return false }); err != nil {
		t.Fatal(err)
	}
	subs, err := Submissions(class, "")
	if err != nil || len(subs) != 2 {
		t.Fatalf("submissions %+v, %v", subs, err)
	}
	var rows []ClassRow
	for _, s := range subs {
		g, err := Check(context.Background(), l, CheckOptions{Answers: s.Dir, Student: s.Student, Out: filepath.Join(s.Dir, "grade")})
		if err != nil {
			t.Fatal(err)
		}
		if want := s.Student == "ada"; g.Pass != want {
			t.Errorf("%s: pass %v, want %v", s.Student, g.Pass, want)
		}
		rows = append(rows, ClassRow{Student: s.Student, Lab: s.Lab, G: g})
	}
	if err := WriteClass(class, "sim", rows); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(class, "class.html"))
	if err != nil || !strings.Contains(string(page), "victim-share") {
		t.Errorf("class.html does not name bob's failing check: %v", err)
	}
}

func FuzzParseAnswers(f *testing.F) {
	f.Add([]byte("bdp: 7.8KB\nping_rtt: 400us\n"))
	f.Add([]byte("a: [1, 2]\n"))
	f.Add([]byte("a:\n  b: 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseAnswers("answers.yaml", b)
		if err == nil && m == nil {
			t.Fatal("no map and no error")
		}
	})
}

func FuzzParseManifest(f *testing.F) {
	b, err := os.ReadFile(filepath.Join(labsRoot, "queues-ecn", ManifestFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("title: t\ntopology: x\nquestions: [{name: q, answer: q, unit: rate, max: 1Gbps, hint: h}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Parse("lab.yaml", b) // must not panic
	})
}

// Only the files a student hands in are graded: a topology.yaml in the answers (with a
// 10 KB buffer, which would drop packets) is not taken.
func TestOnlyHandedInFilesAreGraded(t *testing.T) {
	l, err := Load(filepath.Join(labsRoot, "queues-ecn"))
	if err != nil {
		t.Fatal(err)
	}
	answers := t.TempDir()
	if err := copyTree(filepath.Join(l.Dir, SolutionDir), answers, func(string, os.DirEntry) bool { return false }); err != nil {
		t.Fatal(err)
	}
	topo, err := os.ReadFile(filepath.Join(l.Dir, "topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fast := strings.Replace(string(topo), "buffer: 2MB", "buffer: 10KB", 1)
	if err := os.WriteFile(filepath.Join(answers, "topology.yaml"), []byte(fast), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Check(context.Background(), l, CheckOptions{Answers: answers, Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(g.Graded, "topology.yaml") || !slices.Contains(g.Graded, "experiment.yaml") {
		t.Errorf("graded %v: want the handed-in files only", g.Graded)
	}
	if !g.Pass {
		t.Errorf("the solution failed with a topology.yaml beside it: %+v", g.FailedChecks())
	}
}
