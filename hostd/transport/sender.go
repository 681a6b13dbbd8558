package transport

import (
	"errors"
	"fmt"

	"reef/cc"
	"reef/units"
	"reef/wire"
)

// SenderConfig describes the sending side of one flow.
type SenderConfig struct {
	// FlowID identifies the flow on the wire (unique per source host).
	FlowID uint32
	// Addrs are the frame addresses (source MAC/IP this host, destination MAC the
	// gateway, SrcPort the flow's ECMP entropy).
	Addrs wire.Addrs
	// Size is the flow's payload in bytes; 0 means long-lived (never ends).
	Size units.Bytes
	// MSS is the payload of a full data packet (see MSS).
	MSS units.Bytes
	// HopCap is the number of INT hop slots each data packet reserves (0..wire.MaxHops).
	HopCap int
	// LineRate is the host NIC rate, used to take serialisation out of FabricDelay.
	LineRate units.Rate
	// Ack is the ACK policy the receiver is asked to follow.
	Ack AckPolicy
	// CNPInterval, when > 0, asks the receiver for DCQCN congestion notification packets:
	// one for a CE-marked data packet, at most one per CNPInterval (at most
	// MaxCNPInterval, carried with 1µs resolution).
	CNPInterval units.Time
	// MPDUnit is the lab's Poseidon MPD unit; 0 means the fabric stamps no MPD.
	MPDUnit units.Time
	// InitRTT is the RTT assumed before the first sample (sub-packet pacing uses it);
	// typically the path's base RTT. 0 means Tuning.InitRTO.
	InitRTT units.Time
	// Tuning holds the loss-recovery knobs.
	Tuning Tuning
	// Alg is the flow's congestion controller (a fresh instance per flow).
	Alg cc.Algorithm
	// Scratch is working space the sender uses within one call (nil: a sender of its
	// own). The senders of one host share one: a run of many flows holds it once, not
	// once per flow.
	Scratch *Scratch
}

// Scratch is a sender's working space within one call: the header it decodes into or
// builds from, and the feedback it hands its algorithm (valid only during the call,
// cc.Algorithm.OnFeedback). Senders driven by one goroutine (one host's) may share one.
type Scratch struct {
	hdr wire.Header
	fb  cc.Feedback
}

// NewScratch returns working space for senders.
func NewScratch() *Scratch {
	return &Scratch{hdr: wire.Header{Sacks: make([]wire.SackBlock, 0, wire.MaxSack), Hops: make([]wire.Hop, 0, wire.MaxHops)}}
}

// Validate checks the configuration.
func (c *SenderConfig) Validate() error {
	switch {
	case c.Alg == nil:
		return errors.New("transport: sender needs a cc.Algorithm")
	case c.MSS <= 0 || c.MSS > 0xffff:
		return fmt.Errorf("transport: mss must be in [1, 65535] bytes, got %d", c.MSS)
	case c.HopCap < 0 || c.HopCap > wire.MaxHops:
		return fmt.Errorf("transport: int hop slots must be in [0, %d], got %d", wire.MaxHops, c.HopCap)
	case c.Size < 0:
		return fmt.Errorf("transport: flow size must be ≥ 0 bytes, got %d", c.Size)
	case !c.Addrs.Src.Is4() || !c.Addrs.Dst.Is4():
		return fmt.Errorf("transport: addresses must be IPv4, got %v → %v", c.Addrs.Src, c.Addrs.Dst)
	}
	if c.CNPInterval < 0 || c.CNPInterval > MaxCNPInterval {
		return fmt.Errorf("transport: cnp interval must be in [0, %v], got %v", MaxCNPInterval, c.CNPInterval)
	}
	if err := c.Ack.Validate(); err != nil {
		return err
	}
	return c.Tuning.Validate()
}

// Packet states in the sender's ring.
const (
	stInflight uint8 = iota + 1
	stLost           // declared lost, waiting for its retransmission
	stAcked
)

type sentPkt struct {
	sent  units.Time // last transmission
	size  int32      // payload bytes
	state uint8
	retx  uint8 // transmissions beyond the first (saturating)
}

