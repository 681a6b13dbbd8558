package netns

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"reef/internal/cpuset"
)

func TestPlaceCPUs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shards  int
		allowed []int
		want    [][]int // each shard's CPUs
		hosts   []int
	}{
		{"one shard on two CPUs", 1, []int{0, 1}, [][]int{{1}}, []int{0}},
		{"two shards on four CPUs", 2, []int{0, 1, 2, 3}, [][]int{{3}, {2}}, []int{0, 1}},
		{"a taskset's CPUs", 1, []int{2, 5, 7}, [][]int{{7}}, []int{2, 5}},
		{"as many shards as CPUs", 2, []int{0, 1}, [][]int{nil, nil}, nil},
		{"one CPU", 1, []int{0}, [][]int{nil}, nil},
		{"no switches", 0, []int{0, 1}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var shards []Shard
			for k := range tc.shards {
				shards = append(shards, Shard{Name: fmt.Sprintf("shard%d", k+1)})
			}
			hosts := placeCPUs(shards, tc.allowed)
			if !reflect.DeepEqual(hosts, tc.hosts) {
				t.Errorf("hosts on %v, want %v", hosts, tc.hosts)
			}
			for k, s := range shards {
				if !reflect.DeepEqual(s.CPUs, tc.want[k]) {
					t.Errorf("%s on %v, want %v", s.Name, s.CPUs, tc.want[k])
				}
			}
		})
	}
}

func TestDescribeCPUs(t *testing.T) {
	st := &State{Shards: []Shard{{Name: "shard1", CPUs: []int{3}}, {Name: "shard2", CPUs: []int{2}}}, HostCPUs: []int{0, 1}}
	if got, want := DescribeCPUs(st), "shard1 on CPU 3; shard2 on CPU 2; hosts on CPUs 0-1"; got != want {
		t.Errorf("DescribeCPUs = %q, want %q", got, want)
	}
	if got := DescribeCPUs(&State{Shards: []Shard{{Name: "shard1"}}}); got != "" {
		t.Errorf("an unplaced lab is described as %q", got)
	}
}

// A lab alone on the machine gives its shard a CPU of its own and its hosts the rest:
// the switch daemon, what exec starts in a host and the kernel's receive work for the
// host's interface each run where the lab's state says. A second lab up beside it, and
// a lab asked to, leave their daemons to the scheduler.
func TestCPUPlacementOnNetns(t *testing.T) {
	needRoot(t)
	allowed, err := cpuset.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Fatalf("placement needs 2 CPUs; this process may use %v", allowed)
	}
	ctx := context.Background()
	first := up(t, planFor(t, chainTopo, labName("cpu")), Options{Shards: 1})
	st := first.State
	if len(st.Shards) != 1 || len(st.Shards[0].CPUs) != 1 || len(st.HostCPUs) != len(allowed)-1 {
		t.Fatalf("placed %+v, hosts on %v; want one shard on a CPU of its own, the hosts on the other %d", st.Shards, st.HostCPUs, len(allowed)-1)
	}
	daemon := st.Daemons[0].Pid
	if got, want := threadCPUs(t, daemon), cpuset.List(st.Shards[0].CPUs); !slices.Contains(got, want) {
		t.Errorf("switchd's threads run on CPUs %v, want its datapath thread on %s", got, want)
	}
	out, err := run(ctx, first, "h1", "sh", "-c", "grep Cpus_allowed_list /proc/self/status; cat /sys/class/net/eth0/queues/rx-0/rps_cpus")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Fields(out)
	if len(lines) != 3 || lines[1] != cpuset.List(st.HostCPUs) {
		t.Errorf("a program in h1 runs on %q, want CPUs %s", out, cpuset.List(st.HostCPUs))
	}
	if len(lines) == 3 && strings.TrimLeft(strings.ReplaceAll(lines[2], ",", ""), "0") != strings.TrimLeft(strings.ReplaceAll(cpuset.Mask(st.HostCPUs), ",", ""), "0") {
		t.Errorf("h1's eth0 steers its receive work to CPUs %s, want mask %s", lines[2], cpuset.Mask(st.HostCPUs))
	}
	if got := DescribeCPUs(&st); !strings.Contains(got, "shard1 on CPU ") || !strings.Contains(got, "hosts on CPU") {
		t.Errorf("DescribeCPUs = %q", got)
	}

	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"beside another lab", Options{Shards: 1}},
		{"asked to", Options{Shards: 1, Unplaced: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.o.Unplaced {
				if err := Down(ctx, first.Name); err != nil { // alone on the machine
					t.Fatal(err)
				}
			}
			lab := up(t, planFor(t, chainTopo, labName("cpu")), tc.o)
			if len(lab.State.HostCPUs) != 0 || len(lab.State.Shards[0].CPUs) != 0 {
				t.Fatalf("placed %+v, hosts on %v", lab.State.Shards, lab.State.HostCPUs)
			}
			for _, got := range threadCPUs(t, lab.State.Daemons[0].Pid) {
				if got != cpuset.List(allowed) {
					t.Errorf("a switchd thread runs on CPUs %s, want all of %s", got, cpuset.List(allowed))
				}
			}
			out, err := run(ctx, lab, "h1", "grep", "Cpus_allowed_list", "/proc/self/status")
			if f := strings.Fields(out); err != nil || len(f) != 2 || f[1] != cpuset.List(allowed) {
				t.Errorf("a program in h1 runs on %q (%v), want all of %s", out, err, cpuset.List(allowed))
			}
		})
	}
}

// threadCPUs reads where each thread of process pid may run (Cpus_allowed_list).
func threadCPUs(t *testing.T, pid int) []string {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, cpusAllowed(t, fmt.Sprintf("/proc/%d/task/%s/status", pid, e.Name())))
	}
	return out
}

// cpusAllowed reads the Cpus_allowed_list line of a /proc status file.
func cpusAllowed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no Cpus_allowed_list", path)
	return ""
}
