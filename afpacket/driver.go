package afpacket

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"reef/internal/cpuset"
	"reef/switchd"
	"reef/units"
)

// Node is the sans-I/O side of the node contract (see the reef brief); *switchd.Switch
// satisfies it.
type Node interface {
	// Receive hands the node a frame that arrived on port at now; the node copies
	// what it keeps. now may be earlier than a time already passed to Poll (the
	// frame was read late): it is the frame's arrival as the schedule computed it,
	// and the node should compute with it rather than with the time it read it.
	Receive(now units.Time, port int, frame []byte)
	// NextDeadline is the earliest time Poll may return a frame (units.Never: idle).
	NextDeadline() units.Time
	// Poll returns the next frame due at or before now.
	Poll(now units.Time) (switchd.Out, bool)
}

// Resumer is a Node that wants to know when the driver was stalled: it should have run
// at from (the deadline its timer was armed at) but ran only at now, StallMin or more
// later, as when the machine did not schedule the daemon. A host holds the timers that
// came due meanwhile until the frames stalled upstream have had time to arrive
// (hostd.Host.Resumed).
type Resumer interface {
	Resumed(from, now units.Time)
}

// ArrivalClocked is a Node whose sending an arrival can unblock at the arrival's own
// time: a host, where an ACK opens the window and the next packet leaves then, and a
// data frame is acknowledged then. Before handing it a frame that arrived before the
// driver read it, the driver takes the frames the node had due before then on the
// frame's port with PollBefore(port, at, now) (now: the driver's clock, when they are
// actually released), as if that frame had woken it on time. So the ACKs a host reads
// in one batch clock its sends one by one, at their own computed times, not all from
// the last one's arrival, and the data frames a receiver reads in one batch get an ACK
// each, as on the sim, not one ACK for all of them (which would also echo the last
// one's send time at the first one's arrival). What a node sends on other ports cannot
// depend on the frame, so only the frame's port is polled, and the cost per arrival
// does not grow with the ports (40 hosts of an incast share one daemon).
//
// Until 2026-11-28 the driver did this only for frames read a stall (StallMin) late.
// On oscar-convergence's receiver 6% of the data frames then went without an ACK of
// their own on a quiet machine, and 11-16% with the hosts' daemon descheduled for
// 0.25-0.75 ms every few ms (a busy VM), where OSCAR's long flow lost 22-27% of its
// goodput and missed the quick recovery after most bursts while lateness and skew stayed
// within their bounds (TestBriefHostStallsMoveNothing).
type ArrivalClocked interface {
	PollBefore(port int, at, now units.Time) (switchd.Out, bool)
}

// StallMin is how much later than its armed deadline the driver must run to report a
// stall to a Resumer: well above the wakeup lateness of a daemon that is merely busy
// (p99 0.2 ms on a loaded 2-core machine), below the grace a host gives its timers.
const StallMin = units.Millisecond

