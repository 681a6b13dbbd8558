package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"reef/emulator"
	"reef/emulator/lab"
	"reef/emulator/netns"
	"reef/emulator/plan"
	"reef/emulator/topo"
	"reef/units"
)

func init() { commands = append(commands, labCmd) }

// labOptions are the flags reef lab's subcommands share.
type labOptions struct {
	root    string
	student string
}

func labCmd(o *options) *cobra.Command {
	lo := &labOptions{}
	c := &cobra.Command{
		Use:   "lab",
		Short: "teaching labs: list them, start a student's, check (grade) a student's answers",
		Long: `lab serves a class: each lab in labs/NAME/ has a handout, the files a student starts
from, a reference solution and the checks their answers are graded on.

  reef lab list
  reef lab start queues-ecn --student alice     # ./queues-ecn-alice: files, handout; lab up on netns
  reef lab check queues-ecn --answers ./queues-ecn-alice [--backend sim|netns]
  reef lab check --all submissions/ [LAB]      # a directory of students' directories
  reef lab stop queues-ecn --student alice

Several students' labs share one machine: each is named STUDENT-CODE, CODE the lab's
two-character code (alice-qe: namespaces reef-alice-qe-NODE, state /run/reef/alice-qe),
runs its switches in one daemon, and comes down on its own. The checker's runs on netns
bring up STUDENT-CODE-c beside it.`,
	}
	c.PersistentFlags().StringVar(&lo.root, "labs", "labs", "the directory holding the labs")
	c.PersistentFlags().StringVar(&lo.student, "student", "", "the student's ID (1 to 7 lower-case letters or digits)")
	c.AddCommand(labListCmd(lo), labStartCmd(lo), labStopCmd(lo), labCheckCmd(lo), labHandoutCmd(lo))
	return c
}

func labListCmd(lo *labOptions) *cobra.Command {
	return &cobra.Command{
		Use: "list", Short: "list the labs", Args: cobra.NoArgs, SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			labs, err := lab.List(lo.root)
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "LAB\tCODE\tCHECKS\tTITLE")
			for _, l := range labs {
				n := len(l.Questions)
				for _, x := range l.Experiments {
					n += len(x.Checks)
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", l.Name, l.Short, n, l.Title)
			}
			return errors.Join(w.Flush(), err)
		},
	}
}

func labHandoutCmd(lo *labOptions) *cobra.Command {
	var out string
	c := &cobra.Command{
		Use: "handout LAB", Short: "render a lab's handout (README.md) to HTML", Args: cobra.ExactArgs(1), SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := lab.Find(lo.root, args[0])
			if err != nil {
				return err
			}
			page, err := lab.Handout(l)
			if err != nil {
				return err
			}
			if out == "" {
				out = l.Name + ".html"
			}
			if err := os.WriteFile(out, page, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "handout: %s\n", out)
			return nil
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "the HTML file (default LAB.html)")
	return c
}