// Sender timers (a fixed table, as quinn's TimerTable).
const (
	timerRTO = iota
	timerRACK
	nTimers
)

// Repather is implemented by algorithms that can ask for a new path (Protective Load
// Balancing). After every ACK and timeout the sender asks Repath; on true it moves the
// flow to a new UDP source port, so ECMP hashes it onto another path.
type Repather interface {
	Repath() bool
}

// Sender is the sending side of one flow. Not safe for concurrent use.
type Sender struct {
	cfg    SenderConfig
	alg    cc.Algorithm
	repath Repather // nil when the algorithm never repaths

	totalPkts uint64 // 0 for long-lived flows
	stopped   bool   // no new data (Stop)

	// Packet ring: ring[s&mask] describes packet s for una ≤ s < nxt.
	ring []sentPkt
	mask uint64
	una  uint64 // lowest packet not yet acknowledged
	nxt  uint64 // next new packet number
	high uint64 // one above the highest packet acknowledged

	inflight units.Bytes
	retxQ    []uint64 // packets declared lost, in order of declaration
	retxHead int
	probe    bool // an RTO probe may go out past the window

	lastSend units.Time
	lastLen  int
	// notBefore is the time of the last event that may have unblocked the sender: it
	// cannot send earlier than that.
	notBefore units.Time
	sentAny   bool

	// RTT estimator (RFC 6298) and RACK state.
	srtt, rttvar, minRTT, lastRTT units.Time
	varMax, margin                units.Time // Linux's mdev_max and rttvar (4·rttvar units)
	rttSeq                        uint64     // the packet that ends the current RTT
	rto                           units.Time
	backoff                       int
	rackXmit, rackRTT             units.Time
	reoMult                       int
	timers                        [nTimers]units.Time

	sc     *Scratch
	done   bool
	doneAt units.Time

	stats SenderStats
}

// SenderStats are the counters and estimates of one Sender.
type SenderStats struct {
	// BytesSent counts payload bytes put on the wire (retransmissions included);
	// BytesAcked payload bytes acknowledged (each once).
	BytesSent, BytesAcked units.Bytes
	// PacketsSent counts data packets sent, Retransmits the retransmissions among them,
	// Spurious the retransmissions later shown unnecessary (the original arrived),
	// Timeouts the RTO expiries, Lost the packets RACK declared lost.
	PacketsSent, Retransmits, Spurious, Timeouts, Lost uint64
	// AcksReceived counts ACKs processed; Malformed the packets dropped as malformed.
	AcksReceived, Malformed uint64
	// Repaths counts path changes the algorithm asked for (PLB).
	Repaths uint64
	// RTT estimates: the last sample, the minimum and the smoothed value.
	LastRTT, MinRTT, SRTT units.Time
	// FabricDelay and MPD (forward max-per-hop delay) from the last ACK.
	FabricDelay, MPD units.Time
	// Inflight is the payload in flight now.
	Inflight units.Bytes
}

// NewSender builds the sending side of a flow.
func NewSender(cfg SenderConfig) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Before the first sample the timeout is InitRTO, but at least three base RTTs.
	rto0 := min(max(cfg.Tuning.InitRTO, 3*cfg.InitRTT), cfg.Tuning.MaxRTO)
	s := &Sender{cfg: cfg, alg: cfg.Alg, rto: rto0, reoMult: 1}
	s.repath, _ = cfg.Alg.(Repather)
	if cfg.Size > 0 {
		s.totalPkts = uint64((cfg.Size + cfg.MSS - 1) / cfg.MSS)
	}
	// The packet ring comes with the first packet sent (grow): a run of many flows
	// builds them all up front, and holds rings only for those that have started.
	s.retxQ = make([]uint64, 0, 16)
	if s.sc = cfg.Scratch; s.sc == nil {
		s.sc = NewScratch()
	}
	for i := range s.timers {
		s.timers[i] = units.Never
	}
	return s, nil
}

// Stop ends new data: packets already sent are still recovered.
func (s *Sender) Stop() { s.stopped = true }