// Config configures a Driver.
type Config struct {
	// Ports are the interface names, in the node's port order.
	Ports []string
	// Netns, when set, holds each port's network namespace (a path such as
	// /run/netns/NAME; "": the calling thread's own), so that one driver serves
	// interfaces in several namespaces (a shard's switches each keep their own).
	Netns []string
	// Port sizes the rings and picks socket options (MTU 0: the interface's own).
	Port PortOptions
	// Rings, when set, holds each port's RX ring slots (0: Port.RingFrames), so that
	// each ring can be sized for its own link's rate (RingFramesFor).
	Rings []int
	// Clock is the lab's clock.
	Clock *Clock
	// Tick, when > 0, is how often (lab time) OnTick is called on the datapath thread,
	// where it may read the node (for example to snapshot its Stats).
	Tick   units.Time
	OnTick func(now units.Time, st *Stats)
	// CPUs, when set, binds the datapath thread to these CPUs (a switch daemon given a
	// CPU of its own); the process's other threads stay where they were.
	CPUs []int
	// RTPriority, when > 0, runs the datapath thread under SCHED_FIFO at that priority
	// (1..99), so wakeups preempt ordinary (CFS) work on a busy machine. See the
	// hazard in RealtimeThreads before using it.
	RTPriority int
	// Spin, when > 0, arms the timer Spin early and busy-polls the rings and the clock
	// for the rest of the wait: it trades CPU for release precision.
	Spin units.Time
	// Quantum, when > 0, wakes the loop only on a grid of Quantum (lab time): the frames
	// due within one quantum leave together, at its end, in one wakeup. Their Due is
	// unchanged (the trailer carries it), so only release lateness grows, by up to a
	// quantum: a budget the fidelity verdict must allow.
	Quantum units.Time
	// BusyPoll, when > 0, keeps polling the rings for BusyPoll after the last arrival
	// before going back to sleep: no wakeup per frame when frames come faster than
	// one per BusyPoll, at the price of a CPU kept busy meanwhile.
	BusyPoll units.Time
	// MaxCarry bounds how much earlier than the kernel's receive stamp a release
	// trailer's Due may be and still be used as the arrival time (see trailer.go);
	// older ones, and ones later than the stamp, are counted and ignored. 0 means
	// DefaultMaxCarry.
	MaxCarry units.Time
	// Until, when > 0, is the lab time at which Run returns nil on its own. Stopping
	// from the datapath thread needs no other goroutine, which a busy machine running
	// every daemon under SCHED_FIFO may not schedule for seconds.
	Until units.Time
}

// DefaultMaxCarry is Config.MaxCarry's default: well past the stalls a loaded machine
// inflicts on a daemon, so only a trailer from another clock (or garbage that happened
// to end in the magic) is rejected.
const DefaultMaxCarry = 100 * units.Millisecond

// carryAhead is how much later than the receive stamp a carried Due may be before it
// is rejected: the stamp is CLOCK_REALTIME read back through an offset measured to
// within a few µs (Clock.Resync), so a Due can look slightly later than its arrival.
const carryAhead = 50 * units.Microsecond

// Stats are the driver's own counters (the node keeps the pipeline's).
type Stats struct {
	Ports []PortStats `json:"ports"`
	// Wakeups counts loop iterations; TimerWakes those the timerfd caused.
	Wakeups    uint64 `json:"wakeups"`
	TimerWakes uint64 `json:"timer_wakes"`
	// WakeLate is a histogram of how late timer wakeups were (now − armed deadline):
	// bucket i counts lateness in [2^i, 2^(i+1)) µs, bucket 0 also < 1 µs.
	WakeLate [16]uint64 `json:"wake_late_us_log2"`
	// TimerArms counts timerfd re-arms; ArmLead is a histogram of how far ahead of
	// the clock they were armed (log2 µs buckets as WakeLate; a deadline already past
	// counts in bucket 0).
	TimerArms uint64     `json:"timer_arms"`
	ArmLead   [16]uint64 `json:"arm_lead_us_log2"`
	// WakeLateMax is the largest timer lateness seen, and WakeLateMaxAt the clock's
	// time of the wakeup that saw it (when in the run a stall hit).
	WakeLateMax   units.Time `json:"wake_late_max"`
	WakeLateMaxAt units.Time `json:"wake_late_max_at,omitempty"`
	// Stalls counts wakeups where the node asked to be polled at once but neither
	// took nor gave a frame (a node bug; the driver backs off 1 ms each time).
	Stalls uint64 `json:"stalls"`
	// Resumes counts wakeups StallMin or more after the armed deadline (the driver was
	// not scheduled; see Resumer), and ResumedTime adds up by how much.
	Resumes     uint64     `json:"resumes"`
	ResumedTime units.Time `json:"resumed_time"`
	// CPUTime is the CPU time the datapath thread used in Run (user and system).
	CPUTime units.Time `json:"cpu_time"`
	// Faults counts the page faults the datapath thread took in Run (minor and major):
	// each is time it did not forward, and a burst of them a stall. Memory the driver
	// and the daemons set up for the run is touched before it (see Touch).
	Faults uint64 `json:"faults"`
	// RealTime is true when the datapath thread runs under SCHED_FIFO.
	RealTime bool `json:"real_time"`
}

