package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"reef/internal/testenv"
)

// TestMain lets the crash test run Up in a child process it can kill -9: with
// REEF_DOCKER_TEST_UP=<lab> the test binary brings that lab up and then blocks.
func TestMain(m *testing.M) {
	if lab := os.Getenv("REEF_DOCKER_TEST_UP"); lab != "" {
		t := &testing.T{}
		_, err := Up(context.Background(), planFor(t, lab, "1Gbps"), Options{})
		fmt.Fprintln(os.Stderr, "child up returned:", err)
		select {}
	}
	os.Exit(m.Run())
}

// bystanders creates a container from a reef image and a veth pair, neither of any
// lab; the returned check fails the test if either is gone, and removes them.
func bystanders(t *testing.T) (check func()) {
	t.Helper()
	c, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ok, err := c.ImageExists(ctx, HostdImage); err != nil || !ok {
		if _, err := BuildImages(ctx, c, ImageOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	name := labName("keep")
	cfg := &ContainerConfig{Image: HostdImage, Labels: map[string]string{"reef.test": "bystander"},
		HostConfig: HostConfig{NetworkMode: "none"}}
	id, err := c.Create(ctx, name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, id); err != nil {
		c.Remove(ctx, id)
		t.Fatal(err)
	}
	veth := labName("kp")
	if out, err := exec.Command("ip", "link", "add", veth+"a", "type", "veth", "peer", "name", veth+"b").CombinedOutput(); err != nil {
		c.Remove(ctx, id)
		t.Fatalf("ip link add: %v\n%s", err, out)
	}
	return func() {
		t.Helper()
		defer c.Remove(ctx, id)
		defer exec.Command("ip", "link", "del", veth+"a").Run()
		if st, err := c.Inspect(ctx, id); err != nil || !st.State.Running {
			t.Errorf("unrelated container %s did not survive: %v", name, err)
		}
		if err := exec.Command("ip", "link", "show", veth+"b").Run(); err != nil {
			t.Errorf("unrelated veth %sb did not survive: %v", veth, err)
		}
	}
}

// TestDownAfterKilledUp kills the controller (kill -9) while Up is creating the lab's
// containers, then checks Down removes every container, namespace mount and veth of the
// lab, and nothing else.
func TestDownAfterKilledUp(t *testing.T) {
	testenv.RequireDocker(t)
	check := bystanders(t)
	defer check()
	lab := labName("dkk")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "REEF_DOCKER_TEST_UP="+lab)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c, _ := NewClient()
	// Kill once a few containers exist (some running, the lab not finished).
	deadline := time.Now().Add(60 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		l, err := c.List(context.Background(), LabelLab+"="+lab)
		if err == nil && len(l) >= 3 {
			n = len(l)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if n == 0 {
		t.Fatalf("the child made no containers in 60s; its stderr:\n%s", stderr.String())
	}
	st, _ := os.ReadFile(filepath.Join("/run/reef", lab, "state.json"))
	ready := strings.Contains(string(st), `"ready": true`)
	t.Logf("killed the controller with %d containers of lab %s up (lab ready: %v)", n, lab, ready)
	if err := Down(context.Background(), lab); err != nil {
		t.Fatal(err)
	}
	assertGone(t, lab)
}

// TestUserImageIperf3 builds an image that is not reef's (Debian's iperf3 and the shared
// libraries it links, copied from the machine), puts it on two hosts and checks iperf3
// TCP between them crosses two switches at the configured rate.
func TestUserImageIperf3(t *testing.T) {
	testenv.RequireDocker(t)
	bin := testenv.RequireProgram(t, "iperf3")
	c, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	const img = "reeftest/iperf3:dev"
	if err := importWithLibs(context.Background(), c, img, bin); err != nil {
		t.Fatal(err)
	}
	name := labName("dki")
	const rate = 100e6
	lab := up(t, planFor(t, name, "100Mbps"), Options{Images: map[string]string{"h1": img, "h3": img}})
	h3 := lab.Plan.Hosts[2].Config.Addr.String()
	// The best of up to three 4 s runs: on a 2-core machine shared with other work one
	// run can measure the machine rather than the fabric. Every run must stay under the
	// configured rate (the fabric shapes), the best must come close to it.
	best := 0.0
	for attempt := 1; attempt <= 3 && best < 0.88*rate; attempt++ {
		got := iperf3Once(t, lab.Name, h3)
		t.Logf("iperf3 h1→h3 (image %s) across s1, s2, run %d: %.1f Mbit/s of %.0f configured (%.1f%%)", img, attempt, got/1e6, rate/1e6, 100*got/rate)
		if got > 1.02*rate {
			t.Errorf("iperf3 got %.1f Mbit/s, above the configured %.0f", got/1e6, rate/1e6)
		}
		best = max(best, got)
	}
	// TCP goodput over 1500 B frames is at most 94.9% of the line rate (headers). On an
	// idle machine the best run reaches 0.88–0.95 of the rate; the bound only catches a
	// broken path (netns labs measure the same on the same loaded machine: 53–91%).
	if best < 0.5*rate {
		t.Errorf("iperf3 best of 3: %.1f Mbit/s, want about %.0f", best/1e6, rate/1e6)
	}
}

// iperf3Once runs an iperf3 server on h3 and a 4 s TCP client on h1 (both the image's
// iperf3, inside their containers) and returns the received rate in bit/s.
func iperf3Once(t *testing.T, lab, h3 string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := run(ctx, lab, "h3", "iperf3", "-s", "-1", "-D"); err != nil {
		t.Fatalf("iperf3 server: %v\n%s", err, out)
	}
	time.Sleep(300 * time.Millisecond)
	// At nice -10, as the netns shaping tests: on a 2-core machine shared with other
	// work, a sender at nice 0 measures the machine, not the fabric.
	cmd, err := Command(ctx, lab, "h1", "/usr/bin/iperf3", "-c", h3, "-t", "4", "-O", "1", "-J")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Args = append([]string{"nice", "-n", "-10"}, cmd.Args...)
	if cmd.Path, err = exec.LookPath("nice"); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("iperf3 client: %v\n%s", err, out)
	}
	var res struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("iperf3 output: %v\n%s", err, out)
	}
	return res.End.SumReceived.BitsPerSecond
}

// importWithLibs imports an image holding bin and every shared library ldd lists for it.
func importWithLibs(ctx context.Context, c *Client, ref, bin string) error {
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return fmt.Errorf("ldd %s: %w", bin, err)
	}
	fs := Rootfs{Files: map[string][]byte{}, Symlinks: map[string]string{}}
	add := func(p string) error {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(real)
		if err != nil {
			return err
		}
		fs.Files[p] = b
		return nil
	}
	if err := add(bin); err != nil {
		return err
	}
	fs.Files["/usr/bin/iperf3"] = fs.Files[bin]
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for _, w := range f {
			if strings.HasPrefix(w, "/") {
				if err := add(w); err != nil {
					return err
				}
			}
		}
	}
	fs.Files["/etc/hosts"] = []byte("127.0.0.1 localhost\n")
	var buf bytes.Buffer
	if err := fs.Tar(&buf); err != nil {
		return err
	}
	return c.ImportImage(ctx, &buf, ref, []string{`ENTRYPOINT ["/usr/bin/iperf3", "-s"]`})
}
