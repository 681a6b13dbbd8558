package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"reef/internal/testenv"
	"reef/switchd/shard"
	"reef/wire"
)

var soakFor = flag.Duration("soak", 15*time.Second, "how long TestSoak watches each daemon after its warm-up")

// soakStatsInterval is the daemon's --stats-interval in TestSoak: a thousand stats
// intervals a second, so a test of seconds covers what a lab left up at the default
// 1 s goes through in hours.
const soakStatsInterval = time.Millisecond

// TestSoak runs the real switchd of a dumbbell's switch on veths in a fresh network
// namespace, rewriting its stats file every millisecond, idle and with traffic flowing
// through it, and checks that its memory stays flat: the daemon runs with the GC off,
// so whatever it allocates periodically it keeps. It checks the resident anonymous
// memory the kernel reports over the run, and the allocations the daemon counts
// itself (its exit line's run_mallocs). Before the stats path stopped allocating, the
// daemon grew by 1.2 GB a minute here (145 allocations, 33 KB, a stats interval).
//
// A longer run: go test -run TestSoak -timeout 30m ./cmd/switchd -args -soak 10m
func TestSoak(t *testing.T) {
	testenv.RequireRoot(t)
	watch := *soakFor
	if testenv.Short() {
		watch = min(watch, 5*time.Second)
	}
	bin := buildSwitchd(t)
	tests := []struct {
		name    string
		traffic bool
	}{
		{"idle", false},
		{"traffic", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { soak(t, bin, tt.traffic, watch) })
	}
}

// buildSwitchd builds this package's daemon for the test.
func buildSwitchd(t *testing.T) string {
	t.Helper()
	gobin := testenv.RequireProgram(t, "go")
	bin := filepath.Join(t.TempDir(), "switchd")
	out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build switchd: %v\n%s", err, out)
	}
	return bin
}

// daemon is a switchd started by soak in its own network namespace.
type daemon struct {
	cmd     *exec.Cmd
	stderr  string
	blast   int    // a raw socket on h1's end of its link
	frame   []byte // a reef data frame from h1 to h2
	dir     string
	release chan struct{} // lets the namespace's thread go
}

// soak starts bin, lets it warm up, watches its memory for watch (with traffic when
// traffic is set), stops it and checks what it allocated.
func soak(t *testing.T, bin string, traffic bool, watch time.Duration) {
	d := startDaemon(t, bin)
	stop := make(chan struct{})
	sent := make(chan uint64, 1)
	if traffic {
		go func() { sent <- blast(d, stop) }()
	} else {
		sent <- 0
	}
	time.Sleep(3 * time.Second) // warm-up: the rings, the buffers, the runtime's own
	base := rssAnon(t, d.cmd.Process.Pid)
	peak, start := base, time.Now()
	for time.Since(start) < watch {
		time.Sleep(500 * time.Millisecond)
		peak = max(peak, rssAnon(t, d.cmd.Process.Pid))
	}
	close(stop)
	frames := <-sent
	elapsed := time.Since(start)
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Wait(); err != nil {
		log, _ := os.ReadFile(d.stderr)
		t.Fatalf("switchd: %v\n%s", err, log)
	}
	mallocs := downField(t, d.stderr, "run_mallocs")
	allocBytes := downField(t, d.stderr, "run_alloc_bytes")
	ticks := uint64(elapsed / soakStatsInterval)
	growth := float64(peak-base) / 1024 // MB
	perMin := growth / elapsed.Minutes()
	t.Logf("%v after a 3 s warm-up: anonymous RSS %d → peak %d KB (%+.2f MB, %.2f MB/min); run_mallocs %d, run_alloc_bytes %d (≥ %d stats intervals); %d frames sent",
		elapsed.Round(time.Second), base, peak, growth, perMin, mallocs, allocBytes, ticks, frames)
	if growth > 2 {
		t.Errorf("anonymous RSS grew by %.2f MB in %v, want < 2 MB", growth, elapsed.Round(time.Second))
	}
	// The run's one-offs (the signal, the exit) allocate a little; a stats interval
	// nothing.
	if mallocs > 1000 {
		t.Errorf("the run allocated %d objects (%d B) over ~%d stats intervals, want none per interval", mallocs, allocBytes, ticks)
	}
	var r shard.Report
	b, err := os.ReadFile(filepath.Join(d.dir, "s1.stats.json"))
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		t.Fatalf("stats file: %v", err)
	}
	if !r.Final || r.Driver.Wakeups == 0 {
		t.Errorf("stats file: final %v, %d wakeups; want the final report of a running daemon", r.Final, r.Driver.Wakeups)
	}
	var rx uint64
	for _, p := range r.Ports {
		rx += p.RxPackets
	}
	if traffic && rx < frames/2 {
		t.Errorf("the switch received %d frames of the %d sent", rx, frames)
	}
}

