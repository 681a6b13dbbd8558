package netns

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"reef/afpacket"
	"reef/emulator/plan"
	"reef/units"
	"reef/wire"
)

// chainTopo is h1 – s1 – s2 – s3 – h2 with (practically) no rate limit: 1 Tbit/s links,
// no propagation delay, deep buffers.
const chainTopo = `name: %s
defaults: {rate: 1000Gbps, delay: 0us, buffer: 10MB, mtu: 1500}
nodes:
  - {name: h1, kind: host}
  - {name: h2, kind: host}
  - {name: s1, kind: switch}
  - {name: s2, kind: switch}
  - {name: s3, kind: switch}
links:
  - [h1, s1]
  - [s1, s2]
  - [s2, s3]
  - [s3, h2]
`

// BenchmarkForwarding blasts UDP frames from h1 through three switches to h2 and
// reports the packet rates delivered: by reef with the three switches in one shard
// (one daemon, the two links between them in memory), by reef with a daemon per switch
// (every link a veth), and by the kernel's own IPv4 forwarding through the same
// namespaces; with the ratios of the first two to the kernel's, and each daemon
// layout's CPU time per delivered frame. Frames are counted as they reach h2's
// interface (its rx counter); h2's MAC is changed so the frames stop there
// (PACKET_OTHERHOST) and nothing answers.
func BenchmarkForwarding(b *testing.B) {
	needRoot(b)
	for _, size := range []int{64, 1514} {
		b.Run(fmt.Sprintf("frame=%dB", size), func(b *testing.B) {
			shard, shardCPU := forwardingRate(b, size, 1, false)
			perSwitch, perSwitchCPU := forwardingRate(b, size, 3, false)
			kernel, _ := forwardingRate(b, size, 3, true)
			b.ReportMetric(shard, "shard-pps")
			b.ReportMetric(perSwitch, "per-switch-pps")
			b.ReportMetric(kernel, "kernel-pps")
			if kernel > 0 {
				b.ReportMetric(shard/kernel, "shard/kernel")
				b.ReportMetric(perSwitch/kernel, "per-switch/kernel")
			}
			// CPU per frame: the shard's for three switches and two in-memory hops,
			// the per-switch daemons' for three switches and two veth hops between them.
			b.ReportMetric(shardCPU, "shard-cpu-ns/frame")
			b.ReportMetric(perSwitchCPU, "per-switch-cpu-ns/frame")
		})
	}
}

// forwardingRate brings the chain up with its switches in shards (the kernel
// forwarding instead when kernel is set), blasts frames of size bytes from h1 for a
// second and returns the frames per second that reached h2 and the switch daemons' CPU
// time per delivered frame.
func forwardingRate(b *testing.B, size, shards int, kernel bool) (pps, cpuPerFrame float64) {
	name := labName("bf")
	p := planFor(b, chainTopo, name)
	// Busy polling: a forwarding benchmark wants batches, not a wakeup per frame.
	lab := up(b, p, Options{Shards: shards, SwitchdArgs: []string{"--busy-poll", "50us"}})
	defer func() {
		if err := Down(context.Background(), lab.Name); err != nil {
			b.Error(err)
		}
	}()
	const blast = time.Second
	h1, err := openNS(lab.NS("h1"))
	if err != nil {
		b.Fatal(err)
	}
	defer h1.close()
	h2, err := openNS(lab.NS("h2"))
	if err != nil {
		b.Fatal(err)
	}
	defer h2.close()
	eth0, err := h2.nl.LinkByName("eth0")
	if err != nil {
		b.Fatal(err)
	}
	if err := h2.nl.LinkSetHardwareAddr(eth0, net.HardwareAddr{0x02, 0xbe, 0xef, 0, 0, 1}); err != nil {
		b.Fatal(err)
	}
	// The switches share CPU 1; the blaster has CPU 0 (the kernel's forwarding runs on
	// the blaster's CPU, inside its sends).
	pids := map[int]bool{}
	for _, d := range lab.State.Daemons {
		pids[d.Pid] = true
		pinProcess(d.Pid, 1)
	}
	what := fmt.Sprintf("switchd in %d shards", len(lab.Partition.Shards))
	if kernel {
		if err := kernelForwarding(lab); err != nil {
			b.Fatal(err)
		}
		what, pids = "kernel", nil
	}
	cpu0 := processCPU(pids)
	sent, got := blastAndCount(b, h1, h2, blastFrame(p, size), blast)
	cpu := processCPU(pids) - cpu0
	pps = float64(got) / blast.Seconds()
	if got > 0 {
		cpuPerFrame = float64(cpu) / float64(got)
	}
	b.Logf("%s: offered %.0f pps, delivered %.0f pps, %.0f ns of daemon CPU per frame", what, float64(sent)/blast.Seconds(), pps, cpuPerFrame)
	if !kernel {
		_ = unix.Kill(lab.State.Daemons[0].Pid, unix.SIGTERM) // final stats
		time.Sleep(100 * time.Millisecond)
		for _, sw := range []string{"s1", "s2", "s3"} {
			if raw, err := os.ReadFile(lab.StatsPath(sw)); err == nil {
				b.Logf("%s: %s", sw, summarize(raw))
			}
		}
	}
	return pps, cpuPerFrame
}

