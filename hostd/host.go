// Package hostd is reef's host: a pure, deterministic core (Host) that owns one NIC and
// the flows of one emulated host, and the drivers that run it against real sockets.
//
// Host sits between a backend (the sim engine, or the raw-socket daemon) and the
// transport (hostd/transport): the backend hands it frames with Receive and asks for
// frames with Poll at the times NextDeadline names; Host demultiplexes frames to flow
// senders and receivers, serialises what they send at the NIC rate (ACKs first, data
// flows round robin), and obeys PFC pause frames. It never reads a clock, sleeps, starts
// goroutines or touches the network.
//
// # Usage
//
//	h, err := hostd.New(cfg, hostd.Options{})
//	err = h.AddFlow(hostd.FlowSpec{ID: 1, Dst: dst, Size: 1e6, Alg: alg})
//	for { h.Receive(now, 0, frame); for { out, ok := h.Poll(now); if !ok { break }; … } }
//
// # Limitations
//
// One NIC, one priority class; a frame's departure is max(ready, NIC free) + TxTime and
// its Due is that departure (hosts add no propagation delay).
package hostd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	"reef/cc"
	"reef/hostd/transport"
	"reef/internal/hist"
	"reef/units"
	"reef/wire"
)

// Options are the host's settings that do not come from the planner.
type Options struct {
	// MPDUnit is the lab's Poseidon MPD unit (0: the fabric stamps no MPD).
	MPDUnit units.Time
	// Tuning is the transport's loss-recovery tuning; the zero value means
	// transport.DefaultTuning().
	Tuning transport.Tuning
	// Logger receives flow start/finish events at debug level (nil: discard).
	Logger *slog.Logger
	// TimerGrace, when > 0, is how long after a timer's deadline Poll waits before
	// firing it (the timer still fires at its deadline in the host's computed time).
	// Real drivers read frames late when the machine stalls a daemon; the grace lets an
	// ACK that arrived before an RTO deadline, but is read after it, cancel the timeout
	// as it would have. Receive first fires the timers due before the frame's arrival,
	// so the order of events stays the computed one. 0 (the sim): timers fire when due.
	// After a stall the driver reports (Resumed) the grace is counted from the resumption.
	TimerGrace units.Time
	// Snap, when > 0, is how many bytes of each frame the host stores: frames are built
	// and received held truncated after their headers (wire.BuildTruncated), their
	// lengths on the wire those of their IPv4 headers. The sim stores frames so, as
	// its payloads carry nothing. It must hold every flow's headers
	// (wire.MaxHeaders(HopCap)); 0 stores whole frames.
	Snap int
}

// FlowSpec describes one flow this host sends.
type FlowSpec struct {
	// ID identifies the flow on the wire; unique among this host's flows.
	ID uint32
	// Name is a label for stats and logs.
	Name string
	// Dst is the receiving host's address.
	Dst netip.Addr
	// Size is the payload to send; 0 means long-lived.
	Size units.Bytes
	// Start is when the flow begins; Stop (0: never) when it stops sending new data.
	Start, Stop units.Time
	// Alg is the flow's congestion controller, built by the caller (see FlowEnv).
	Alg cc.Algorithm
	// NewAlg, when Alg is nil, builds the flow's congestion controller: AddFlow calls it
	// once, to check it, and the host again when the flow starts, so that a host given
	// many flows holds algorithms only for those in progress. It must build the same
	// algorithm every time (its random source seeded afresh, say).
	NewAlg func() (cc.Algorithm, error)
	// HopCap is the number of per-hop INT slots each data packet reserves (HPCC,
	// PowerTCP); 0 for none.
	HopCap int
	// Ack is the ACK coalescing the receiver should apply (zero: ACK every packet).
	Ack transport.AckPolicy
	// BaseRTT is the path's unloaded RTT, used before the first RTT sample (optional).
	BaseRTT units.Time
	// CNPInterval, when > 0, asks the receiver for DCQCN CNPs (at most one per interval
	// for CE-marked packets). When 0 and Alg has a method CNPInterval() units.Time,
	// that value is used.
	CNPInterval units.Time
}

// CNPRequester is implemented by algorithms that want the receiver to send CNPs
// (DCQCN's notification point); see FlowSpec.CNPInterval.
type CNPRequester interface {
	CNPInterval() units.Time
}

// Out is one frame leaving the host.
type Out struct {
	// Port is always 0: a host has one port.
	Port int
	// Frame is valid until the next call on the Host.
	Frame []byte
	// Due is when the frame's last bit leaves the NIC.
	Due units.Time
}

