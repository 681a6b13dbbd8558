package docker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"reef/emulator/netns"
	"reef/emulator/plan"
	"reef/internal/cpuset"
	"reef/internal/testenv"
	"reef/internal/testlab"
)

// three hosts on two switches.
const smallTopo = `name: %s
defaults: {rate: %s, delay: 10us, buffer: 200KB, mtu: 1500}
nodes:
  - {name: h1, kind: host}
  - {name: h2, kind: host}
  - {name: h3, kind: host}
  - {name: s1, kind: switch}
  - {name: s2, kind: switch}
links:
  - [h1, s1]
  - [h2, s1]
  - [s1, s2]
  - [h3, s2]
`

func labName(prefix string) string { return testlab.Name(prefix) }

func planFor(t testing.TB, lab, rate string) *plan.Plan {
	t.Helper()
	return testlab.Plan(t, lab, fmt.Sprintf(smallTopo, lab, rate))
}

func up(t testing.TB, p *plan.Plan, o Options) *netns.Lab {
	t.Helper()
	testenv.RequireDocker(t)
	t0 := time.Now()
	lab, err := Up(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lab %s up on docker in %v", lab.Name, time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() {
		if IsLab(lab.Name) {
			if err := Down(context.Background(), lab.Name); err != nil {
				t.Errorf("down: %v", err)
			}
		}
	})
	return lab
}

func run(ctx context.Context, lab, node string, argv ...string) (string, error) {
	var out bytes.Buffer
	err := Exec(ctx, lab, node, argv, netns.Stdio{Out: &out, Err: &out})
	return out.String(), err
}

// assertGone fails t if anything of lab is left: containers, namespace mounts, veths
// (their names appear in no namespace of the machine), the lab directory.
func assertGone(t *testing.T, lab string) {
	t.Helper()
	c, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	var left []ContainerSummary
	for range 50 { // namespaces and containers go asynchronously
		if left, err = c.List(context.Background(), LabelLab+"="+lab); err == nil && len(left) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("lab %s: %d containers left", lab, len(left))
	}
	if m, _ := filepath.Glob(filepath.Join(netns.NetnsDir, "reef-"+lab+"-*")); len(m) > 0 {
		t.Errorf("lab %s: namespace mounts left: %v", lab, m)
	}
	if _, err := os.Stat(filepath.Join(netns.DefaultRunDir, lab)); err == nil {
		t.Errorf("lab %s: directory left", lab)
	}
	if m, _ := filepath.Glob(filepath.Join(netns.DefaultEtcDir, "reef-"+lab+"-*")); len(m) > 0 {
		t.Errorf("lab %s: /etc/netns dirs left: %v", lab, m)
	}
}

func TestUpPingDown(t *testing.T) {
	testenv.RequireDocker(t)
	name := labName("dk")
	lab := up(t, planFor(t, name, "1Gbps"), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// ping is the machine's (reef/hostd:dev has none), run in h1's container namespace.
	out, err := run(ctx, lab.Name, "h1", "ping", "-c", "3", "-i", "0.2", "-W", "2", "h3")
	if err != nil {
		t.Fatalf("ping h1→h3: %v\n%s", err, out)
	}
	if !strings.Contains(out, " 0% packet loss") {
		t.Errorf("ping h1→h3 lost packets:\n%s", out)
	}
	st, err := netns.ReadState(netns.DefaultRunDir, lab.Name)
	if err != nil || !st.Ready || len(st.Daemons) != 2 {
		t.Fatalf("state: %+v %v", st, err)
	}
	assertPlaced(t, ctx, st)
	if err := Down(context.Background(), lab.Name); err != nil {
		t.Fatal(err)
	}
	assertGone(t, lab.Name)
}

// assertPlaced checks that a lab alone on the machine runs its shard on a CPU of its
// own and its hosts on the rest, as netns labs do: the switch daemon, the host
// containers (their cpuset), a program exec starts in a host (the machine's or the
// image's), and the host interface's receive work.
func assertPlaced(t *testing.T, ctx context.Context, st *netns.State) {
	t.Helper()
	if len(st.HostCPUs) == 0 || len(st.Shards) != 1 || len(st.Shards[0].CPUs) != 1 {
		t.Fatalf("placed %+v, hosts on %v; want the shard on a CPU of its own, the hosts on the rest", st.Shards, st.HostCPUs)
	}
	hosts, shard := cpuset.List(st.HostCPUs), cpuset.List(st.Shards[0].CPUs)
	bound := false
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", st.Daemons[0].Pid))
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		bound = bound || err == nil && strings.Contains(string(b), "Cpus_allowed_list:\t"+shard+"\n")
	}
	if !bound {
		t.Errorf("no thread of switchd is bound to CPU %s", shard)
	}
	c, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	in, err := c.Inspect(ctx, ContainerName(st.Lab, "h1"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", in.State.Pid)); err != nil || !strings.Contains(string(b), "Cpus_allowed_list:\t"+hosts+"\n") {
		t.Errorf("h1's container is not on CPUs %s (%v)", hosts, err)
	}
	for _, prog := range []string{"grep", "/reef/reefpause"} { // the machine's, the image's
		argv := []string{"grep", "Cpus_allowed_list", "/proc/self/status"}
		if prog != "grep" {
			argv = []string{"/reef/reefpause", "--version"}
		}
		cmd, err := Command(ctx, st.Lab, "h1", argv...)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.Index(cmd.Args, "taskset"); i < 0 || i+2 >= len(cmd.Args) || cmd.Args[i+2] != hosts {
			t.Errorf("exec %s in h1 runs %v, not on the hosts' CPUs %s", prog, cmd.Args, hosts)
		}
	}
	out, err := run(ctx, st.Lab, "h1", "cat", "/sys/class/net/eth0/queues/rx-0/rps_cpus")
	if err != nil || strings.TrimLeft(strings.TrimSpace(out), "0") == "" {
		t.Errorf("h1's eth0 steers no receive work (rps_cpus %q, %v)", out, err)
	}
}

// TestToolsImage builds reef/tools:dev (a static busybox from the machine) and runs a
// busybox shell and ping inside a host container, resolving a lab host by name.
func TestToolsImage(t *testing.T) {
	testenv.RequireDocker(t)
	if b, err := os.ReadFile(BusyboxPath); err != nil || !isStatic(b) {
		testenv.RequireProgram(t, "busybox-static-is-not-installed") // skips, or fails in CI
	}
	c, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildImages(context.Background(), c, ImageOptions{Tools: true}); err != nil {
		t.Fatal(err)
	}
	lab := up(t, planFor(t, labName("dkt"), "1Gbps"), Options{HostImage: ToolsImage})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := run(ctx, lab.Name, "h1", "sh", "-c", "readlink /bin/ping && ping -c 2 -W 2 h3")
	if err != nil {
		t.Fatalf("busybox in h1: %v\n%s", err, out)
	}
	if !strings.Contains(out, "busybox") || !strings.Contains(out, " 0% packet loss") {
		t.Errorf("want busybox's ping from inside the container, 0%% loss; got:\n%s", out)
	}
}