// A Driver moves frames between a node and its ports; see the package doc.
type Driver struct {
	cfg   Config
	node  Node
	ports []*Port
	stats Stats
	heads []head // per port: the oldest waiting frame, for the merge in drain
	// clocked is node when it is ArrivalClocked (polled before each arrival read
	// late), else nil.
	clocked ArrivalClocked
}

// head caches a port's oldest waiting frame and its arrival time.
type head struct {
	frame []byte
	at    units.Time
	ok    bool
	carry carry
}

// carry is what became of a frame's release trailer.
type carry uint8

const (
	carryNone     carry = iota // no trailer: the kernel's stamp
	carryUsed                  // the carried Due
	carryRejected              // an implausible Due: the kernel's stamp
)

// Open opens every port of cfg (in the calling thread's network namespace) for node.
func Open(node Node, cfg Config) (*Driver, error) {
	if cfg.Clock == nil {
		return nil, errors.New("afpacket: no clock")
	}
	if cfg.MaxCarry <= 0 {
		cfg.MaxCarry = DefaultMaxCarry
	}
	d := &Driver{cfg: cfg, node: node}
	d.clocked, _ = node.(ArrivalClocked)
	if cfg.Netns != nil && len(cfg.Netns) != len(cfg.Ports) {
		return nil, fmt.Errorf("afpacket: %d namespaces for %d ports", len(cfg.Netns), len(cfg.Ports))
	}
	if cfg.Rings != nil && len(cfg.Rings) != len(cfg.Ports) {
		return nil, fmt.Errorf("afpacket: %d ring sizes for %d ports", len(cfg.Rings), len(cfg.Ports))
	}
	for i, name := range cfg.Ports {
		ns := ""
		if cfg.Netns != nil {
			ns = cfg.Netns[i]
		}
		o := cfg.Port
		if cfg.Rings != nil && cfg.Rings[i] > 0 {
			o.RingFrames = cfg.Rings[i]
		}
		p, err := OpenPortIn(ns, name, o)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.ports = append(d.ports, p)
	}
	d.stats.Ports = make([]PortStats, len(d.ports))
	d.heads = make([]head, len(d.ports))
	return d, nil
}

// Close closes every port. Call it after Run returns.
func (d *Driver) Close() error {
	var errs []error
	for _, p := range d.ports {
		errs = append(errs, p.Close())
	}
	d.ports = nil
	return errors.Join(errs...)
}

// Stats returns a snapshot of the driver's counters. Call it only when Run is not
// running (after it returned), or from OnTick.
func (d *Driver) Stats() Stats {
	d.snapshot()
	s := d.stats
	s.Ports = append([]PortStats(nil), d.stats.Ports...)
	return s
}

// tick is Run's periodic work: it resyncs the clock and hands OnTick the counters. It
// allocates nothing (the daemons run with the GC off), nor should OnTick.
func (d *Driver) tick(now units.Time) {
	d.cfg.Clock.Resync()
	d.snapshot()
	d.cfg.OnTick(now, &d.stats)
}

func (d *Driver) snapshot() {
	for i, p := range d.ports {
		p.pollRingDrops()
		d.stats.Ports[i] = p.stats()
	}
}

const (
	tagTimer = -1
	tagStop  = -2
)