// processCPU is the CPU time (user and system, ns) the processes have used so far.
func processCPU(pids map[int]bool) int64 {
	var total int64
	for pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: state is 3rd; utime 14th, stime 15th.
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += (u + st) * int64(time.Second) / clockTicks
	}
	return total
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on Linux).
const clockTicks = 100

// openNS opens a lab namespace with a netlink handle and an ethtool socket.
func openNS(name string) (*nsHandle, error) {
	fd, err := openNamed(name)
	if err != nil {
		return nil, err
	}
	h := &nsHandle{name: name, fd: fd}
	if h.nl, err = netlink.NewHandleAt(vnetns.NsHandle(fd)); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// blastFrame builds an Ethernet/IPv4/UDP frame of size bytes from h1 to h2.
func blastFrame(p *plan.Plan, size int) []byte {
	h1, _ := p.HostByName("h1")
	h2, _ := p.HostByName("h2")
	f := make([]byte, size)
	copy(f[0:6], h1.Config.GatewayMAC[:])
	copy(f[6:12], h1.Config.MAC[:])
	binary.BigEndian.PutUint16(f[12:], wire.EtherTypeIPv4)
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
	ip[8], ip[9] = 64, unix.IPPROTO_UDP
	a, b := h1.Config.Addr.As4(), h2.Config.Addr.As4()
	copy(ip[12:16], a[:])
	copy(ip[16:20], b[:])
	binary.BigEndian.PutUint16(ip[10:], wire.IPv4Checksum(ip))
	udp := f[34:42]
	binary.BigEndian.PutUint16(udp[0:], 9)
	binary.BigEndian.PutUint16(udp[2:], 9)
	binary.BigEndian.PutUint16(udp[4:], uint16(size-34))
	return f
}

// blastAndCount sends frame on h1's eth0 as fast as one thread can for d, in batches of
// afpacket.BatchSize with one sendmmsg(2) each (the daemons' own TX path), and returns
// how many it sent and how many reached h2's eth0 meanwhile (plus 50 ms to drain).
func blastAndCount(b *testing.B, h1, h2 *nsHandle, frame []byte, d time.Duration) (sent, got uint64) {
	b.Helper()
	port, err := afpacket.OpenPortIn(filepath.Join(NetnsDir, h1.name), "eth0", afpacket.PortOptions{MTU: 1500, QdiscBypass: true})
	if err != nil {
		b.Fatal(err)
	}
	defer port.Close()
	rx := func() uint64 {
		l, err := h2.nl.LinkByName("eth0")
		if err != nil {
			b.Fatal(err)
		}
		return l.Attrs().Statistics.RxPackets
	}
	before := rx()
	done := make(chan struct{})
	go func() {
		// One locked thread on CPU 0 under SCHED_FIFO, so the offered load does not
		// depend on what else the machine runs.
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var cpu0 unix.CPUSet
		cpu0.Set(0)
		_ = unix.SchedSetaffinity(0, &cpu0)
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 20}
		_ = unix.SchedSetAttr(0, &attr, 0)
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			for range afpacket.BatchSize {
				port.Queue(frame, 0) // a Due the switch rejects: it takes the kernel's stamp
			}
			port.Flush()
		}
		attr.Policy, attr.Priority = 0, 0 // SCHED_OTHER
		_ = unix.SchedSetAttr(0, &attr, 0)
	}()
	<-done
	time.Sleep(50 * time.Millisecond)
	return port.Stats().TxFrames, rx() - before
}

