package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Limits bound what one student's lab may take of a machine a class shares. A zero
// field leaves that resource unbounded.
type Limits struct {
	// CPU is the share of each CPU the lab's processes may use: their real-time budget
	// (the daemons run SCHED_FIFO; cgroup v1 cpu.rt_runtime_us over cpu.rt_period_us)
	// and as much CFS quota for their other threads. The kernel refuses a budget that
	// would take the labs' sum past the machine's real-time limit (95% of each CPU),
	// which caps how many bounded labs one machine holds.
	CPU float64
	// Memory is the most memory the lab's processes may hold, in bytes.
	Memory int64
	// Pids is the most processes and threads the lab may have.
	Pids int
}

// CgroupRoot is where the cgroup v1 hierarchies (cpu, memory, pids) are mounted.
var CgroupRoot = "/sys/fs/cgroup"

// CgroupName is lab's own cgroup in each hierarchy ("reef-lab-alice-qe").
func CgroupName(lab string) string { return "reef-lab-" + lab }

// group is one hierarchy's cgroup and the values to write in it, in order.
type group struct {
	hier  string
	files [][2]string
}

func (l Limits) groups() ([]group, error) {
	var gs []group
	if l.CPU > 0 {
		period, err := readInt(filepath.Join(CgroupRoot, "cpu", "cpu.rt_period_us"))
		if err != nil {
			return nil, fmt.Errorf("lab: a CPU bound needs cgroup v1's cpu controller with real-time group scheduling: %w", err)
		}
		cfs, err := readInt(filepath.Join(CgroupRoot, "cpu", "cpu.cfs_period_us"))
		if err != nil {
			return nil, fmt.Errorf("lab: a CPU bound needs cgroup v1's cpu controller: %w", err)
		}
		ncpu := 1
		if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
			ncpu = countCPUs(strings.TrimSpace(string(b)))
		}
		gs = append(gs, group{"cpu", [][2]string{
			{"cpu.rt_runtime_us", strconv.FormatInt(int64(l.CPU*float64(period)), 10)},
			{"cpu.cfs_quota_us", strconv.FormatInt(int64(l.CPU*float64(cfs)*float64(ncpu)), 10)},
		}})
	}
	if l.Memory > 0 {
		// charge what the daemons already hold to the lab when they move in (best
		// effort: kernels that deprecated it refuse the write)
		gs = append(gs, group{"memory", [][2]string{{"memory.move_charge_at_immigrate", "3"},
			{"memory.limit_in_bytes", strconv.FormatInt(l.Memory, 10)}}})
	}
	if l.Pids > 0 {
		gs = append(gs, group{"pids", [][2]string{{"pids.max", strconv.Itoa(l.Pids)}}})
	}
	return gs, nil
}

// optional are the control files whose write may fail without failing the bound.
var optional = map[string]bool{"memory.move_charge_at_immigrate": true}

// Bound creates lab's cgroups with the limits l and moves pids (the lab's daemons)
// into them; programs reef exec starts in the lab join them too (Join). On an error it
// removes what it made.
func Bound(lab string, pids []int, l Limits) (err error) {
	gs, err := l.groups()
	if err != nil {
		return err
	}
	var made []string
	defer func() {
		if err != nil {
			for i := len(made) - 1; i >= 0; i-- {
				_ = os.RemoveAll(made[i]) // rmdir on cgroupfs; a test's stand-in holds files
			}
		}
	}()
	for _, g := range gs {
		dir := filepath.Join(CgroupRoot, g.hier, CgroupName(lab))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("lab: bounding %s: %w", lab, err)
		}
		made = append(made, dir)
		for _, f := range g.files {
			if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644); err != nil {
				if optional[f[0]] {
					continue
				}
				if g.hier == "cpu" && f[0] == "cpu.rt_runtime_us" {
					return fmt.Errorf("lab: bounding %s to %g of each CPU: the machine's real-time budget is spent (other labs hold it; a smaller --cpu or fewer labs): %w", lab, l.CPU, err)
				}
				return fmt.Errorf("lab: bounding %s: %s: %w", lab, f[0], err)
			}
		}
		for _, pid := range pids {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
				return fmt.Errorf("lab: bounding %s: moving process %d into %s: %w", lab, pid, dir, err)
			}
		}
	}
	return nil
}

// Join moves the calling process into lab's cgroups, where they exist, so that what it
// starts next (reef exec's program) is bounded with the lab. It reports whether the lab
// is bounded at all.
func Join(lab string) (bool, error) {
	joined := false
	for _, h := range []string{"cpu", "memory", "pids"} {
		dir := filepath.Join(CgroupRoot, h, CgroupName(lab))
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return joined, fmt.Errorf("lab: joining %s's cgroup %s: %w", lab, dir, err)
		}
		joined = true
	}
	return joined, nil
}

// Unbound removes lab's cgroups (its processes must be gone: reef down first). A lab
// that was never bounded has none, which is no error. A cgroup is a directory only
// rmdir removes, and only once no process is left in it: one that still has some is
// named with them.
func Unbound(lab string) error {
	var errs []error
	for _, h := range []string{"cpu", "memory", "pids"} {
		dir := filepath.Join(CgroupRoot, h, CgroupName(lab))
		err := syscall.Rmdir(dir)
		if errors.Is(err, syscall.ENOTEMPTY) { // a plain directory (a test's stand-in), not a cgroup
			err = os.RemoveAll(dir)
		}
		switch {
		case err == nil || errors.Is(err, fs.ErrNotExist):
		case errors.Is(err, syscall.EBUSY):
			procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			errs = append(errs, fmt.Errorf("lab: removing %s: processes of the lab are still in it (%s): a program reef exec started there is still running?",
				dir, strings.Join(strings.Fields(string(procs)), " ")))
		default:
			errs = append(errs, fmt.Errorf("lab: removing %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// countCPUs counts the CPUs in a list such as "0-3,6".
func countCPUs(list string) int {
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, ok := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if ok {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		n += b - a + 1
	}
	return max(n, 1)
}
