package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCgroups stands in a directory for /sys/fs/cgroup with the hierarchies named.
func fakeCgroups(t *testing.T, hiers ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, h := range hiers {
		if err := os.MkdirAll(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "cpu", "cpu.rt_period_us"), []byte("1000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "cpu", "cpu.cfs_period_us"), []byte("100000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := CgroupRoot
	CgroupRoot = root
	t.Cleanup(func() { CgroupRoot = old })
	return root
}

// Bound writes each limit into the lab's own group of its hierarchy and moves the
// daemons there; Unbound removes the groups.
func TestBound(t *testing.T) {
	root := fakeCgroups(t, "cpu", "memory", "pids")
	if err := Bound("ada-qe", []int{41, 42}, Limits{CPU: 0.3, Memory: 512e6, Pids: 64}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"cpu/reef-lab-ada-qe/cpu.rt_runtime_us":        "300000",
		"memory/reef-lab-ada-qe/memory.limit_in_bytes": "512000000",
		"pids/reef-lab-ada-qe/pids.max":                "64",
		"pids/reef-lab-ada-qe/cgroup.procs":            "42", // the stand-in keeps the last write
	}
	for f, v := range want {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != v {
			t.Errorf("%s = %q, want %q", f, b, v)
		}
	}
	if q, err := os.ReadFile(filepath.Join(root, "cpu/reef-lab-ada-qe/cpu.cfs_quota_us")); err != nil || string(q) == "" || strings.HasPrefix(string(q), "-") {
		t.Errorf("cfs quota %q, %v", q, err)
	}
	if err := Unbound("ada-qe"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"cpu", "memory", "pids"} {
		if _, err := os.Stat(filepath.Join(root, h, CgroupName("ada-qe"))); err == nil {
			t.Errorf("%s group left after Unbound", h)
		}
	}
	if err := Unbound("never-bounded"); err != nil {
		t.Errorf("unbounding a lab without groups: %v", err)
	}
}

// A bound that cannot be set up leaves nothing behind; zero limits bound nothing.
func TestBoundFailsCleanly(t *testing.T) {
	root := fakeCgroups(t, "cpu") // no memory hierarchy
	err := Bound("bob-in", []int{7}, Limits{CPU: 0.3, Memory: 1e9})
	if err == nil {
		t.Fatal("bounding memory without its hierarchy succeeded")
	}
	if _, err := os.Stat(filepath.Join(root, "cpu", CgroupName("bob-in"))); err == nil {
		t.Error("the cpu group was left after the failure")
	}
	if err := Bound("bob-in", []int{7}, Limits{}); err != nil {
		t.Errorf("no limits: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "cpu", CgroupName("bob-in"))); err == nil {
		t.Error("no limits made a group")
	}
}

func TestCountCPUs(t *testing.T) {
	for list, want := range map[string]int{"0": 1, "0-1": 2, "0-3,6": 5, "": 1, "0-1,x": 2} {
		if got := countCPUs(list); got != want {
			t.Errorf("countCPUs(%q) = %d, want %d", list, got, want)
		}
	}
}