// kernelForwarding stops the lab's switch daemons and makes the kernel forward h1 → h2
// instead: ip_forward on, the planner's MACs on the switch ports, and in every switch a
// route to h2 out of the port toward it, with a permanent neighbour entry for the MAC
// of the next hop on that port.
func kernelForwarding(lab *Lab) error {
	for _, d := range lab.State.Daemons {
		_ = unix.Kill(d.Pid, unix.SIGTERM)
	}
	for _, d := range lab.State.Daemons {
		for i := 0; i < 200 && unix.Kill(d.Pid, 0) == nil; i++ {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.Pid)); err == nil && len(b) > 0 && containsZombie(b) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	h2, _ := lab.Plan.HostByName("h2")
	dst := &net.IPNet{IP: h2.Config.Addr.AsSlice(), Mask: net.CIDRMask(32, 32)}
	for _, s := range lab.Plan.Switches {
		h, err := openNS(lab.NS(s.Config.Name))
		if err != nil {
			return err
		}
		err = func() error {
			defer h.close()
			if err := inNetns(h.fd, func() error {
				for _, kv := range [][2]string{{"net.ipv4.ip_forward", "1"}, {"net.ipv4.conf.all.rp_filter", "0"},
					{"net.ipv4.conf.default.rp_filter", "0"}, {"net.ipv4.conf.all.send_redirects", "0"}} {
					if err := writeSysctl(kv[0], kv[1]); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
			// The port toward h2 is the one the switch's own route for h2 uses.
			port := -1
			for _, r := range s.Config.Routes {
				if r.Prefix.Contains(h2.Config.Addr) && len(r.Ports) > 0 {
					port = r.Ports[0]
				}
			}
			if port < 0 {
				return fmt.Errorf("%s: no route to h2", s.Config.Name)
			}
			pc := s.Config.Ports[port]
			l, err := h.nl.LinkByName(pc.Name)
			if err != nil {
				return err
			}
			// Give every port the planner's MAC back (Up sets another one so the
			// kernel ignores frames switchd handles).
			for _, q := range s.Config.Ports {
				ql, err := h.nl.LinkByName(q.Name)
				if err != nil {
					return err
				}
				if err := h.nl.LinkSetHardwareAddr(ql, net.HardwareAddr(q.MAC[:])); err != nil {
					return err
				}
			}
			if err := h.nl.NeighSet(&netlink.Neigh{LinkIndex: l.Attrs().Index, Family: netlink.FAMILY_V4,
				State: netlink.NUD_PERMANENT, IP: dst.IP, HardwareAddr: net.HardwareAddr(pc.PeerMAC[:])}); err != nil {
				return err
			}
			return h.nl.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK})
		}()
		if err != nil {
			return fmt.Errorf("kernel forwarding in %s: %w", s.Config.Name, err)
		}
	}
	return nil
}

func containsZombie(stat []byte) bool {
	// /proc/pid/stat: "pid (comm) S ..." — the state follows the last ')'.
	for i := len(stat) - 1; i >= 0; i-- {
		if stat[i] == ')' {
			return i+2 < len(stat) && stat[i+2] == 'Z'
		}
	}
	return false
}

// summarize condenses a switchd stats file to the counters that explain a shortfall.
func summarize(raw []byte) string {
	var r struct {
		Ports []struct {
			Name                 string
			RxPackets, TxPackets uint64
			Drops                []uint64
			Lateness             struct{ P50, P99, Max string }
		}
		Driver struct {
			Ports []struct {
				Name      string `json:"name"`
				RxFrames  uint64 `json:"rx_frames"`
				RingDrops uint64 `json:"ring_drops"`
				TxErrors  uint64 `json:"tx_errors"`
			}
			Wakeups    uint64 `json:"wakeups"`
			TimerWakes uint64 `json:"timer_wakes"`
		}
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return err.Error()
	}
	out := fmt.Sprintf("wakeups %d (timer %d)", r.Driver.Wakeups, r.Driver.TimerWakes)
	for _, p := range r.Ports {
		out += fmt.Sprintf(" | %s rx %d tx %d drops %v late p50 %s p99 %s", p.Name, p.RxPackets, p.TxPackets, p.Drops, p.Lateness.P50, p.Lateness.P99)
	}
	for _, d := range r.Driver.Ports { // the veth ports only
		out += fmt.Sprintf(" | %s ring-drops %d tx-err %d", d.Name, d.RingDrops, d.TxErrors)
	}
	return out
}

// packetSocket opens an AF_PACKET socket for sending on ifname in namespace h (with
// PACKET_QDISC_BYPASS: it skips the interface's tbf).
func packetSocket(h *nsHandle, ifname string) (int, error) {
	var fd int
	err := inNetns(h.fd, func() error {
		var err error
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			unix.Close(fd)
			return err
		}
		_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1)
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return err
		}
		return nil
	})
	return fd, err
}

// pacedBlast writes frame on fd at rate (bits of whole frames per second) for d and
// returns the frames sent. It runs on a locked thread under SCHED_FIFO (so other work on
// the machine does not thin it out) and sends what is due every 200 µs or so; after a
// stall it skips what it missed rather than sending a burst the queue would drop.
func pacedBlast(fd int, frame []byte, rate units.Rate, d time.Duration) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 5}
	_ = unix.SchedSetAttr(0, &attr, 0)
	defer func() {
		attr.Policy, attr.Priority = 0, 0 // SCHED_OTHER
		_ = unix.SchedSetAttr(0, &attr, 0)
	}()
	per := float64(8*len(frame)) / float64(rate) // seconds per frame
	start := time.Now()
	sent, credit := 0, 0.0
	last := start
	for {
		now := time.Now()
		if now.Sub(start) >= d {
			return sent
		}
		credit = min(credit+now.Sub(last).Seconds()/per, 64) // at most 64 frames at once
		last = now
		for ; credit >= 1; credit-- {
			if _, err := unix.Write(fd, frame); err == nil {
				sent++
			}
		}
		// nanosleep on this thread, not a Go timer: those are served by the runtime's
		// other (ordinary) threads, which a busy machine delays by milliseconds.
		ts := unix.NsecToTimespec(int64(200 * time.Microsecond))
		_ = unix.Nanosleep(&ts, nil)
	}
}

// pinProcess moves every thread of pid to cpu.
func pinProcess(pid, cpu int) {
	var set unix.CPUSet
	set.Set(cpu)
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			_ = unix.SchedSetaffinity(tid, &set)
		}
	}
}
