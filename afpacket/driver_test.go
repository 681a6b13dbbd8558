package afpacket

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"reef/internal/testenv"
	"reef/switchd"
	"reef/units"
)

// needRoot states the tests' prerequisite (reef/internal/testenv: a skip outside CI, a
// failure in CI).
func needRoot(t *testing.T) { t.Helper(); testenv.RequireRoot(t) }

// inFreshNetns runs fn on a thread moved into a new network namespace. The thread is
// never unlocked, so it dies with its goroutine; sockets fn opens keep the namespace.
func inFreshNetns(t *testing.T, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		// No IPv6 chatter (router solicitations, MLD) on the test's links.
		_ = os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0o644)
		errc <- fn()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// vethPair creates a–b, up, offloads left as they are (raw frames only).
func vethPair(a, b string) error {
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a, MTU: 1500}, PeerName: b}); err != nil {
		return err
	}
	for _, n := range []string{a, b} {
		l, err := netlink.LinkByName(n)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return err
		}
	}
	// Frames sent before the kernel's link watcher has activated a device's queue are
	// dropped; on a busy machine that work item runs late (seen: the first four frames
	// of TestDriverForwardsAtDue lost). Wait until both ends are operationally up.
	for _, n := range []string{a, b} {
		for deadline := time.Now().Add(10 * time.Second); ; {
			l, err := netlink.LinkByName(n)
			if err != nil {
				return err
			}
			if l.Attrs().OperState == netlink.OperUp {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: still %v after 10s", n, l.Attrs().OperState)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return nil
}

// delayNode forwards every frame from port 0 to port 1, due delay after it arrived.
type delayNode struct {
	delay units.Time
	q     []switchd.Out
}

func (n *delayNode) Receive(now units.Time, port int, frame []byte) {
	if port == 0 {
		n.q = append(n.q, switchd.Out{Port: 1, Frame: append([]byte(nil), frame...), Due: now + n.delay})
	}
}

func (n *delayNode) NextDeadline() units.Time {
	if len(n.q) == 0 {
		return units.Never
	}
	return n.q[0].Due
}

func (n *delayNode) Poll(now units.Time) (switchd.Out, bool) {
	if len(n.q) == 0 || n.q[0].Due > now {
		return switchd.Out{}, false
	}
	o := n.q[0]
	n.q = n.q[1:]
	return o, true
}

// rawSocket opens an AF_PACKET socket bound to ifname (all protocols).
func rawSocket(ifname string) (int, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// TestDriverForwardsAtDue sends frames into port 0 of a driver running delayNode and
// checks that each leaves port 1 in order, and not before its due time: the driver
// releases on the node's schedule, stamped from the kernel's arrival time.
//
// With a quantum the frames leave on the quantum's grid, never before it; with the
// ports' namespace given by path the driver, opened from outside it, works the same.
func TestDriverForwardsAtDue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		quantum units.Time
		byPath  bool
	}{
		{"at every deadline", 0, false},
		{"500us quantum", 500 * units.Microsecond, false},
		{"ports in another namespace", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) { forwardsAtDue(t, tc.quantum, tc.byPath) })
	}
}

