package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// three hosts on two switches.
const smallTopo = `name: %s
defaults: {rate: 1Gbps, delay: 10us, buffer: 100KB, mtu: 1500}
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

// bystanders creates a namespace and a veth pair that belong to no lab; the returned
// check fails the test if either is gone, and removes them.
func bystanders(t *testing.T) (check func()) {
	t.Helper()
	ns := labName("keep")
	veth := labName("kp")
	for _, argv := range [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "link", "add", veth + "a", "type", "veth", "peer", "name", veth + "b"},
	} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	return func() {
		t.Helper()
		defer exec.Command("ip", "netns", "del", ns).Run()
		defer exec.Command("ip", "link", "del", veth+"a").Run()
		if _, err := os.Stat(filepath.Join(NetnsDir, ns)); err != nil {
			t.Errorf("unrelated namespace %s did not survive: %v", ns, err)
		}
		if err := exec.Command("ip", "link", "show", veth+"b").Run(); err != nil {
			t.Errorf("unrelated veth %sb did not survive: %v", veth, err)
		}
	}
}

// assertGone checks that nothing of lab is left: namespaces, /etc/netns dirs, the state
// directory and the daemons.
func assertGone(t *testing.T, lab string, pids []int) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(NetnsDir, "reef-"+lab+"-*"))
	if len(left) > 0 {
		t.Errorf("namespaces left: %v", left)
	}
	etc, _ := filepath.Glob(filepath.Join(DefaultEtcDir, "reef-"+lab+"-*"))
	if len(etc) > 0 {
		t.Errorf("/etc/netns dirs left: %v", etc)
	}
	if _, err := os.Stat(filepath.Join(DefaultRunDir, lab)); err == nil {
		t.Errorf("state dir %s left", filepath.Join(DefaultRunDir, lab))
	}
	for _, pid := range pids {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(b), ") Z ") {
			t.Errorf("daemon %d still running", pid)
		}
	}
}

func TestLifecyclePingKillDown(t *testing.T) {
	needRoot(t)
	needTool(t, "ping")
	check := bystanders(t)
	name := labName("lc")
	p := planFor(t, smallTopo, name)
	lab := up(t, p, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Every host reaches every other, by name (the lab's /etc/hosts).
	for _, a := range p.Hosts {
		for _, b := range p.Hosts {
			if a.Config.Name == b.Config.Name {
				continue
			}
			if out, err := run(ctx, lab, a.Config.Name, "ping", "-c", "1", "-W", "2", b.Config.Name); err != nil {
				t.Errorf("%s → %s: %v\n%s", a.Config.Name, b.Config.Name, err, out)
			}
		}
	}
	if infos, err := List(); err != nil {
		t.Fatal(err)
	} else if want := len(lab.Partition.Shards); !containsLab(infos, name, want) {
		t.Errorf("List() = %+v, want %s with %d live switch daemons (one per shard)", infos, name, want)
	}

	// Offloads are off on a host end and a switch end.
	for _, n := range []string{"h1:eth0", "s1:p1"} {
		node, ifc, _ := strings.Cut(n, ":")
		out, err := run(ctx, lab, node, "ethtool", "-k", ifc)
		if err != nil {
			t.Logf("ethtool -k: %v", err)
			continue
		}
		for _, f := range []string{"tcp-segmentation-offload: off", "generic-segmentation-offload: off",
			"generic-receive-offload: off", "tx-checksumming: off", "rx-vlan-offload: off", "tx-vlan-offload: off"} {
			if !strings.Contains(out, f) {
				t.Errorf("%s: want %q in ethtool -k", n, f)
			}
		}
	}

	// A daemon dies hard; down still removes everything, and only the lab's things.
	var pids []int
	for _, d := range lab.State.Daemons {
		pids = append(pids, d.Pid)
	}
	if err := unix.Kill(pids[0], unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := Down(ctx, name); err != nil {
		t.Fatal(err)
	}
	t.Logf("down in %v", time.Since(t0).Round(time.Millisecond))
	assertGone(t, name, pids)
	check()
}

func containsLab(infos []LabInfo, name string, alive int) bool {
	for _, l := range infos {
		if l.Name == name && l.Ready && l.Alive == alive {
			return true
		}
	}
	return false
}

// A failed Up leaves nothing behind: here every switchd exits at once.
func TestFailedUpLeavesNothing(t *testing.T) {
	needRoot(t)
	check := bystanders(t)
	name := labName("fu")
	p := planFor(t, smallTopo, name)
	_, err := Up(context.Background(), p, Options{Switchd: "/bin/false", ReadyTimeout: 5 * time.Second})
	if err == nil {
		t.Fatal("Up with a switchd that exits succeeded")
	}
	t.Logf("Up failed as it should: %v", err)
	assertGone(t, name, nil)
	check()
}

// Up killed halfway: the intent log names more than was created; Down removes what
// exists, including a process left in a namespace, and nothing else.
func TestDownAfterKilledUp(t *testing.T) {
	needRoot(t)
	check := bystanders(t)
	name := labName("ku")
	dir := filepath.Join(DefaultRunDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ensureNetnsDir(); err != nil {
		t.Fatal(err)
	}
	st := State{Lab: name, Created: time.Now()}
	for _, n := range []string{"h1", "h2", "s1"} {
		st.Namespaces = append(st.Namespaces, NodeNS{Node: n, NS: NSName(name, n), Switch: n == "s1"})
		st.EtcDirs = append(st.EtcDirs, filepath.Join(DefaultEtcDir, NSName(name, n)))
	}
	if err := writeJSON(filepath.Join(dir, "state.json"), &st); err != nil {
		t.Fatal(err)
	}
	// "Crash" after two of three namespaces, one /etc dir and one process.
	var hs []*nsHandle
	for _, n := range st.Namespaces[:2] {
		h, err := createNamed(n.NS, nil)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if err := os.MkdirAll(st.EtcDirs[0], 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "60")
	if err := inNetns(hs[0].fd, sleeper.Start); err != nil {
		t.Fatal(err)
	}
	go sleeper.Wait()
	for _, h := range hs {
		h.close()
	}
	if err := Down(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	assertGone(t, name, []int{sleeper.Process.Pid})
	check()
}

func TestDownUnknownLab(t *testing.T) {
	err := Down(context.Background(), "no-such-lab-x")
	if err == nil || !strings.Contains(err.Error(), "no lab") {
		t.Fatalf("Down(unknown) = %v, want a 'no lab' error", err)
	}
	if _, err := Command(context.Background(), "no-such-lab-x", "h1", "true"); err == nil {
		t.Fatal("Command on an unknown lab succeeded")
	}
	var e *exec.ExitError
	_ = errors.As(err, &e)
}