// Completion records one finished finite flow.
type Completion struct {
	ID            uint32
	Name          string
	Dst           netip.Addr
	Size          units.Bytes
	Start, Finish units.Time
	// FCT is Finish - Start; Finish is when the sender saw the last byte acknowledged.
	FCT units.Time
}

// HostStats are host-wide counters.
type HostStats struct {
	// FramesSent and BytesSent count frames put on the wire (data and ACKs).
	FramesSent, BytesSent uint64
	// Ignored counts frames that were not reef frames for this host (left to the
	// kernel) or for flows it does not know, or does not run (an ACK for a flow that
	// has finished); Pauses counts PFC frames obeyed.
	Ignored, Pauses uint64
	// Malformed counts reef frames shorter than their own lengths say (dropped before
	// any state is created for them).
	Malformed uint64
	// PausedTime is the total time the NIC was held by PFC.
	PausedTime units.Time
	// StaleTimers counts frames (ACKs, CNPs) read after a timer of their flow had
	// fired although they arrived before its deadline: a driver stalled longer than
	// Options.TimerGrace, so the timer may have fired where it would not have. Always
	// 0 on the sim.
	StaleTimers uint64
}

type flow struct {
	spec FlowSpec
	cnp  units.Time // the CNP interval asked for (FlowSpec.CNPInterval, else the algorithm's)
	// snd is the flow's sender from its start until it finishes: the host builds it
	// (and the algorithm, from FlowSpec.NewAlg) when the flow starts, and lets both go
	// when it finishes, keeping end, so that a host given many flows, one after
	// another, holds senders only for those in progress. ACKs that arrive for a
	// finished flow (duplicates of retransmitted packets) are ignored, as by a
	// transport that closed the connection.
	snd *transport.Sender
	// end is set once the flow has finished.
	end     *flowEnd
	stopped bool
	// ready and timer cache snd.SendReadyAt() (never before Start) and
	// snd.TimerDeadline(): they change only when the host calls into the sender, so the
	// NIC's scans over flows read two fields instead of calling into the algorithm.
	ready, timer units.Time
	// fired is the deadline of the latest timer fired: a frame for the flow that
	// arrived before it was read too late to cancel it (HostStats.StaleTimers).
	fired units.Time
}

// flowEnd is what a finished flow reports once its sender is gone: the sender's stats
// and its algorithm's window and rate at the flow's completion, and when that was.
type flowEnd struct {
	stats transport.SenderStats
	cwnd  units.Bytes
	rate  units.Rate
	at    units.Time
}

// started reports whether the flow has started: it has a sender, or had one.
func (f *flow) started() bool { return f.snd != nil || f.end != nil }

// refresh recomputes f's cached deadlines after a call into its sender, and lowers
// the host's bounds over all active flows.
func (h *Host) refresh(f *flow) {
	if f.snd == nil { // finished
		f.ready, f.timer = units.Never, units.Never
		return
	}
	f.ready = f.snd.SendReadyAt()
	if f.ready != units.Never {
		f.ready = max(f.ready, f.spec.Start)
	}
	f.timer = f.snd.TimerDeadline()
	h.timerMin = min(h.timerMin, f.timer)
	h.readyMin = min(h.readyMin, f.ready)
}

type rxKey struct {
	src [4]byte
	id  uint32
}

// rxEntry is the receiving side of one flow, for the whole run: its Receiver while the
// flow has data arriving or an ACK to send, its ClosedReceiver once it is complete and
// acknowledged (rcv nil), reopened if a late duplicate comes.
type rxEntry struct {
	key    rxKey
	rcv    *transport.Receiver
	closed transport.ClosedReceiver
	queued bool
}

// stats returns the entry's receiver counters, open or closed.
func (e *rxEntry) stats() transport.ReceiverStats {
	if e.rcv == nil {
		return e.closed.Stats()
	}
	return e.rcv.Stats()
}

// close drops the entry's Receiver, keeping a ClosedReceiver, if its flow is complete
// and acknowledged.
func (e *rxEntry) close() {
	if c, ok := e.rcv.Close(); ok {
		e.closed, e.rcv = c, nil
	}
}