// Run drives the node until ctx is done. It locks the calling goroutine to its OS thread
// for the duration and sets the thread's timer slack to 1 ns.
func (d *Driver) Run(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer d.addThreadCPU(threadCPU())
	defer d.addThreadFaults(threadFaults())
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("afpacket: timer slack: %w", err)
	}
	if len(d.cfg.CPUs) > 0 {
		was, err := cpuset.Allowed()
		if err != nil {
			return fmt.Errorf("afpacket: %w", err)
		}
		if err := cpuset.Bind(d.cfg.CPUs); err != nil {
			return fmt.Errorf("afpacket: %w", err)
		}
		defer func() { _ = cpuset.Bind(was) }() // before the thread goes back to the runtime's pool
	}
	if d.cfg.RTPriority > 0 {
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(d.cfg.RTPriority)}
		// Best effort: without CAP_SYS_NICE the loop still works, only less precisely.
		d.stats.RealTime = unix.SchedSetAttr(0, &attr, 0) == nil
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("afpacket: epoll: %w", err)
	}
	defer unix.Close(ep)
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("afpacket: timerfd: %w", err)
	}
	defer unix.Close(tfd)
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("afpacket: eventfd: %w", err)
	}
	defer unix.Close(efd)
	add := func(fd int, tag int32) error {
		return unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: tag})
	}
	for i, p := range d.ports {
		if err := add(p.fd, int32(i)); err != nil {
			return fmt.Errorf("afpacket: epoll add %s: %w", p.Name, err)
		}
	}
	if err := add(tfd, tagTimer); err != nil {
		return fmt.Errorf("afpacket: epoll add timerfd: %w", err)
	}
	if err := add(efd, tagStop); err != nil {
		return fmt.Errorf("afpacket: epoll add eventfd: %w", err)
	}
	stop := context.AfterFunc(ctx, func() {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		_, _ = unix.Write(efd, one[:])
	})
	defer stop()

	var (
		evs      = make([]unix.EpollEvent, len(d.ports)+2)
		buf8     [8]byte
		armed    = units.Never // deadline the timerfd is armed at
		nextTick = units.Never
		epoch    = d.cfg.Clock.Epoch()
		perWake  = 0
	)
	for _, p := range d.ports {
		perWake = max(perWake, p.frames)
	}
	if d.cfg.Tick > 0 && d.cfg.OnTick != nil {
		nextTick = d.cfg.Clock.Now() + d.cfg.Tick
	}
	// The first wait does not block: the loop's first pass arms the timer for the
	// node's first deadline (a host whose flows start later receives nothing before).
	wait := 0
	for {
		n, err := unix.EpollWait(ep, evs, wait)
		wait = -1
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("afpacket: epoll_wait: %w", err)
		}
		now := d.cfg.Clock.Now()
		if d.cfg.Until > 0 && now >= d.cfg.Until {
			return nil
		}
		d.stats.Wakeups++
		if armed != units.Never && now-armed >= StallMin {
			d.stats.Resumes++
			d.stats.ResumedTime += now - armed
			if r, ok := d.node.(Resumer); ok {
				r.Resumed(armed, now)
			}
		}
		for _, ev := range evs[:max(n, 0)] {
			switch ev.Fd {
			case tagStop:
				return ctx.Err()
			case tagTimer:
				_, _ = unix.Read(tfd, buf8[:])
				if armed != units.Never {
					d.stats.TimerWakes++
					d.recordLate(now, now-armed)
				}
				armed = units.Never
			default:
				if ev.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 && int(ev.Fd) < len(d.ports) {
					// A pending socket error keeps epoll readable: clear and count it.
					p := d.ports[ev.Fd]
					if _, err := unix.GetsockoptInt(p.fd, unix.SOL_SOCKET, unix.SO_ERROR); err == nil {
						p.sockErrors++
					}
				}
			}
		}
		progress := d.step(now, perWake)
		if d.stats.RealTime {
			// Under SCHED_FIFO a daemon that always has work would never let another
			// one of the same priority run on its CPU: give way after every batch (a
			// no-op when nobody else waits).
			_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
		// Spin while the next deadline is closer than Spin, or a frame arrived less
		// than BusyPoll ago (more are likely: polling is cheaper than a wakeup per
		// frame): poll the rings and the clock instead of sleeping.
		lastRx := now
		for d.cfg.Spin > 0 || d.cfg.BusyPoll > 0 {
			next := d.node.NextDeadline()
			now = d.cfg.Clock.Now()
			if next <= now {
				if d.step(now, perWake) {
					progress = true
					lastRx = now
				} else if d.node.NextDeadline() <= now {
					progress = false
					break // nothing moved: let the main loop back off (see Stalls)
				}
				// else the deadline was early (a lower bound) and is exact now
				continue
			}
			if (next == units.Never || next-now > d.cfg.Spin) && now-lastRx >= d.cfg.BusyPoll {
				break
			}
			var got int
			if got, now = d.drain(now, perWake); got > 0 {
				lastRx = now
			}
			if d.stats.RealTime {
				_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) // see below
			}
		}
		if now >= nextTick {
			d.tick(now)
			nextTick = now + d.cfg.Tick
		}
		next := d.node.NextDeadline()
		switch {
		case !progress && next <= now:
			// The node wants to be polled now but gave nothing and took nothing: a
			// node bug. Back off instead of spinning on an expired timer. (Compared
			// before Spin comes off: a wakeup Spin early has nothing to do yet.)
			d.stats.Stalls++
			next = now + units.Millisecond
		case next != units.Never:
			next = quantise(next, d.cfg.Quantum) - d.cfg.Spin
		}
		next = min(next, nextTick)
		if d.cfg.Until > 0 {
			next = min(next, d.cfg.Until)
		}
		if next != units.Never {
			// Nothing runs before the lab's epoch (time 0); an all-zero its would
			// disarm the timer, hence 1 ns. armed keeps what the timer was set to, so
			// that a wakeup at the epoch does not look late by the wait before it.
			next = max(next, 1)
		}
		if next != armed {
			d.stats.TimerArms++
			if next != units.Never {
				d.stats.ArmLead[log2Bucket(next-now, len(d.stats.ArmLead))]++
			}
			var its unix.ItimerSpec
			if next != units.Never {
				its.Value = unix.NsecToTimespec(epoch + int64(next))
			}
			if err := unix.TimerfdSettime(tfd, unix.TFD_TIMER_ABSTIME, &its, nil); err != nil {
				return fmt.Errorf("afpacket: timerfd_settime: %w", err)
			}
			armed = next
		}
	}
}

