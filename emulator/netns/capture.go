package netns

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"reef/afpacket"
	"reef/capture"
	"reef/switchd"
	"reef/switchd/shard"
	"reef/switchd/tapsock"
)

// Target is what a capture listens on: a node of a lab and one of its interfaces
// ("" = every interface in the node's namespace), and the switch ports its shard
// carries in memory, whose frames the shard's daemon streams (switchd/tapsock).
type Target struct {
	Node, Iface string
	// InMemory are the target's in-memory ports: the port Iface names when it is one
	// (then nothing is captured on an interface), or every in-memory port of a
	// switch captured whole.
	InMemory []MemPort
}

// MemPort is a switch port carried in memory by the daemon of Shard.
type MemPort struct {
	Shard string
	Port  int
	Name  string
}

// ParseTarget parses NODE or NODE:PORT of lab, where PORT is an interface name ("p1",
// "eth0") or a switch port index. A bare host name means its one interface; a bare
// switch name every interface of the switch.
func ParseTarget(lab, s string) (Target, error) {
	node, port, _ := strings.Cut(s, ":")
	if node == "" {
		return Target{}, fmt.Errorf("netns: capture %q: want NODE or NODE:PORT", s)
	}
	st, err := ReadState(DefaultRunDir, lab)
	if err != nil {
		return Target{}, err
	}
	var ns *NodeNS
	for i := range st.Namespaces {
		if st.Namespaces[i].Node == node {
			ns = &st.Namespaces[i]
		}
	}
	if ns == nil {
		return Target{}, fmt.Errorf("netns: capture %q: lab %q has no node %q", s, lab, node)
	}
	if port == "" && !ns.Switch {
		port = "eth0"
		if ifs, err := nsInterfaces(ns.NS); err == nil {
			for _, n := range ifs {
				if n != "lo" {
					port = n
					break
				}
			}
		}
	}
	if i, err := strconv.Atoi(port); err == nil && ns.Switch {
		var cfg switchd.Config
		b, err := os.ReadFile(filepath.Join(DefaultRunDir, lab, node+".json"))
		if err == nil {
			err = json.Unmarshal(b, &cfg)
		}
		if err != nil {
			return Target{}, fmt.Errorf("netns: capture %q: switch config: %w", s, err)
		}
		if i < 0 || i >= len(cfg.Ports) {
			return Target{}, fmt.Errorf("netns: capture %q: switch %s has ports 0..%d", s, node, len(cfg.Ports)-1)
		}
		port = cfg.Ports[i].Name
	}
	t := Target{Node: node, Iface: port}
	if ns.Switch {
		for _, m := range inMemoryPorts(st, node) {
			if port == "" || m.Name == port {
				t.InMemory = append(t.InMemory, m)
			}
		}
	}
	return t, nil
}

// inMemoryPorts lists the ports of switch node that its shard carries in memory.
func inMemoryPorts(st *State, node string) []MemPort {
	var ms []MemPort
	for _, sh := range st.Shards {
		var cfg shard.Config
		b, err := os.ReadFile(filepath.Join(DefaultRunDir, st.Lab, sh.Name+".shard.json"))
		if err != nil || json.Unmarshal(b, &cfg) != nil {
			continue
		}
		for _, sc := range cfg.Switches {
			if sc.Name != node {
				continue
			}
			for _, l := range cfg.Links {
				for _, e := range []shard.End{l.A, l.B} {
					if e.Switch == node && e.Port < len(sc.Ports) {
						ms = append(ms, MemPort{Shard: sh.Name, Port: e.Port, Name: sc.Ports[e.Port].Name})
					}
				}
			}
		}
	}
	return ms
}

func nsInterfaces(ns string) ([]string, error) {
	fd, err := openNamed(ns)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var names []string
	err = inNetns(fd, func() error {
		ifs, err := net.Interfaces()
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		return err
	})
	return names, err
}

// Capture writes every frame seen on t in lab (both directions) to w as pcapng until
// ctx is done (then what the socket still holds), and returns how many it wrote. A
// daemon that sends with PACKET_QDISC_BYPASS (switchd, hostd) bypasses the taps, so its
// own transmissions show only on the far end of the link: capture a host to see what
// its switch sent it (data with INT at a receiver, ACKs at a sender). Frames are written
// whole, release trailer included (afpacket): a capture shows the Due each frame
// carried. Frames the socket had to drop are logged (slog). A port its shard carries in
// memory has no interface: the shard's daemon streams its frames instead, both
// directions, stamped with each frame's Due and carrying a trailer as on a veth; a
// whole switch's capture holds its interfaces and its in-memory ports, in time order.
func Capture(ctx context.Context, lab string, t Target, w io.Writer) (int, error) {
	return captureReady(ctx, lab, t, w, func() {})
}