// Host is the pure host core. Not safe for concurrent use.
type Host struct {
	cfg  Config
	opts Options
	log  *slog.Logger

	flows    []*flow // every flow, in AddFlow order (stats)
	waiting  []*flow // flows not started yet, by Start; waiting[waitHead:] are live
	active   []*flow // started flows that are not finished, in AddFlow order
	byID     map[uint32]*flow
	waitHead int
	// Lower bounds over the active flows' cached timer and ready times; the scans that
	// need exact values recompute them.
	timerMin, readyMin units.Time
	// stopMin is the earliest Stop among active flows not yet stopped (stopFlows).
	stopMin     units.Time
	anyFinished bool
	rx          map[rxKey]*rxEntry
	rxAll       []*rxEntry
	ackQ        []*rxEntry

	nicFree, pausedUntil units.Time
	busyStart            units.Time  // when the NIC last started from idle
	busyBytes            units.Bytes // bytes serialised since busyStart
	held                 bool
	heldDue              units.Time
	heldLen              int
	bufs                 [2][]byte
	cur                  int
	rr                   int

	completions []Completion
	stats       HostStats
	scratch     *transport.Scratch // shared by the host's senders
	// committed is the latest computed time the host acted at (a NIC start, a timer);
	// a frame arriving earlier was read late, and skew records by how much.
	committed units.Time
	skew      *hist.Durations
	skew0     uint64 // zeros not yet handed to skew (see Skew): every value on the sim
	// holdFrom and holdUntil hold timers after a driver stall (Resumed): until
	// holdUntil, only timers due by holdFrom fire on the grace.
	holdFrom, holdUntil units.Time
}

// ErrConfig wraps configuration errors.
var ErrConfig = errors.New("hostd: bad configuration")

// MinMTU is the smallest MTU a host accepts: an ACK with every SACK block and INT slot
// must fit.
const MinMTU = wire.IPv4Len + wire.UDPLen + wire.HeaderLen + wire.MaxSack*wire.SackLen + wire.MaxHops*wire.HopLen + 64

// DefaultMTU is a host's MTU when its Config gives none.
const DefaultMTU = 1500