func labStartCmd(lo *labOptions) *cobra.Command {
	var dir string
	var noUp bool
	var shards int
	var lim lab.Limits
	var memory string
	c := &cobra.Command{
		Use:   "start LAB",
		Short: "copy a lab's starting files and handout for a student and bring the student's lab up on netns",
		Long: `start copies the files a student starts from into DIR (default ./LAB-STUDENT, or
./LAB without --student) with the handout rendered as handout.html, and brings the
lab's topology up on network namespaces as lab STUDENT-CODE (reef lab list shows each
lab's code), with its switches in one daemon (--shards). Run programs in it with
reef exec --lab STUDENT-CODE; take it down
with reef lab stop LAB --student STUDENT. --no-up copies the files only (the sim
backend needs no lab up, nor root).

The lab is bounded (cgroup v1, its own groups reef-lab-STUDENT-CODE): its daemons and
the programs reef exec starts in it may use --cpu of each CPU (their real-time budget:
the kernel refuses budgets past 95% of a CPU in all, so a machine holds that many
labs), --memory and --pids. 0 leaves a resource unbounded.`,
		Args: cobra.ExactArgs(1), SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if memory != "0" {
				m, err := units.ParseBytes(memory)
				if err != nil {
					return fmt.Errorf("--memory %q: %w", memory, err)
				}
				lim.Memory = int64(m)
			}
			return labStart(cmd.Context(), lo, args[0], dir, noUp, shards, lim)
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the student's directory (default ./LAB-STUDENT)")
	c.Flags().BoolVar(&noUp, "no-up", false, "copy the files only; bring nothing up")
	c.Flags().IntVar(&shards, "shards", 1, "switch daemons the student's lab gets (one keeps a class on one machine)")
	c.Flags().Float64Var(&lim.CPU, "cpu", 0.3, "share of each CPU the lab may use (0: unbounded)")
	c.Flags().StringVar(&memory, "memory", "512MB", "memory the lab may hold (0: unbounded)")
	c.Flags().IntVar(&lim.Pids, "pids", 512, "processes and threads the lab may have (0: unbounded)")
	return c
}

func labStart(ctx context.Context, lo *labOptions, name, dir string, noUp bool, shards int, lim lab.Limits) error {
	l, err := lab.Find(lo.root, name)
	if err != nil {
		return err
	}
	if lo.student != "" {
		if err := lab.CheckStudent(lo.student); err != nil {
			return err
		}
	}
	labName := lab.LabName(l, lo.student, false)
	if dir == "" {
		dir = l.Name
		if lo.student != "" {
			dir += "-" + lo.student
		}
	}
	if _, err := os.Stat(dir); err == nil {
		fmt.Printf("%s exists: keeping the files in it\n", dir)
	} else if err := lab.Prepare(l, lo.student, dir); err != nil {
		return err
	} else {
		fmt.Printf("your files: %s (handout: %s)\n", dir, filepath.Join(dir, "handout.html"))
	}
	if noUp {
		return nil
	}
	t, err := topo.Load(filepath.Join(l.Dir, l.Topology))
	if err != nil {
		return err
	}
	t.Name = labName
	p, err := plan.Build(t, plan.Options{Seed: 1})
	if err != nil {
		return err
	}
	be, err := emulator.LookupLab("netns")
	if err != nil {
		return err
	}
	// a bounded lab shares the machine's CPUs with a class's others: no CPU of its own
	up, err := be.Up(ctx, p, emulator.UpOptions{Topology: filepath.Join(l.Dir, l.Topology), Shards: shards, Unplaced: lim != (lab.Limits{})})
	if err != nil {
		return err
	}
	if lim != (lab.Limits{}) {
		if err := boundLab(up.Name, lim); err != nil {
			return errors.Join(err, downRun(context.WithoutCancel(ctx), up.Name))
		}
		fmt.Printf("lab %s is bounded: %s\n", up.Name, describeLimits(lim))
	}
	fmt.Printf("lab %s is up: %d hosts, %d switches (reef exec --lab %s h1 -- ping -c 3 %s)\n",
		up.Name, len(p.Hosts), len(p.Switches), up.Name, p.Hosts[len(p.Hosts)-1].Config.Name)
	if up.Placement != "" {
		fmt.Printf("switch daemons: %s\n", up.Placement)
	}
	who := ""
	if lo.student != "" {
		who = " --student " + lo.student
	}
	fmt.Printf("check your work: reef lab check %s --answers %s%s; take the lab down: reef lab stop %s%s\n", l.Name, dir, who, l.Name, who)
	return nil
}

// boundLab puts the lab's daemons in cgroups with lim (lab.Bound).
func boundLab(name string, lim lab.Limits) error {
	st, err := netns.ReadState("", name)
	if err != nil {
		return err
	}
	var pids []int
	for _, d := range st.Daemons {
		if d.Pid > 0 && !slices.Contains(pids, d.Pid) {
			pids = append(pids, d.Pid)
		}
	}
	return lab.Bound(name, pids, lim)
}

func describeLimits(l lab.Limits) string {
	var parts []string
	if l.CPU > 0 {
		parts = append(parts, fmt.Sprintf("%.0f%% of each CPU", l.CPU*100))
	}
	if l.Memory > 0 {
		parts = append(parts, units.Bytes(l.Memory).String()+" of memory")
	}
	if l.Pids > 0 {
		parts = append(parts, fmt.Sprintf("%d processes and threads", l.Pids))
	}
	return strings.Join(parts, ", ")
}

func labStopCmd(lo *labOptions) *cobra.Command {
	return &cobra.Command{
		Use: "stop LAB", Short: "take a student's lab down (exactly what reef lab start made)", Args: cobra.ExactArgs(1), SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := lab.Find(lo.root, args[0])
			if err != nil {
				return err
			}
			if lo.student != "" {
				if err := lab.CheckStudent(lo.student); err != nil {
					return err
				}
			}
			return downRun(cmd.Context(), lab.LabName(l, lo.student, false))
		},
	}
}

// labCheckOptions are reef lab check's flags.
type labCheckOptions struct {
	answers, backend, out, all string
	jobs                       int
}

