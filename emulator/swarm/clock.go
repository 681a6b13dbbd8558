package swarm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"reef/afpacket"
)

// Each machine keeps its own clock. The daemons of a lab agree on time through a shared
// start time on every machine's CLOCK_REALTIME (kept in step by NTP or PTP on real
// machines: chrony, linuxptp), so what matters for a cut link is how far two machines'
// clocks disagree and how long a frame takes between them. Every agent answers clock
// probes on the underlay and measures each peer at start (NTP's four timestamps, the
// sample of least round trip kept); the controller puts the figures in the summary and
// refuses a cut link whose emulated delay cannot cover them (Margin).

// ClockSample is one agent's measurement of a peer machine.
type ClockSample struct {
	Peer string `json:"peer"`
	// Offset is how far the peer's clock is ahead of this machine's.
	Offset time.Duration `json:"offset_ns"`
	// Transit is the one-way trip over the underlay (half the least round trip).
	Transit time.Duration `json:"transit_ns"`
	// Jitter is how much later than Transit a probe took, one way, at the 90th
	// percentile (the rarer, later frames show as lateness in the run's fidelity).
	Jitter time.Duration `json:"jitter_ns"`
	// Probes is how many probes were answered.
	Probes int `json:"probes"`
}

// Margin is the least emulated delay a cut link between the two machines must have
// for a frame to be in time at the far side: transit, the clocks' disagreement and
// the jitter.
func (s ClockSample) Margin() time.Duration {
	return s.Transit + max(s.Offset, -s.Offset) + s.Jitter
}

// ClockPort is the UDP port lab's agents answer clock probes on (one per lab, so labs
// sharing machines keep apart).
func ClockPort(lab string) int {
	h := fnv.New32a()
	h.Write([]byte(lab))
	return 20000 + int(h.Sum32()%10000)
}

// clock is a machine's clock as its lab sees it: CLOCK_REALTIME plus the offset a test
// injected.
type clock struct{ offset time.Duration }

func (c clock) now() int64 { return time.Now().UnixNano() + int64(c.offset) }

// at is t (a CLOCK_REALTIME instant, such as a kernel receive stamp) on this clock.
func (c clock) at(t time.Time) int64 { return t.UnixNano() + int64(c.offset) }

// serveClock answers probes on conn until ctx ends: each 8-byte request (the prober's
// send time) gets it back with this machine's receive and send times.
func serveClock(ctx context.Context, conn *net.UDPConn, c clock) {
	realtimeThread()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	stamped := stampReceives(conn)
	buf := make([]byte, 64)
	oob := make([]byte, afpacket.StampSpace)
	out := make([]byte, 24)
	for {
		n, oobn, _, from, err := conn.ReadMsgUDPAddrPort(buf, oob)
		t2 := c.now()
		if err != nil {
			return
		}
		if at, ok := afpacket.ReceiveStamp(oob[:oobn]); ok && stamped {
			t2 = c.at(at)
		}
		if n != 8 {
			continue
		}
		copy(out[:8], buf[:8])
		binary.BigEndian.PutUint64(out[8:], uint64(t2))
		binary.BigEndian.PutUint64(out[16:], uint64(c.now()))
		_, _ = conn.WriteToUDPAddrPort(out, from)
	}
}

// stampReceives asks the kernel to stamp conn's datagrams with their receive time
// (afpacket.StampReceives): a probe's receive times are then the kernel's, not when a
// goroutine got to read it (the Go scheduler wakes a goroutine parked on a socket
// through whichever thread polls, which on a loaded machine took milliseconds), so the
// jitter measured is the underlay's. It reports whether it could.
func stampReceives(conn *net.UDPConn) bool {
	rc, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = afpacket.StampReceives(int(fd)) }); err != nil {
		return false
	}
	return serr == nil
}