// Done reports whether a finite flow has been fully acknowledged, and when.
func (s *Sender) Done() (bool, units.Time) { return s.done, s.doneAt }

// Stats returns a snapshot of the counters.
func (s *Sender) Stats() SenderStats {
	st := s.stats
	st.LastRTT, st.MinRTT, st.SRTT, st.Inflight = s.lastRTT, s.minRTT, s.srtt, s.inflight
	return st
}

// Alg returns the flow's congestion controller.
func (s *Sender) Alg() cc.Algorithm { return s.alg }

// NextDeadline is the earliest time at which PollTransmit may return a frame or
// HandleTimeout has work; units.Never when idle.
func (s *Sender) NextDeadline() units.Time {
	return min(s.TimerDeadline(), s.SendReadyAt())
}

// TimerDeadline is the earliest timer (RTO, RACK reorder timer, the algorithm's own).
func (s *Sender) TimerDeadline() units.Time {
	t := s.alg.Deadline()
	for _, x := range s.timers {
		t = min(t, x)
	}
	return t
}

// HandleTimeout runs the timers that are due at now.
func (s *Sender) HandleTimeout(now units.Time) {
	s.notBefore = max(s.notBefore, now)
	if s.timers[timerRACK] <= now {
		s.timers[timerRACK] = units.Never
		if lost := s.detectLoss(now); lost > 0 {
			s.alg.OnLoss(now, lost)
		}
	}
	if s.timers[timerRTO] <= now {
		s.onRTO(now)
	}
	if s.alg.Deadline() <= now {
		s.alg.OnDeadline(now)
	}
	s.maybeRepath()
}

// HandlePacket processes a reef frame for this flow (an ACK or a CNP). Malformed or
// unrelated packets are counted and dropped.
func (s *Sender) HandlePacket(now units.Time, v wire.View) {
	h := &s.sc.hdr
	if !v.IsReef() || h.Decode(v.Frame[v.Reef:]) != nil || h.FlowID != s.cfg.FlowID {
		s.stats.Malformed++
		return
	}
	s.notBefore = max(s.notBefore, now)
	switch h.Type {
	case wire.TypeAck:
		s.onAck(now, h, len(v.Frame))
	case wire.TypeCNP:
		fb := &s.sc.fb
		*fb = cc.Feedback{Kind: cc.CNP, ECE: true, Inflight: s.inflight, NextSeq: s.nxt}
		if h.EchoTS > 0 && units.Time(h.EchoTS) <= now {
			fb.SendTime = units.Time(h.EchoTS)
			fb.RTT = now - fb.SendTime
		}
		s.alg.OnFeedback(now, fb)
	default:
		s.stats.Malformed++
	}
}

// pkt returns the ring entry of packet seq (una ≤ seq < nxt).
func (s *Sender) pkt(seq uint64) *sentPkt { return &s.ring[seq&s.mask] }

// grow doubles the packet ring (the first one holds 64 packets).
func (s *Sender) grow() {
	n := max(len(s.ring)*2, 64)
	ring := make([]sentPkt, n)
	for q := s.una; q < s.nxt; q++ {
		ring[q&uint64(n-1)] = s.ring[q&s.mask]
	}
	s.ring, s.mask = ring, uint64(n-1)
}

func (s *Sender) payloadOf(seq uint64) units.Bytes {
	if s.totalPkts > 0 && seq == s.totalPkts-1 {
		return s.cfg.Size - units.Bytes(seq)*s.cfg.MSS
	}
	return s.cfg.MSS
}

// maybeRepath moves the flow to a new source port if the algorithm asks for it.
func (s *Sender) maybeRepath() {
	if s.repath == nil || !s.repath.Repath() {
		return
	}
	s.stats.Repaths++
	old := s.cfg.Addrs.SrcPort
	for k := uint32(0); s.cfg.Addrs.SrcPort == old; k++ {
		x := (s.cfg.FlowID*2654435761 ^ uint32(s.stats.Repaths+uint64(k))*2246822519) * 3266489917
		s.cfg.Addrs.SrcPort = 49152 + uint16(x>>18)&0x3fff
	}
}