// quantise rounds t up to the next multiple of q (t itself when q ≤ 0).
func quantise(t, q units.Time) units.Time {
	if q <= 0 {
		return t
	}
	return (t + q - 1) / q * q
}

// RealtimeThreads puts every thread the process has now under SCHED_FIFO at prio (best
// effort; threads the runtime starts later inherit the policy from their creator when
// it is one of these). It reports how many threads it moved.
//
// Hazard, measured: a SCHED_FIFO thread that spins inside the Go runtime (exitsyscall's
// casgstatus, waiting for a GC worker to finish scanning its goroutine) starves that
// worker when the worker has a lower FIFO priority on the same CPU; two switch daemons
// did so for ten minutes at 100% CPU. Use it only with the GC off from the start of
// main (debug.SetGCPercent(-1)), so nothing ever scans the datapath goroutine, and at
// the datapath's own priority. Without it, every preemption of the locked datapath
// goroutine waits for an ordinary thread to run the scheduler (tens of ms on a busy
// machine).
func RealtimeThreads(prio int) int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	n := 0
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil && unix.SchedSetAttr(tid, &attr, 0) == nil {
			n++
		}
	}
	return n
}

// NiceThreads sets the nice value of every thread the process has now (threads started
// later inherit it from their creator). It reports how many threads it changed. A nice
// of -20 gives a daemon ~87 times the CPU share of ordinary work and early wakeup
// preemption, without SCHED_FIFO's starvation hazards (see RealtimeThreads).
func NiceThreads(nice int) int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil && unix.Setpriority(unix.PRIO_PROCESS, tid, nice) == nil {
			n++
		}
	}
	return n
}

// step drains every ring into the node, then sends everything the node releases. It
// reports whether any frame moved.
func (d *Driver) step(now units.Time, perWake int) bool {
	got, now := d.drain(now, perWake)
	moved := got > 0
	for range 4 {
		for {
			o, ok := d.node.Poll(now)
			if !ok {
				break
			}
			moved = true
			d.queue(o)
		}
		if d.node.NextDeadline() > now {
			break
		}
		now = d.cfg.Clock.Now()
	}
	for _, p := range d.ports {
		if p.tx.n > 0 {
			p.Flush()
		}
	}
	return moved
}

// queue copies a frame the node returned into its port's TX batch (the node may reuse
// it at once). The trailer carries the Due on the wire clock (Clock.SetWireEpoch).
func (d *Driver) queue(o switchd.Out) {
	if o.Port >= 0 && o.Port < len(d.ports) {
		d.ports[o.Port].Queue(o.Frame, o.Due+units.Time(d.cfg.Clock.WireEpoch()))
	}
}

