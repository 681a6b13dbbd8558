package netns

import (
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
	"time"

	"golang.org/x/sys/unix"

	"reef/capture"
	"reef/switchd"
	"reef/switchd/shard"
)

// Target is what a capture listens on: a node of a lab and one of its interfaces
// ("" = every interface in the node's namespace).
type Target struct {
	Node, Iface string
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
	if ns.Switch && port != "" {
		if sh, ok := inMemoryPort(st, node, port); ok {
			switches := 0
			for _, n := range st.Namespaces {
				if n.Switch {
					switches++
				}
			}
			return Target{}, fmt.Errorf("netns: capture %q: %s:%s is a link inside %s, carried in memory by its daemon; "+
				"capture it in a lab with a daemon per switch (reef up/run --shards %d), or capture a host", s, node, port, sh, switches)
		}
	}
	return Target{Node: node, Iface: port}, nil
}

// inMemoryPort reports whether port of switch node is an in-memory link of its shard,
// and which shard.
func inMemoryPort(st *State, node, port string) (string, bool) {
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
					if e.Switch == node && e.Port < len(sc.Ports) && sc.Ports[e.Port].Name == port {
						return sh.Name, true
					}
				}
			}
		}
	}
	return "", false
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
// carried. Frames the socket had to drop are logged (slog).
func Capture(ctx context.Context, lab string, t Target, w io.Writer) (int, error) {
	fd, err := openNamed(NSName(lab, t.Node))
	if err != nil {
		return 0, fmt.Errorf("netns: capture %s: %w", t.Node, err)
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
		return 0, fmt.Errorf("netns: capture %s:%s: %w", t.Node, t.Iface, err)
	}
	defer unix.Close(sock)
	tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(sock, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return 0, fmt.Errorf("netns: capture: %w", err)
	}
	// The daemons run under SCHED_FIFO and may leave this goroutine no CPU for a while:
	// the socket must hold what arrives meanwhile. SO_RCVBUFFORCE (root) goes past
	// net.core.rmem_max.
	if unix.SetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, captureBuffer) != nil {
		_ = unix.SetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_RCVBUF, captureBuffer)
	}
	name := t.Iface
	if name == "" {
		name = "any"
	}
	pw, err := capture.NewWriter(w, t.Node+":"+name)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 65536)
	n := 0
	flags := 0
	var drainEnd time.Time
	for {
		if flags == 0 && ctx.Err() != nil {
			// Stopped: write what the socket still holds (within a second, should the
			// lab keep sending), then stop.
			flags, drainEnd = unix.MSG_DONTWAIT, time.Now().Add(time.Second)
		}
		if flags != 0 && time.Now().After(drainEnd) {
			break
		}
		m, _, err := unix.Recvfrom(sock, buf, flags)
		if errors.Is(err, unix.EAGAIN) && flags != 0 {
			break
		}
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, errors.Join(fmt.Errorf("netns: capture: %w", err), pw.Close())
		}
		if err := pw.WriteFrame(time.Now(), buf[:m]); err != nil {
			return n, errors.Join(err, pw.Close())
		}
		n++
	}
	if st, err := unix.GetsockoptTpacketStats(sock, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil && st.Drops > 0 {
		slog.Warn("capture missed frames: the socket's buffer overflowed", "node", t.Node, "iface", name, "written", n, "dropped", st.Drops)
	}
	return n, pw.Close()
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
	started := make(chan struct{})
	go func() {
		defer close(c.done)
		close(started)
		_, c.err = Capture(cctx, lab.Name, t, f)
		c.err = errors.Join(c.err, f.Close())
	}()
	<-started
	return c, nil
}