// startDaemon starts bin as the first switch of dumbbellPlan, its ports on veths in a fresh network namespace
// (the far ends left there, h1's with a raw socket to send on), its stats rewritten
// every soakStatsInterval. The daemon is killed, and the namespace let go, when t ends.
func startDaemon(t *testing.T, bin string) *daemon {
	t.Helper()
	p := dumbbellPlan(t)
	cfg := p.Switches[0].Config
	if cfg.Name != "s1" {
		t.Fatalf("the dumbbell's first switch is %s, want s1", cfg.Name)
	}
	h1, _ := p.HostByName("h1")
	h2, _ := p.HostByName("h2")
	h1Port := -1
	for j, port := range cfg.Ports {
		if strings.HasPrefix(port.Peer, "h1:") {
			h1Port = j
		}
	}
	if h1Port < 0 {
		t.Fatal("s1 has no port to h1")
	}
	h := wire.Header{Type: wire.TypeData, FlowID: 7, Seq: 1}
	h.PayloadLen = uint16(1000 - wire.ReefOffset - h.Len())
	frame := make([]byte, 1000)
	n, err := wire.BuildFrame(frame, wire.Addrs{SrcMAC: h1.Config.MAC, DstMAC: h1.Config.GatewayMAC,
		Src: h1.Config.Addr, Dst: h2.Config.Addr, SrcPort: 40000}, wire.ECT0, &h)
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{dir: t.TempDir(), frame: frame[:n], release: make(chan struct{}), blast: -1}
	d.stderr = filepath.Join(d.dir, "switchd.log")
	conf := filepath.Join(d.dir, "s1.json")
	b, _ := json.Marshal(&cfg)
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		// The thread stays in the namespace, locked, until the test ends; then it
		// exits with the goroutine (never reused). The daemon's Pdeathsig is its.
		runtime.LockOSThread()
		errc <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
				return err
			}
			_ = os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0o644)
			for j, port := range cfg.Ports {
				far := "t" + strconv.Itoa(j)
				if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port.Name, MTU: 1500}, PeerName: far}); err != nil {
					return fmt.Errorf("veth %s: %w", port.Name, err)
				}
				for _, name := range []string{port.Name, far} {
					l, err := netlink.LinkByName(name)
					if err == nil {
						err = netlink.LinkSetUp(l)
					}
					if err != nil {
						return fmt.Errorf("%s up: %w", name, err)
					}
				}
			}
			var err error
			if d.blast, err = rawSocket("t" + strconv.Itoa(h1Port)); err != nil {
				return err
			}
			log, err := os.Create(d.stderr)
			if err != nil {
				return err
			}
			defer log.Close()
			d.cmd = exec.Command(bin, "--config", conf, "--stats", filepath.Join(d.dir, "{node}.stats.json"),
				"--stats-interval", soakStatsInterval.String(), "--rt-priority", "0", "--nice", "0")
			d.cmd.Stderr = log
			d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			return d.cmd.Start()
		}()
		<-d.release
	}()
	t.Cleanup(func() {
		if d.cmd != nil && d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
			_ = d.cmd.Wait()
		}
		if d.blast >= 0 {
			unix.Close(d.blast)
		}
		close(d.release)
	})
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// Up once its stats file appears.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(d.dir, "s1.stats.json")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(d.stderr)
			t.Fatalf("switchd wrote no stats in 10 s\n%s", log)
		}
	}
	return d
}

// rawSocket opens an AF_PACKET socket bound to ifname, to send frames on.
func rawSocket(ifname string) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("raw socket: %w", err)
	}
	ifi, err := net.InterfaceByName(ifname)
	if err == nil {
		err = unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index})
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind %s: %w", ifname, err)
	}
	return fd, nil
}

// blast sends d's frame from h1 to h2 through the switch, 20 every millisecond
// (160 Mbit/s), until stop is closed, and returns how many it sent.
func blast(d *daemon, stop chan struct{}) uint64 {
	var n uint64
	for {
		select {
		case <-stop:
			return n
		default:
		}
		for range 20 {
			if _, err := unix.Write(d.blast, d.frame); err == nil {
				n++
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// rssAnon is the resident anonymous memory of process pid, in KB: the Go heap and
// stacks, not the mapped binary or rings.
func rssAnon(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("/proc/%d/status: RssAnon %q", pid, v)
			}
			return kb
		}
	}
	t.Fatalf("/proc/%d/status: no RssAnon", pid)
	return 0
}

// downField reads a counter of the daemon's exit line ("switchd down") from its log.
func downField(t *testing.T, log, key string) uint64 {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.Contains(line, []byte(`msg="switchd down"`)) {
			continue
		}
		if m := regexp.MustCompile(` ` + key + `=(\d+)`).FindSubmatch(line); m != nil {
			v, _ := strconv.ParseUint(string(m[1]), 10, 64)
			return v
		}
	}
	t.Fatalf("no %s in switchd's exit line:\n%s", key, b)
	return 0
}