// drain hands up to budget waiting frames to the node, merged across ports in arrival
// order, each with its arrival time (never later than the clock), and returns how many
// and the time it reached (now, or a later reading of the clock when a frame's arrival
// was later than now: the caller goes on from there). A frame's arrival is the
// Due its release trailer carried (the upstream daemon's computed release), or the
// kernel's receive stamp when it has none: stamping arrivals rather than wakeups keeps
// the computed schedule right when this daemon was descheduled, and the carried Due
// keeps it right when the upstream one was (only the release is late, never the
// departure times). An arrival may be earlier than times already handed to the node
// (this daemon read the frame after polling past it); the node computes with it all
// the same (see Node).
func (d *Driver) drain(now units.Time, budget int) (n int, reached units.Time) {
	for i, p := range d.ports {
		d.heads[i] = d.peek(p)
	}
	for ; n < budget; n++ {
		best := -1
		for i := range d.heads {
			if d.heads[i].ok && (best < 0 || d.heads[i].at < d.heads[best].at) {
				best = i
			}
		}
		if best < 0 {
			return n, now
		}
		at := d.heads[best].at
		if at > now {
			// The frame landed after now was read (it was released meanwhile): read
			// the clock again rather than make its arrival earlier than its Due.
			now = max(now, d.cfg.Clock.Now())
		}
		at = min(at, now)
		if d.clocked != nil && at < now {
			for {
				o, ok := d.clocked.PollBefore(best, at, now)
				if !ok {
					break
				}
				d.queue(o)
			}
		}
		d.node.Receive(at, best, d.heads[best].frame)
		p := d.ports[best]
		switch d.heads[best].carry {
		case carryUsed:
			p.rxCarried++
		case carryRejected:
			p.rxCarryRejected++
		}
		p.release(true)
		d.heads[best] = d.peek(p)
	}
	return n, now
}

// peek returns p's oldest waiting frame with its arrival time.
func (d *Driver) peek(p *Port) head {
	f, sec, nsec, due, carried, ok := p.head()
	if !ok {
		return head{}
	}
	h := head{frame: f, at: d.cfg.Clock.FromRealtime(sec, nsec), ok: true}
	if carried {
		h.at, h.carry = arrival(h.at, due-units.Time(d.cfg.Clock.WireEpoch()), d.cfg.MaxCarry)
	}
	return h
}

// arrival returns the arrival time of a frame the kernel stamped at stamp whose
// trailer carried due: due when it is plausible (never later than stamp), stamp when
// due is later than stamp (beyond the clocks' reading error) or older than maxCarry.
func arrival(stamp, due, maxCarry units.Time) (units.Time, carry) {
	if due > stamp+carryAhead || due < stamp-maxCarry {
		return stamp, carryRejected
	}
	return min(due, stamp), carryUsed
}

func (d *Driver) recordLate(now, late units.Time) {
	late = max(late, 0)
	if late > d.stats.WakeLateMax {
		d.stats.WakeLateMax, d.stats.WakeLateMaxAt = late, now
	}
	d.stats.WakeLate[log2Bucket(late, len(d.stats.WakeLate))]++
}

// threadCPU is the calling thread's CPU time so far (0 when it cannot be read).
func threadCPU() units.Time {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return units.Time(ts.Nano())
}

// addThreadCPU adds the thread's CPU time since start to the stats (deferred by Run).
func (d *Driver) addThreadCPU(start units.Time) { d.stats.CPUTime += threadCPU() - start }

// threadFaults is the calling thread's page faults so far.
func threadFaults() uint64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return uint64(ru.Minflt + ru.Majflt)
}

func (d *Driver) addThreadFaults(start uint64) { d.stats.Faults += threadFaults() - start }

// log2Bucket is the bucket of a log2-µs histogram of n buckets that holds t: bucket i
// counts [2^i, 2^(i+1)) µs, bucket 0 also anything below 1 µs, the last anything above.
func log2Bucket(t units.Time, n int) int {
	us := uint64(max(t, 0) / units.Microsecond)
	b := 0
	for us > 1 && b < n-1 {
		us >>= 1
		b++
	}
	return b
}