// New builds a host. A zero cfg.MTU means DefaultMTU.
func New(cfg Config, opts Options) (*Host, error) {
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	switch {
	case !cfg.Addr.Is4():
		return nil, fmt.Errorf("%w: host %q: address must be IPv4, got %v", ErrConfig, cfg.Name, cfg.Addr)
	case cfg.Rate <= 0:
		return nil, fmt.Errorf("%w: host %q: rate must be > 0 bit/s, got %v", ErrConfig, cfg.Name, cfg.Rate)
	case cfg.MTU < MinMTU || cfg.MTU > 65535:
		return nil, fmt.Errorf("%w: host %q: mtu must be in [%d, 65535] bytes, got %d", ErrConfig, cfg.Name, MinMTU, cfg.MTU)
	}
	if opts.Tuning == (transport.Tuning{}) {
		opts.Tuning = transport.DefaultTuning()
	}
	if err := opts.Tuning.Validate(); err != nil {
		return nil, fmt.Errorf("%w: host %q: %v", ErrConfig, cfg.Name, err)
	}
	if opts.MPDUnit < 0 {
		return nil, fmt.Errorf("%w: host %q: mpd unit must be ≥ 0, got %v", ErrConfig, cfg.Name, opts.MPDUnit)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.TimerGrace < 0 {
		return nil, fmt.Errorf("%w: host %q: timer grace must be ≥ 0, got %v", ErrConfig, cfg.Name, opts.TimerGrace)
	}
	if opts.Snap != 0 && (opts.Snap < wire.MinSnap || opts.Snap > cfg.MTU+wire.EthLen) {
		return nil, fmt.Errorf("%w: host %q: snap must be 0 (whole frames) or in [%d, %d] bytes, got %d",
			ErrConfig, cfg.Name, wire.MinSnap, cfg.MTU+wire.EthLen, opts.Snap)
	}
	h := &Host{cfg: cfg, opts: opts, log: log, byID: map[uint32]*flow{}, rx: map[rxKey]*rxEntry{},
		timerMin: units.Never, readyMin: units.Never, stopMin: units.Never, skew: new(hist.Durations), holdFrom: units.Never,
		scratch: transport.NewScratch()}
	size := cfg.MTU + wire.EthLen
	if opts.Snap > 0 {
		size = opts.Snap
	}
	for i := range h.bufs {
		h.bufs[i] = make([]byte, size)
	}
	return h, nil
}

// Config returns the host's configuration.
func (h *Host) Config() Config { return h.cfg }

// FlowEnv is the cc.Env for a flow of this host with hopCap INT slots (Config.FlowEnv).
func (h *Host) FlowEnv(hopCap int) cc.Env { return h.cfg.FlowEnv(hopCap) }

// FlowEnv is the cc.Env for a flow of a host with this configuration and hopCap INT
// slots: MSS and packet size follow from the MTU (DefaultMTU when 0), the line rate
// from the NIC. The caller fills BaseRTT, NetworkRTT, PathHops and Rand.
func (c Config) FlowEnv(hopCap int) cc.Env {
	mtu := c.MTU
	if mtu == 0 {
		mtu = DefaultMTU
	}
	mss := transport.MSS(mtu, hopCap)
	return cc.Env{MSS: mss, PacketSize: units.Bytes(transport.DataFrameLen(mss, hopCap)), LineRate: c.Rate}
}

// AddFlow registers a flow this host sends. It fails, creating nothing, on a bad spec.
func (h *Host) AddFlow(spec FlowSpec) error {
	if _, dup := h.byID[spec.ID]; dup {
		return fmt.Errorf("hostd: host %q: flow id %d used twice", h.cfg.Name, spec.ID)
	}
	switch {
	case spec.Start < 0:
		return fmt.Errorf("hostd: flow %d: start must be ≥ 0, got %v", spec.ID, spec.Start)
	case spec.Stop != 0 && spec.Stop < spec.Start:
		return fmt.Errorf("hostd: flow %d: stop (%v) before start (%v)", spec.ID, spec.Stop, spec.Start)
	case spec.Dst == h.cfg.Addr:
		return fmt.Errorf("hostd: flow %d: destination %v is this host", spec.ID, spec.Dst)
	case h.opts.Snap > 0 && wire.MaxHeaders(spec.HopCap) > h.opts.Snap:
		return fmt.Errorf("hostd: flow %d: its headers (%d bytes with %d INT slots) do not fit the host's snap of %d bytes",
			spec.ID, wire.MaxHeaders(spec.HopCap), spec.HopCap, h.opts.Snap)
	}
	alg := spec.Alg
	if alg == nil {
		if spec.NewAlg == nil {
			return fmt.Errorf("hostd: flow %d: no congestion control (Alg or NewAlg)", spec.ID)
		}
		a, err := spec.NewAlg()
		if err != nil {
			return fmt.Errorf("hostd: flow %d: %w", spec.ID, err)
		}
		alg = a
	}
	f := &flow{spec: spec, cnp: spec.CNPInterval}
	if r, ok := alg.(CNPRequester); ok && f.cnp == 0 {
		f.cnp = r.CNPInterval()
	}
	if err := h.senderConfig(f, alg).Validate(); err != nil {
		return fmt.Errorf("hostd: flow %d: %w", spec.ID, err)
	}
	h.flows = append(h.flows, f)
	h.byID[spec.ID] = f
	// Keep waiting sorted by start (stable): most callers add in start order, which
	// appends.
	w := h.waiting[h.waitHead:]
	i, _ := slices.BinarySearchFunc(w, spec.Start, func(g *flow, t units.Time) int {
		if g.spec.Start <= t {
			return -1
		}
		return 1
	})
	h.waiting = slices.Insert(h.waiting, h.waitHead+i, f)
	return nil
}

// senderConfig is the configuration of f's sender with algorithm alg.
func (h *Host) senderConfig(f *flow, alg cc.Algorithm) *transport.SenderConfig {
	sp := &f.spec
	return &transport.SenderConfig{
		FlowID: sp.ID,
		Addrs: wire.Addrs{SrcMAC: h.cfg.MAC, DstMAC: h.cfg.GatewayMAC, Src: h.cfg.Addr, Dst: sp.Dst,
			SrcPort: SrcPort(sp.ID)},
		Size: sp.Size, MSS: transport.MSS(h.cfg.MTU, sp.HopCap), HopCap: sp.HopCap, LineRate: h.cfg.Rate,
		Ack: sp.Ack, MPDUnit: h.opts.MPDUnit, InitRTT: sp.BaseRTT, Tuning: h.opts.Tuning, Alg: alg,
		CNPInterval: f.cnp, Scratch: h.scratch,
	}
}

// startSender builds f's sender as the flow starts, and its algorithm unless the spec
// gave one. Both built when AddFlow checked them, so they fail only if NewAlg does not
// build the same algorithm every time: the flow then does not start.
func (h *Host) startSender(f *flow) bool {
	alg := f.spec.Alg
	if alg == nil {
		a, err := f.spec.NewAlg()
		if err != nil {
			h.log.Error("flow not started: its algorithm failed", "host", h.cfg.Name, "flow", f.spec.ID, "err", err)
			return false
		}
		alg = a
	}
	snd, err := transport.NewSender(*h.senderConfig(f, alg))
	if err != nil {
		h.log.Error("flow not started", "host", h.cfg.Name, "flow", f.spec.ID, "err", err)
		return false
	}
	f.snd = snd
	return true
}

// SrcPort is the UDP source port flow id starts with: it spreads flows over the
// ephemeral port range, the flow's ECMP entropy (an algorithm that repaths moves it).
func SrcPort(id uint32) uint16 { return 49152 + uint16((id*2654435761)>>18)&0x3fff }

// Receive hands the host a frame that arrived at now. The host copies what it keeps.
// now may be earlier than times the host has already acted at (a driver that read the
// frame late): the frame is handled as arriving at now all the same, and Skew records
// how stale the host's decisions since then were.
func (h *Host) Receive(now units.Time, port int, frame []byte) {
	h.fireTimers(now - 1) // timers due before the frame come first (already fired on time)
	if q, ok := wire.ParsePause(frame); ok {
		h.stats.Pauses++
		end := now + h.cfg.Rate.TxTime(units.Bytes(q)*64) // a quantum is 512 bit times
		if end > h.pausedUntil {
			h.stats.PausedTime += end - max(h.pausedUntil, now)
		} else if q == 0 {
			h.stats.PausedTime -= h.pausedUntil - now
		}
		if q == 0 {
			end = now
		}
		h.pausedUntil = end
		return
	}
	v, ok := wire.Classify(frame)
	if !ok || !v.IsReef() || v.Dst() != h.cfg.Addr {
		h.stats.Ignored++
		return
	}
	if !h.complete(v) {
		h.stats.Malformed++
		return
	}
	if d := h.committed - now; d > 0 {
		h.skew.Add(d)
	} else {
		h.skew0++ // not late (Add counts a negative as 0)
	}
	id := binary.BigEndian.Uint32(frame[v.Reef+wire.OffFlowID:])
	switch v.Type() {
	case wire.TypeData:
		k := rxKey{src: v.Src().As4(), id: id}
		e := h.rx[k]
		if e == nil {
			addrs := wire.Addrs{SrcMAC: h.cfg.MAC, DstMAC: h.cfg.GatewayMAC, Src: h.cfg.Addr, Dst: v.Src(),
				SrcPort: v.Key().SrcPort}
			e = &rxEntry{key: k, rcv: transport.NewReceiver(id, addrs)}
			h.rx[k] = e
			h.rxAll = append(h.rxAll, e)
		}
		if e.rcv == nil {
			e.rcv = e.closed.Reopen() // a late duplicate
		}
		e.rcv.HandlePacket(now, v)
		if !e.queued && e.rcv.NextDeadline() != units.Never {
			e.queued = true
			h.ackQ = append(h.ackQ, e)
		}
	default:
		f := h.byID[id]
		if f == nil || f.snd == nil { // unknown, not started, or finished
			h.stats.Ignored++
			return
		}
		if now < f.fired {
			h.stats.StaleTimers++
		}
		f.snd.HandlePacket(now, v)
		h.refresh(f)
		h.checkDone(f)
	}
}

func (h *Host) checkDone(f *flow) {
	if f.end != nil {
		return
	}
	if done, at := f.snd.Done(); done {
		h.anyFinished = true
		alg := f.snd.Alg()
		f.end = &flowEnd{stats: f.snd.Stats(), cwnd: alg.Window(), rate: alg.Rate(), at: at}
		f.snd, f.spec.Alg, f.spec.NewAlg = nil, nil, nil
		f.ready, f.timer = units.Never, units.Never
		c := Completion{ID: f.spec.ID, Name: f.spec.Name, Dst: f.spec.Dst, Size: f.spec.Size,
			Start: f.spec.Start, Finish: at, FCT: at - f.spec.Start}
		h.completions = append(h.completions, c)
		h.log.Debug("flow finished", "host", h.cfg.Name, "flow", f.spec.ID, "size", f.spec.Size, "fct", c.FCT)
	}
}

// complete reports whether a reef frame holds the payload its header announces
// (wire.Classify checks everything up to the INT slots): in its bytes, or, for a host
// that stores frames truncated (Options.Snap), in its length on the wire.
func (h *Host) complete(v wire.View) bool {
	r := v.Frame[v.Reef:]
	need := wire.HeaderLen + int(r[wire.OffNSack])*wire.SackLen + int(r[wire.OffHopCap])*wire.HopLen +
		int(binary.BigEndian.Uint16(r[wire.OffPayload:]))
	have := len(r)
	if h.opts.Snap > 0 {
		have = wire.FrameLen(v.Frame) - v.Reef
	}
	return have >= need
}