// captureReady is Capture calling ready once every source of the capture listens (or
// has failed to).
func captureReady(ctx context.Context, lab string, t Target, w io.Writer, ready func()) (int, error) {
	name := t.Iface
	if name == "" {
		name = "any"
	}
	pw, err := capture.NewWriter(w, t.Node+":"+name)
	if err != nil {
		ready()
		return 0, err
	}
	ifaces := t.Iface == "" || len(t.InMemory) == 0
	sources := len(t.InMemory)
	if ifaces {
		sources++
	}
	sink := &frameSink{w: pw, reorder: sources > 1}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var listening sync.WaitGroup
	listening.Add(len(t.InMemory))
	if ifaces {
		listening.Add(1)
	}
	go func() {
		listening.Wait()
		ready()
	}()
	errs := make([]error, len(t.InMemory)+1)
	var wg sync.WaitGroup
	for i, m := range t.InMemory {
		wg.Go(func() {
			var once sync.Once
			up := func() { once.Do(listening.Done) }
			defer up()
			errs[i] = captureInMemory(ctx, lab, t.Node, m, sink, up)
			// A stream that ended before the capture did failed, or its daemon stopped
			// (the lab went down): either way the capture is over.
			cancel()
		})
	}
	if ifaces {
		var once sync.Once
		up := func() { once.Do(listening.Done) }
		errs[len(t.InMemory)] = captureIfaces(ctx, lab, t, sink, up)
		up()
		if errs[len(t.InMemory)] != nil {
			cancel()
		}
	}
	wg.Wait()
	return sink.n, errors.Join(append(errs, sink.close(), pw.Close())...)
}

// frameSink is one capture's pcapng stream, shared by its sources. With more than one
// source (a switch's veths and its in-memory ports) it writes frames in time order:
// the sources deliver late by different amounts (a packet socket at once, a shard's
// stream every millisecond), so it holds each frame until reorderWindow of wall time
// has passed its stamp, then writes what is due in order (a frame later than that is
// written as it comes).
type frameSink struct {
	mu      sync.Mutex
	w       *capture.Writer
	n       int
	reorder bool
	held    heldFrames
}

// reorderWindow is how long a multi-source capture holds frames to sort them.
const reorderWindow = 20 * time.Millisecond

type heldFrame struct {
	at    time.Time
	seq   int
	frame []byte
}

// heldFrames is a min-heap of frames by stamp (then by arrival).
type heldFrames []heldFrame

func (h heldFrames) Len() int { return len(h) }
func (h heldFrames) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h heldFrames) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldFrames) Push(x any)   { *h = append(*h, x.(heldFrame)) }
func (h *heldFrames) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (s *frameSink) write(at time.Time, frame []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if !s.reorder {
		return s.w.WriteFrame(at, frame)
	}
	heap.Push(&s.held, heldFrame{at: at, seq: s.n, frame: append([]byte(nil), frame...)})
	return s.flushLocked(time.Now().Add(-reorderWindow))
}

// flushLocked writes the held frames stamped before until, in order.
func (s *frameSink) flushLocked(until time.Time) error {
	for len(s.held) > 0 && s.held[0].at.Before(until) {
		f := heap.Pop(&s.held).(heldFrame)
		if err := s.w.WriteFrame(f.at, f.frame); err != nil {
			return err
		}
	}
	return nil
}

// close writes every frame still held.
func (s *frameSink) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked(time.Unix(1<<62, 0)) // after any frame's stamp
}