func forwardsAtDue(t *testing.T, quantum units.Time, byPath bool) {
	needRoot(t)
	const delay = 2 * units.Millisecond
	var (
		drv       *Driver
		inj, sink int
		clock     *Clock
		nsPath    string
	)
	node := &delayNode{delay: delay}
	inFreshNetns(t, func() error {
		for _, p := range [][2]string{{"in0", "p0"}, {"out0", "p1"}} {
			if err := vethPair(p[0], p[1]); err != nil {
				return err
			}
		}
		var err error
		if clock, err = NewClock(MonotonicNow()); err != nil {
			return err
		}
		if byPath {
			// Bind-mount the namespace, as `ip netns add` does, for the driver to
			// open from the test's own namespace below.
			nsPath = filepath.Join(t.TempDir(), "ns")
			if err := os.WriteFile(nsPath, nil, 0o644); err != nil {
				return err
			}
			if err := unix.Mount(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), nsPath, "", unix.MS_BIND, ""); err != nil {
				return err
			}
		} else if drv, err = Open(node, Config{Ports: []string{"p0", "p1"}, Clock: clock, Quantum: quantum}); err != nil {
			return err
		}
		if inj, err = rawSocket("in0"); err != nil {
			return err
		}
		sink, err = rawSocket("out0")
		return err
	})
	if byPath {
		defer unix.Unmount(nsPath, unix.MNT_DETACH)
		var err error
		if _, err = Open(node, Config{Ports: []string{"p0"}, Netns: []string{""}, Clock: clock}); err == nil {
			t.Fatal("opened p0 in the test's own namespace, where it does not exist")
		}
		if drv, err = Open(node, Config{Ports: []string{"p0", "p1"}, Netns: []string{nsPath, nsPath}, Clock: clock}); err != nil {
			t.Fatal(err)
		}
	}
	defer drv.Close()
	defer unix.Close(inj)
	defer unix.Close(sink)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- drv.Run(ctx) }()

	const n = 20
	sent := make([]units.Time, n)
	frame := make([]byte, 60)
	copy(frame[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(frame[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(frame[12:], 0x88b5) // local experimental EtherType
	for i := range n {
		binary.BigEndian.PutUint32(frame[14:], uint32(i))
		sent[i] = clock.Now()
		if _, err := unix.Write(inj, frame); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	_ = unix.SetsockoptTimeval(sink, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
	buf := make([]byte, 2048)
	for i := 0; i < n; {
		m, err := unix.Read(sink, buf)
		if err != nil {
			t.Fatalf("frame %d never left port 1: %v", i, err)
		}
		got := clock.Now()
		if m < 18 || binary.BigEndian.Uint16(buf[12:]) != 0x88b5 {
			continue // the kernel's own chatter on a fresh link
		}
		if seq := int(binary.BigEndian.Uint32(buf[14:])); seq != i {
			t.Fatalf("frame %d: got sequence %d: frames must leave in order", i, seq)
		}
		if early := quantise(sent[i]+delay, quantum) - got; early > 0 {
			t.Errorf("frame %d left %v before it was due (delay %v, quantum %v)", i, early, delay, quantum)
		}
		i++
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	st := drv.Stats()
	if st.Ports[0].RxFrames < n || st.Ports[1].TxFrames != st.Ports[0].RxFrames {
		t.Errorf("counters: rx %d on p0, tx %d on p1; want ≥ %d, equal", st.Ports[0].RxFrames, st.Ports[1].TxFrames, n)
	}
	if st.TimerWakes == 0 {
		t.Error("no timer wakeups: releases must come from the timerfd, not from arrivals")
	}
}

// stuckNode always wants to be polled now and never gives anything: a broken node.
type stuckNode struct{}

func (s *stuckNode) Receive(now units.Time, port int, frame []byte) {}
func (s *stuckNode) NextDeadline() units.Time                       { return 0 }
func (s *stuckNode) Poll(now units.Time) (switchd.Out, bool)        { return switchd.Out{}, false }

// openOnVeth opens a driver for node on one end of a fresh veth pair in a fresh network
// namespace, with cfg's ports and clock set: the lab's epoch lead after now. The driver
// is closed when the test ends.
func openOnVeth(t *testing.T, node Node, lead time.Duration, cfg Config) *Driver {
	t.Helper()
	var drv *Driver
	inFreshNetns(t, func() error {
		if err := vethPair("a0", "a1"); err != nil {
			return err
		}
		clock, err := NewClock(MonotonicNow() + int64(lead))
		if err != nil {
			return err
		}
		cfg.Ports, cfg.Clock = []string{"a1"}, clock
		drv, err = Open(node, cfg)
		return err
	})
	t.Cleanup(func() { drv.Close() })
	return drv
}

// TestDriverBacksOffStuckNode checks that a node whose deadline is always past does not
// make the driver spin: it counts Stalls and waits 1 ms each time.
func TestDriverBacksOffStuckNode(t *testing.T) {
	needRoot(t)
	drv := openOnVeth(t, &stuckNode{}, 0, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = drv.Run(ctx)
	st := drv.Stats()
	if st.Stalls == 0 {
		t.Fatal("no stalls counted for a node that never moves")
	}
	if st.Wakeups > 400 { // 100 ms at one wakeup per ms, with room for a slow machine
		t.Errorf("%d wakeups in 100 ms: the driver spins on a stuck node", st.Wakeups)
	}
}

// TestClockRealtime checks that a kernel-style CLOCK_REALTIME stamp taken now reads as
// the lab's now.
func TestClockRealtime(t *testing.T) {
	c, err := NewClock(MonotonicNow() - int64(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &ts); err != nil {
		t.Fatal(err)
	}
	got, now := c.FromRealtime(uint32(ts.Sec), uint32(ts.Nsec)), c.Now()
	// The offset is measured from paired readings, so it is good to a few µs.
	if d := now - got; d < -50*units.Microsecond || d > units.Millisecond {
		t.Errorf("FromRealtime = %v, Now = %v: want the stamp within [now-1ms, now+50µs]", got, now)
	}
	if now < 5*units.Second {
		t.Errorf("Now = %v, want ≥ 5s after an epoch 5s ago", now)
	}
}

// tickNode wants to be polled every millisecond and, once, is held 5 ms inside Poll, as
// a descheduled daemon would be; it records what the driver reports (Resumer).
type tickNode struct {
	next    units.Time
	held    bool
	resumes [][2]units.Time
}

func (n *tickNode) Receive(now units.Time, port int, frame []byte) {}
func (n *tickNode) NextDeadline() units.Time                       { return n.next }
func (n *tickNode) Poll(now units.Time) (switchd.Out, bool) {
	if now < n.next {
		return switchd.Out{}, false
	}
	if !n.held && now > 20*units.Millisecond {
		n.held = true
		time.Sleep(5 * time.Millisecond)
	}
	n.next = now + units.Millisecond
	return switchd.Out{Port: -1}, true
}
func (n *tickNode) Resumed(from, now units.Time) {
	n.resumes = append(n.resumes, [2]units.Time{from, now})
}

// TestDriverReportsStall checks that a wakeup StallMin or more after the armed deadline
// is counted and reported to a Resumer node, with the deadline it should have run at.
func TestDriverReportsStall(t *testing.T) {
	needRoot(t)
	node := &tickNode{}
	// Until leaves the hold at 20 ms room: a loaded machine (CI runs other packages'
	// tests beside this one) may deschedule the driver past a tighter end before the
	// wakeup that detects the hold, and the run would end unreported.
	drv := openOnVeth(t, node, 0, Config{Until: 500 * units.Millisecond})
	if err := drv.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := drv.Stats()
	if st.Resumes == 0 || len(node.resumes) == 0 {
		t.Fatalf("a 5 ms hold inside Poll was not reported: %d resumes counted, %d reported", st.Resumes, len(node.resumes))
	}
	if st.Resumes != uint64(len(node.resumes)) {
		t.Errorf("%d resumes counted, %d reported to the node", st.Resumes, len(node.resumes))
	}
	var long bool
	for _, r := range node.resumes {
		if r[1]-r[0] < StallMin {
			t.Errorf("resume %v → %v reported, shorter than StallMin", r[0], r[1])
		}
		long = long || r[1]-r[0] >= 3*units.Millisecond
	}
	if !long {
		t.Errorf("no reported stall of the 5 ms hold (≥ 3 ms past the deadline): %v", node.resumes)
	}
}

// TestDriverWaitsForEpoch checks that a driver started a second before its lab's epoch
// sleeps until the epoch without counting that wait as a late wakeup or a stall (it did:
// the timer was set to the epoch but remembered at the tick before it).
func TestDriverWaitsForEpoch(t *testing.T) {
	needRoot(t)
	node := &tickNode{held: true}
	drv := openOnVeth(t, node, time.Second, Config{Until: 10 * units.Millisecond,
		Tick: units.Millisecond, OnTick: func(units.Time, *Stats) {}})
	if err := drv.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A slow machine may stall the driver, but not for the second it waited.
	if st := drv.Stats(); st.WakeLateMax >= 500*units.Millisecond || st.ResumedTime >= 500*units.Millisecond {
		t.Errorf("wakeup late by %v, %v resumed: the wait for the epoch counted as lateness", st.WakeLateMax, st.ResumedTime)
	}
}

// earlyNode ticks every millisecond and, as a switch may, reports a deadline 100 µs
// early until it is polled there or later (NextDeadline may be early, never late).
type earlyNode struct {
	next  units.Time
	exact bool
	ticks int
}

func (n *earlyNode) Receive(now units.Time, port int, frame []byte) {}
func (n *earlyNode) NextDeadline() units.Time {
	if n.exact {
		return n.next
	}
	return n.next - 100*units.Microsecond
}
func (n *earlyNode) Poll(now units.Time) (switchd.Out, bool) {
	if now < n.next {
		n.exact = n.exact || now >= n.next-100*units.Microsecond
		return switchd.Out{}, false
	}
	n.next, n.exact = now+units.Millisecond, false
	n.ticks++
	return switchd.Out{Port: -1}, true
}

// TestDriverSpinIsNoStall checks that with Spin, polling a node at its early deadline,
// where nothing is due yet, is not taken for a stuck node (it was: after a wakeup Spin
// early the exact deadline, less Spin, looked past, and the driver backed off 1 ms).
func TestDriverSpinIsNoStall(t *testing.T) {
	needRoot(t)
	node := &earlyNode{next: units.Millisecond}
	drv := openOnVeth(t, node, 0, Config{Spin: 200 * units.Microsecond, Until: 30 * units.Millisecond})
	if err := drv.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := drv.Stats(); st.Stalls != 0 {
		t.Errorf("%d stalls counted for a node polled at its deadlines with Spin (%d ticks)", st.Stalls, node.ticks)
	}
}

// A port whose set-up fails once its socket is open (here its ring: slots larger than
// the kernel allows) returns the error and closes the socket; it used to dereference
// the nil port its failing return had just set.
func TestOpenPortFailsCleanly(t *testing.T) {
	needRoot(t)
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := fds()
	p, err := OpenPort("lo", PortOptions{MTU: 1 << 30})
	if err == nil {
		p.Close()
		t.Fatal("opened lo with 1 GB slots")
	}
	if !strings.Contains(err.Error(), "PACKET_RX_RING") {
		t.Errorf("error %q does not say which step failed", err)
	}
	if after := fds(); after != before {
		t.Errorf("%d open files after the failure, %d before: the socket leaked", after, before)
	}
}