func labCheckCmd(lo *labOptions) *cobra.Command {
	co := &labCheckOptions{}
	c := &cobra.Command{
		Use:   "check LAB | check --all DIR [LAB]",
		Short: "grade a student's answers (or a class's) and write grade.json and grade.html",
		Long: `check lays the student's answers (--answers DIR: the files they changed and
answers.yaml) over the lab's starting files, runs each of the lab's experiments on the
backend with the lab's checks, checks the answers' numbers, and writes grade.json and
grade.html (default DIR/grade): each check with the value measured, the bound, and a
hint when it fails. A check that fails on a run whose fidelity was degraded is shown as
degraded, not graded against the student. On a real backend the runs bring up their
own lab, STUDENT-CODE-c, with its switches in one daemon.

--all DIR grades every sub-directory of DIR (the student is the directory's name, or
the one reef lab start wrote in it) and writes DIR/class.html and class.json.

Exit status: 0 when every check passes (or is degraded), 1 when one fails, 2 on an error.`,
		Args: cobra.RangeArgs(0, 1), SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			if co.all != "" {
				return labCheckAll(cmd.Context(), lo, co, name)
			}
			if name == "" {
				return &exitError{code: 2, err: errors.New("reef lab check LAB: which lab?")}
			}
			return labCheck(cmd.Context(), lo, co, name)
		},
	}
	f := c.Flags()
	f.StringVar(&co.answers, "answers", ".", "the student's directory")
	f.StringVar(&co.backend, "backend", "sim", "backend: sim or netns")
	f.StringVar(&co.out, "out", "", "where the grade goes (default ANSWERS/grade)")
	f.StringVar(&co.all, "all", "", "grade every student's directory under this one")
	f.IntVarP(&co.jobs, "jobs", "j", 1, "sweep points run at once on the sim")
	return c
}

func labCheck(ctx context.Context, lo *labOptions, co *labCheckOptions, name string) error {
	l, err := lab.Find(lo.root, name)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	student := lo.student
	if m, _ := lab.ReadMarker(co.answers); m != nil && student == "" {
		student = m.Student
	}
	out := co.out
	if out == "" {
		out = filepath.Join(co.answers, "grade")
	}
	g, err := lab.Check(ctx, l, lab.CheckOptions{Answers: co.answers, Backend: co.backend, Student: student, Out: out, Jobs: co.jobs})
	if g != nil {
		printGrade(g, out)
	}
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if !g.Pass {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d checks failed; see %s", g.Failed, len(g.Checks), filepath.Join(out, lab.GradeHTML))}
	}
	return nil
}

func printGrade(g *lab.Grade, out string) {
	for _, r := range g.Checks {
		mark := map[string]string{lab.StatusPass: "PASS", lab.StatusFail: "FAIL", lab.StatusDegraded: "DEGRADED"}[r.Status]
		fmt.Printf("%-8s  %-22s %s = %s, bound %s\n", mark, r.Name, r.Check, r.Value, r.Bound)
		if r.Detail != "" {
			fmt.Printf("          %s\n", r.Detail)
		}
		if r.Hint != "" {
			fmt.Printf("          hint: %s\n", r.Hint)
		}
	}
	fmt.Printf("%d passed, %d failed, %d degraded; grade: %s\n", g.Passed, g.Failed, g.Degraded, filepath.Join(out, lab.GradeHTML))
}

func labCheckAll(ctx context.Context, lo *labOptions, co *labCheckOptions, name string) error {
	subs, serr := lab.Submissions(co.all, name)
	var rows []lab.ClassRow
	failed := 0
	for _, s := range subs {
		row := lab.ClassRow{Student: s.Student, Lab: s.Lab, Link: filepath.ToSlash(filepath.Join(filepath.Base(s.Dir), "grade", lab.GradeHTML))}
		l, err := lab.Find(lo.root, s.Lab)
		if err == nil {
			fmt.Printf("== %s (%s)\n", s.Student, s.Lab)
			row.G, err = lab.Check(ctx, l, lab.CheckOptions{Answers: s.Dir, Backend: co.backend, Student: s.Student,
				Out: filepath.Join(s.Dir, "grade"), Jobs: co.jobs})
		}
		if err != nil {
			row.Error = err.Error()
			row.G = nil
		}
		if row.G == nil || !row.G.Pass {
			failed++
		}
		if row.G != nil {
			fmt.Printf("   %d passed, %d failed, %d degraded\n", row.G.Passed, row.G.Failed, row.G.Degraded)
		}
		rows = append(rows, row)
		if ctx.Err() != nil {
			break
		}
	}
	if err := lab.WriteClass(co.all, co.backend, rows); err != nil {
		return &exitError{code: 2, err: err}
	}
	fmt.Printf("class: %s\n", filepath.Join(co.all, "class.html"))
	if serr != nil {
		return &exitError{code: 2, err: serr}
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d submissions have a failing check", failed, len(rows))}
	}
	return nil
}