// captureIfaces captures t's interface (every interface of its namespace when Iface is
// empty) with a packet socket into sink until ctx is done, calling ready once the
// socket listens.
func captureIfaces(ctx context.Context, lab string, t Target, sink *frameSink, ready func()) error {
	fd, err := openNamed(NSName(lab, t.Node))
	if err != nil {
		return fmt.Errorf("netns: capture %s: %w", t.Node, err)
	}
	defer unix.Close(fd)
	var sock int
	err = inNetns(fd, func() error {
		ifindex := 0
		if t.Iface != "" {
			ifc, err := net.InterfaceByName(t.Iface)
			if err != nil {
				return fmt.Errorf("interface %s: %w", t.Iface, err)
			}
			ifindex = ifc.Index
		}
		s, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		if err := unix.Bind(s, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
			unix.Close(s)
			return fmt.Errorf("bind: %w", err)
		}
		sock = s
		return nil
	})
	if err != nil {
		return fmt.Errorf("netns: capture %s:%s: %w", t.Node, t.Iface, err)
	}
	defer unix.Close(sock)
	tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(sock, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("netns: capture: %w", err)
	}
	// The daemons run under SCHED_FIFO and may leave this goroutine no CPU for a while:
	// the socket must hold what arrives meanwhile. SO_RCVBUFFORCE (root) goes past
	// net.core.rmem_max.
	if unix.SetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, captureBuffer) != nil {
		_ = unix.SetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_RCVBUF, captureBuffer)
	}
	ready()
	name := t.Iface
	if name == "" {
		name = "any"
	}
	// Frames are stamped with the kernel's receive time, not this goroutine's: under
	// the daemons' real-time load it reads them late, and a capture that also holds
	// in-memory frames (stamped with their Due) would run out of order.
	_ = afpacket.StampReceives(sock)
	oob := make([]byte, afpacket.StampSpace)
	buf := make([]byte, 65536)
	n := 0
	flags := 0
	var drainEnd time.Time
	nsPath, nextCheck := filepath.Join(NetnsDir, NSName(lab, t.Node)), time.Now().Add(time.Second)
	for {
		if flags == 0 && time.Now().After(nextCheck) {
			// The lab went down (reef down): its namespaces are gone, and nothing more
			// will come.
			if _, err := os.Stat(nsPath); errors.Is(err, os.ErrNotExist) {
				slog.Info("capture ends: the node's namespace is gone (the lab went down)", "node", t.Node)
				flags, drainEnd = unix.MSG_DONTWAIT, time.Now().Add(time.Second)
			}
			nextCheck = time.Now().Add(time.Second)
		}
		if flags == 0 && ctx.Err() != nil {
			// Stopped: write what the socket still holds (within a second, should the
			// lab keep sending), then stop.
			flags, drainEnd = unix.MSG_DONTWAIT, time.Now().Add(time.Second)
		}
		if flags != 0 && time.Now().After(drainEnd) {
			break
		}
		m, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, flags)
		if errors.Is(err, unix.EAGAIN) && flags != 0 {
			break
		}
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ENETDOWN) {
			// The interface went away (reef down): the capture is over, not failed.
			slog.Info("capture ends: the interface went down", "node", t.Node, "iface", name)
			break
		}
		if err != nil {
			return fmt.Errorf("netns: capture: %w", err)
		}
		at, ok := afpacket.ReceiveStamp(oob[:oobn])
		if !ok {
			at = time.Now()
		}
		if err := sink.write(at, buf[:m]); err != nil {
			return err
		}
		n++
	}
	if st, err := unix.GetsockoptTpacketStats(sock, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil && st.Drops > 0 {
		slog.Warn("capture missed frames: the socket's buffer overflowed", "node", t.Node, "iface", name, "written", n, "dropped", st.Drops)
	}
	return nil
}

// captureInMemory captures port m of switch node, which m.Shard's daemon carries in
// memory, into sink until ctx is done, calling ready once the daemon's tap is attached: the daemon streams the port's frames from its
// tap socket (switchd/tapsock), each stamped with the time it crossed and carrying the
// trailer a veth hop would carry.
func captureInMemory(ctx context.Context, lab, node string, m MemPort, sink *frameSink, ready func()) error {
	st, err := tapsock.Dial(ctx, TapSocket(filepath.Join(DefaultRunDir, lab), m.Shard), node, m.Port)
	if err != nil {
		return fmt.Errorf("netns: capture %s:%s (in memory in %s): %w", node, m.Name, m.Shard, err)
	}
	ready()
	n := 0
	dropped, err := st.Run(ctx, func(r tapsock.Record) error {
		n++
		return sink.write(time.Unix(0, r.Time), r.Frame)
	})
	if dropped > 0 {
		slog.Warn("capture missed frames: the switch daemon's capture ring was full", "node", node, "port", m.Name, "written", n, "dropped", dropped)
	}
	if err != nil {
		return fmt.Errorf("netns: capture %s:%s (in memory in %s): %w", node, m.Name, m.Shard, err)
	}
	return nil
}

// TapSocket is where the daemon of shard serves captures of its in-memory links, in
// the lab's directory labDir.
func TapSocket(labDir, shard string) string {
	return filepath.Join(labDir, shard+".tap.sock")
}

// captureBuffer is the capture socket's receive buffer (the kernel doubles it): about
// 25 000 full-size frames, a second of a 300 Mbit/s link.
const captureBuffer = 32 << 20

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// captureProc is a capture running during a run.
type captureProc struct {
	target string
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func (c *captureProc) stop() error {
	c.cancel()
	<-c.done
	return c.err
}

// startCapture starts capturing target ("NODE" or "NODE:PORT") of lab into the run's
// results directory.
func (r *runState) startCapture(ctx context.Context, lab *Lab, target string) (*captureProc, error) {
	t, err := ParseTarget(lab.Name, target)
	if err != nil {
		return nil, err
	}
	file := t.Node
	if t.Iface != "" {
		file += "-" + t.Iface
	}
	f, err := os.Create(filepath.Join(r.out, file+".pcapng"))
	if err != nil {
		return nil, fmt.Errorf("netns: capture: %w", err)
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &captureProc{target: target, cancel: cancel, done: make(chan struct{})}
	listening := make(chan struct{})
	go func() {
		defer close(c.done)
		_, c.err = captureReady(cctx, lab.Name, t, f, func() { close(listening) })
		c.err = errors.Join(c.err, f.Close())
	}()
	<-listening // the run's first frame is captured
	return c, nil
}