// probePeers measures each of spec's peers with n probes 2 ms apart, waiting up to
// wait for each to answer.
func probePeers(ctx context.Context, spec *Spec, c clock, n int, wait time.Duration) ([]ClockSample, error) {
	var out []ClockSample
	for _, peer := range spec.Peers {
		s, err := probeClock(ctx, peer.Name, netip.AddrPortFrom(peer.Addr, uint16(ClockPort(spec.Lab))), c, n, 2*time.Millisecond, wait)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}

// probeClock measures peer (at addr:port) with n probes spaced gap apart, waiting up
// to wait for the peer to answer the first. It probes from a real-time thread of its
// own, which ends with it.
func probeClock(ctx context.Context, peer string, addr netip.AddrPort, c clock, n int, gap, wait time.Duration) (ClockSample, error) {
	type result struct {
		s   ClockSample
		err error
	}
	ch := make(chan result, 1)
	go func() {
		realtimeThread() // never unlocked: the thread exits with the goroutine
		s, err := probe(ctx, peer, addr, c, n, gap, wait)
		ch <- result{s, err}
	}()
	r := <-ch
	return r.s, r.err
}

func probe(ctx context.Context, peer string, addr netip.AddrPort, c clock, n int, gap, wait time.Duration) (ClockSample, error) {
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return ClockSample{}, fmt.Errorf("swarm: clock probe of %s: %w", peer, err)
	}

	defer conn.Close()
	stamped := stampReceives(conn)
	type sample struct{ rtt, offset int64 }
	var got []sample
	req := make([]byte, 8)
	resp := make([]byte, 64)
	oob := make([]byte, afpacket.StampSpace)
	deadline := time.Now().Add(wait)
	for len(got) < n {
		if ctx.Err() != nil {
			return ClockSample{}, ctx.Err()
		}
		if len(got) == 0 && time.Now().After(deadline) {
			return ClockSample{}, fmt.Errorf("swarm: machine %s does not answer clock probes on %s (is UDP %d open between the machines?)", peer, addr, addr.Port())
		}
		t1 := c.now()
		binary.BigEndian.PutUint64(req, uint64(t1))
		if _, err := conn.Write(req); err != nil {
			time.Sleep(gap)
			continue
		}
		_ = conn.SetReadDeadline(time.Now().Add(max(gap, 50*time.Millisecond)))
		m, oobn, _, _, err := conn.ReadMsgUDPAddrPort(resp, oob)
		t4 := c.now()
		if at, ok := afpacket.ReceiveStamp(oob[:oobn]); ok && stamped && err == nil {
			t4 = c.at(at)
		}
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				time.Sleep(gap)
			}
			continue
		}
		if m != 24 || int64(binary.BigEndian.Uint64(resp)) != t1 {
			continue
		}
		t2, t3 := int64(binary.BigEndian.Uint64(resp[8:])), int64(binary.BigEndian.Uint64(resp[16:]))
		got = append(got, sample{rtt: (t4 - t1) - (t3 - t2), offset: ((t2 - t1) + (t3 - t4)) / 2})
		time.Sleep(gap)
	}
	best := slices.MinFunc(got, func(a, b sample) int { return int(a.rtt - b.rtt) })
	rtts := make([]int64, len(got))
	for i, s := range got {
		rtts[i] = s.rtt
	}
	slices.Sort(rtts)
	p90 := rtts[min(len(rtts)-1, len(rtts)*90/100)]
	return ClockSample{Peer: peer, Offset: time.Duration(best.offset), Transit: time.Duration(best.rtt / 2),
		Jitter: time.Duration((p90 - best.rtt) / 2), Probes: len(got)}, nil
}

// probePriority is the SCHED_FIFO priority of the clock probes' threads: above the
// daemons' datapath threads (10), which never sleep while they have work, so that a
// probe is not queued behind a busy daemon of its own machine (measured during a run
// at the daemons' priority: 28–60 ms, all of it the probe waiting for a CPU). A probe
// is a few µs of work every few ms.
const probePriority = 20

// realtimeThread locks the calling goroutine to its thread and runs that thread under
// SCHED_FIFO when the machine allows it (best effort: the probes still measure
// without it, only more pessimistically). The caller never unlocks: its thread exits
// with it rather than go back to the runtime real-time.
func realtimeThread() {
	runtime.LockOSThread()
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: probePriority}
	_ = unix.SchedSetAttr(0, &attr, 0)
}
