// Package wire defines reef's packet format, shared by the switch pipeline (switchd), the
// host transport (hostd) and the trace tools: Ethernet + IPv4 + UDP to a fixed port, then
// the reef header, optional SACK blocks, an optional per-hop INT stack, and the payload.
//
// Everything in a reef packet is ordinary IPv4/UDP, so a switch that does not know reef
// (or a reef switch with INT off) forwards it untouched and ECMP hashes it on the
// 5-tuple as on a real fabric. The reef header layout (big endian, 56 bytes):
//
//	off size field
//	0   1    Type        (TypeData, TypeAck, TypeCNP)
//	1   1    Flags       (FlagECE, FlagINT, FlagRetx, FlagFin, FlagMPDSeen,
//	                     FlagEchoMPDSeen)
//	2   2    MPD         Poseidon max-per-hop queueing delay on this packet's own path,
//	                     in units of the lab's MPD unit, saturating at 0xffff
//	4   4    FlowID
//	8   8    Seq         packet number (data); highest packet number covered (ack)
//	16  8    Ack         cumulative ack: every packet number below it has arrived;
//	                     (data) receiver hints: ACK policy and CNP interval, see
//	                     hostd/transport
//	24  8    TS          sender's transmit time, ns since the run started
//	32  8    EchoTS      (ack) the TS of the data packet being acknowledged
//	40  4    Turnaround  (ack) ns the receiver held that data packet
//	44  4    Inflight    (data) sender's bytes in flight; (ack) echoed back
//	48  2    EchoMPD     (ack) the MPD field of the data packet being acknowledged
//	50  1    NSack       number of SACK blocks that follow
//	51  1    HopCap      INT hop slots reserved after the SACK blocks
//	52  1    NHops       INT hop slots filled by switches (≤ HopCap)
//	53  1    PathHops    (ack) switches on the data packet's path, from its TTL
//	54  2    PayloadLen  payload bytes after the header, SACK blocks and hop slots
//	56  16×NSack  SACK blocks: [Start, End) packet numbers, 8 bytes each
//	..  24×HopCap INT hop records (Hop)
//	..  PayloadLen payload
//
// docs/wire.md is the format's specification, with worked examples, for people who
// write their own transport; TestWireDoc keeps it in step with this package.
//
// INT hop slots are reserved by the sender (HopCap) and filled in place by switches, so a
// switch never changes a packet's length or moves its payload. The UDP checksum is 0
// (legal in IPv4): switches rewrite reef fields without touching it.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Frame layout constants.
const (
	EthLen  = 14
	IPv4Len = 20 // reef always sends IPv4 headers without options
	UDPLen  = 8
	// HeaderLen is the fixed part of the reef header.
	HeaderLen = 56
	// SackLen and HopLen are the sizes of one SACK block and one INT hop record.
	SackLen = 16
	HopLen  = 24
	// MaxSack and MaxHops bound the variable parts.
	MaxSack = 4
	MaxHops = 8
	// Port is the UDP destination port of the reef transport.
	Port = 5140
	// ReefOffset is where the reef header starts in an Ethernet frame.
	ReefOffset = EthLen + IPv4Len + UDPLen
	// Overhead is the bytes a data packet without SACK or INT slots adds to its payload,
	// Ethernet header included.
	Overhead = ReefOffset + HeaderLen
	// MinSnap is the fewest bytes of a frame a backend that stores frames truncated
	// (BuildTruncated, FrameLen) may keep: the headers of a reef packet without INT
	// slots and with every SACK block (MaxHeaders(0)).
	MinSnap = ReefOffset + HeaderLen + MaxSack*SackLen
	// DefaultTTL is the TTL hosts send with; PathHops = DefaultTTL - received TTL.
	DefaultTTL = 64
)

// EtherTypeIPv4 is the Ethernet type of IPv4.
const EtherTypeIPv4 = 0x0800

// Packet types.
const (
	TypeData uint8 = 1
	TypeAck  uint8 = 2
	TypeCNP  uint8 = 3
)

// Flags.
const (
	// FlagECE (ack) echoes a CE mark on the acknowledged data packet.
	FlagECE uint8 = 1 << 0
	// FlagINT asks INT switches in hpcc mode to fill hop slots.
	FlagINT uint8 = 1 << 1
	// FlagRetx marks a retransmitted data packet.
	FlagRetx uint8 = 1 << 2
	// FlagFin marks the last packet of a message.
	FlagFin uint8 = 1 << 3
	// FlagMPDSeen is set by every INT switch in mpd mode that stamps the packet, so a
	// receiver can tell "MPD 0 from an INT hop with no queue" from "no INT hop on this
	// path" (Poseidon's brownfield fallback needs the difference).
	FlagMPDSeen uint8 = 1 << 4
	// FlagEchoMPDSeen (ack) echoes FlagMPDSeen of the acknowledged data packet: its
	// EchoMPD came from at least one INT switch. The ACK's own FlagMPDSeen describes
	// the reverse path.
	FlagEchoMPDSeen uint8 = 1 << 5
)

// Field offsets inside the reef header, for code that patches packets in place.
const (
	OffType     = 0
	OffFlags    = 1
	OffMPD      = 2
	OffFlowID   = 4
	OffSeq      = 8
	OffAck      = 16
	OffTS       = 24
	OffEchoTS   = 32
	OffTurn     = 40
	OffInflight = 44
	OffEchoMPD  = 48
	OffNSack    = 50
	OffHopCap   = 51
	OffNHops    = 52
	OffPathHops = 53
	OffPayload  = 54
)

// ECN codepoints (the low two bits of the IPv4 TOS byte).
const (
	NotECT = 0
	ECT1   = 1
	ECT0   = 2
	CE     = 3
)

// Hop is one INT record stamped by a switch in hpcc mode, as HPCC and PowerTCP read it.
type Hop struct {
	// TS is the switch's (computed) departure time of the packet in ns of the lab's time:
	// since the run began on sim; on netns since the lab's epoch (CLOCK_MONOTONIC when
	// the lab came up, shared by all its switches), which is earlier than the run's time
	// zero. Only differences between records mean anything to HPCC and PowerTCP.
	TS int64
	// TxBytes is the egress port's cumulative transmitted bytes, this packet included.
	TxBytes uint64
	// QLen is the egress queue's backlog in bytes when the packet was dequeued, at the
	// start of its serialisation: the packet itself and what arrived while it was on the
	// wire are not counted (HPCC's reference switch and INT hardware read it there).
	QLen uint32
	// RateKbps is the egress link rate in kbit/s.
	RateKbps uint32
}

// SackBlock acknowledges packet numbers [Start, End).
type SackBlock struct{ Start, End uint64 }

// Header is the decoded reef header.
type Header struct {
	Type       uint8
	Flags      uint8
	MPD        uint16
	FlowID     uint32
	Seq        uint64
	Ack        uint64
	TS         int64
	EchoTS     int64
	Turnaround uint32
	Inflight   uint32
	EchoMPD    uint16
	HopCap     uint8
	PathHops   uint8
	PayloadLen uint16
	Sacks      []SackBlock
	Hops       []Hop // the filled slots only
}

// Len is the encoded length of h (fixed header, SACK blocks, all HopCap slots), without
// the payload.
func (h *Header) Len() int { return HeaderLen + len(h.Sacks)*SackLen + int(h.HopCap)*HopLen }

// Errors returned by Parse.
var (
	ErrShort   = errors.New("wire: packet too short")
	ErrNotReef = errors.New("wire: not a reef packet")
	ErrBadType = errors.New("wire: unknown reef packet type")
	ErrBadLen  = errors.New("wire: inconsistent lengths")
)

// Encode writes h into b (which must hold h.Len() bytes) and returns the bytes written.
// Hop slots beyond len(h.Hops) are zeroed.
func (h *Header) Encode(b []byte) (int, error) {
	n := h.Len()
	if len(h.Sacks) > MaxSack || int(h.HopCap) > MaxHops || len(h.Hops) > int(h.HopCap) {
		return 0, fmt.Errorf("wire: %d SACK blocks, %d/%d hops: over the limits", len(h.Sacks), len(h.Hops), h.HopCap)
	}
	if len(b) < n {
		return 0, ErrShort
	}
	b[OffType] = h.Type
	b[OffFlags] = h.Flags
	be.PutUint16(b[OffMPD:], h.MPD)
	be.PutUint32(b[OffFlowID:], h.FlowID)
	be.PutUint64(b[OffSeq:], h.Seq)
	be.PutUint64(b[OffAck:], h.Ack)
	be.PutUint64(b[OffTS:], uint64(h.TS))
	be.PutUint64(b[OffEchoTS:], uint64(h.EchoTS))
	be.PutUint32(b[OffTurn:], h.Turnaround)
	be.PutUint32(b[OffInflight:], h.Inflight)
	be.PutUint16(b[OffEchoMPD:], h.EchoMPD)
	b[OffNSack] = uint8(len(h.Sacks))
	b[OffHopCap] = h.HopCap
	b[OffNHops] = uint8(len(h.Hops))
	b[OffPathHops] = h.PathHops
	be.PutUint16(b[OffPayload:], h.PayloadLen)
	off := HeaderLen
	for _, s := range h.Sacks {
		be.PutUint64(b[off:], s.Start)
		be.PutUint64(b[off+8:], s.End)
		off += SackLen
	}
	for i := 0; i < int(h.HopCap); i++ {
		var hop Hop
		if i < len(h.Hops) {
			hop = h.Hops[i]
		}
		PutHop(b[off:], hop)
		off += HopLen
	}
	return n, nil
}

// Decode parses the reef header at the start of b into h, reusing h.Sacks and h.Hops.
// It checks every length against b, the payload's included, and never panics.
func (h *Header) Decode(b []byte) error {
	if err := h.DecodeTruncated(b); err != nil {
		return err
	}
	if len(b) < h.Len()+int(h.PayloadLen) {
		return ErrShort
	}
	return nil
}

// DecodeTruncated is Decode for a packet that may be held truncated after its headers
// (see FrameLen): the payload need not be in b. It never panics.
func (h *Header) DecodeTruncated(b []byte) error {
	if len(b) < HeaderLen {
		return ErrShort
	}
	h.Type = b[OffType]
	if h.Type < TypeData || h.Type > TypeCNP {
		return ErrBadType
	}
	h.Flags = b[OffFlags]
	h.MPD = be.Uint16(b[OffMPD:])
	h.FlowID = be.Uint32(b[OffFlowID:])
	h.Seq = be.Uint64(b[OffSeq:])
	h.Ack = be.Uint64(b[OffAck:])
	h.TS = int64(be.Uint64(b[OffTS:]))
	h.EchoTS = int64(be.Uint64(b[OffEchoTS:]))
	h.Turnaround = be.Uint32(b[OffTurn:])
	h.Inflight = be.Uint32(b[OffInflight:])
	h.EchoMPD = be.Uint16(b[OffEchoMPD:])
	nsack, hopcap, nhops := int(b[OffNSack]), int(b[OffHopCap]), int(b[OffNHops])
	h.HopCap = uint8(hopcap)
	h.PathHops = b[OffPathHops]
	h.PayloadLen = be.Uint16(b[OffPayload:])
	if nsack > MaxSack || hopcap > MaxHops || nhops > hopcap {
		return ErrBadLen
	}
	if len(b) < HeaderLen+nsack*SackLen+hopcap*HopLen {
		return ErrShort
	}
	h.Sacks = h.Sacks[:0]
	off := HeaderLen
	for i := 0; i < nsack; i++ {
		h.Sacks = append(h.Sacks, SackBlock{be.Uint64(b[off:]), be.Uint64(b[off+8:])})
		off += SackLen
	}
	h.Hops = h.Hops[:0]
	for i := 0; i < nhops; i++ {
		h.Hops = append(h.Hops, GetHop(b[off:]))
		off += HopLen
	}
	return nil
}

// hopOffQLen is the offset of QLen in a hop record.
const hopOffQLen = 16

// PutHop writes one hop record into b[:HopLen].
func PutHop(b []byte, h Hop) {
	be.PutUint64(b[0:], uint64(h.TS))
	be.PutUint64(b[8:], h.TxBytes)
	be.PutUint32(b[hopOffQLen:], h.QLen)
	be.PutUint32(b[20:], h.RateKbps)
}

// GetHop reads one hop record from b[:HopLen].
func GetHop(b []byte) Hop {
	return Hop{TS: int64(be.Uint64(b[0:])), TxBytes: be.Uint64(b[8:]), QLen: be.Uint32(b[hopOffQLen:]), RateKbps: be.Uint32(b[20:])}
}

var be = binary.BigEndian

// Addrs are the link- and network-layer addresses of one frame.
type Addrs struct {
	SrcMAC, DstMAC [6]byte
	Src, Dst       netip.Addr
	SrcPort        uint16 // the flow's entropy for ECMP; DstPort is always Port
}

// Key is the 5-tuple of the frames BuildFrame builds with a: what a switch hashes.
func (a Addrs) Key() FlowKey {
	return FlowKey{Src: a.Src.As4(), Dst: a.Dst.As4(), Proto: 17, SrcPort: a.SrcPort, DstPort: Port}
}

// BuildFrame writes a complete Ethernet/IPv4/UDP/reef frame into buf: the headers, h, and
// int(h.PayloadLen) payload bytes (left as they are in buf; reef payloads carry no user
// data unless the caller writes some after). ecn is the IPv4 ECN codepoint. It returns
// the frame length.
func BuildFrame(buf []byte, a Addrs, ecn uint8, h *Header) (int, error) {
	n := ReefOffset + h.Len() + int(h.PayloadLen)
	if len(buf) < n {
		return 0, fmt.Errorf("wire: frame of %d bytes does not fit a %d-byte buffer", n, len(buf))
	}
	return BuildTruncated(buf, a, ecn, h)
}

// BuildTruncated is BuildFrame into a buffer that need only hold the headers: the
// payload's bytes beyond len(buf) are not stored, and the frame is held truncated (see
// FrameLen). It returns the frame's length on the wire, which may exceed len(buf).
// Backends whose payloads carry nothing (the sim) store their frames so.
func BuildTruncated(buf []byte, a Addrs, ecn uint8, h *Header) (int, error) {
	n := ReefOffset + h.Len() + int(h.PayloadLen)
	if len(buf) < ReefOffset+h.Len() {
		return 0, fmt.Errorf("wire: headers of %d bytes do not fit a %d-byte buffer", ReefOffset+h.Len(), len(buf))
	}
	if !a.Src.Is4() || !a.Dst.Is4() {
		return 0, fmt.Errorf("wire: reef runs over IPv4, got %v → %v", a.Src, a.Dst)
	}
	copy(buf[0:6], a.DstMAC[:])
	copy(buf[6:12], a.SrcMAC[:])
	be.PutUint16(buf[12:], EtherTypeIPv4)
	ip := buf[EthLen : EthLen+IPv4Len]
	ip[0] = 0x45
	ip[1] = ecn & 3
	be.PutUint16(ip[2:], uint16(n-EthLen))
	be.PutUint32(ip[4:], 0x00004000) // id 0, DF
	ip[8] = DefaultTTL
	ip[9] = 17 // UDP
	ip[10], ip[11] = 0, 0
	s, d := a.Src.As4(), a.Dst.As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	be.PutUint16(ip[10:], IPv4Checksum(ip))
	udp := buf[EthLen+IPv4Len : ReefOffset]
	be.PutUint16(udp[0:], a.SrcPort)
	be.PutUint16(udp[2:], Port)
	be.PutUint16(udp[4:], uint16(n-EthLen-IPv4Len))
	be.PutUint16(udp[6:], 0)
	if _, err := h.Encode(buf[ReefOffset:]); err != nil {
		return 0, err
	}
	return n, nil
}

// MaxHeaders is the most a reef frame's headers take with hopCap INT slots: what a
// frame held truncated must keep.
func MaxHeaders(hopCap int) int { return MinSnap + hopCap*HopLen }

// FrameLen is the length on the wire of the Ethernet frame frame holds: len(frame), or,
// for an IPv4 frame held truncated (its total length reaching beyond frame, as the sim
// stores frames: headers only), the Ethernet header plus its IPv4 total length. (Bytes
// a frame carries after its IPv4 packet, padding, count only while it is held whole:
// reef pads no frame that a backend holds truncated.) It never panics.
func FrameLen(frame []byte) int {
	if len(frame) < EthLen+IPv4Len || be.Uint16(frame[12:]) != EtherTypeIPv4 {
		return len(frame)
	}
	return max(len(frame), EthLen+int(be.Uint16(frame[EthLen+2:])))
}

// IPv4Checksum computes the header checksum of ip (with its checksum field zeroed or
// not: a correct header sums to zero, so callers zero the field first when building).
func IPv4Checksum(ip []byte) uint16 {
	ihl := int(ip[0]&0x0f) * 4
	var sum uint32
	for i := 0; i+1 < ihl; i += 2 {
		sum += uint32(ip[i])<<8 | uint32(ip[i+1])
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// UpdateChecksum returns the checksum after a 16-bit word of the covered data changed
// from old to new (RFC 1624, eqn. 3).
func UpdateChecksum(sum, old, new uint16) uint16 {
	s := uint32(^sum) + uint32(^old) + uint32(new)
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// View gives typed access to the reef parts of an Ethernet frame after a single
// validity check; the switch pipeline and the host use it on the hot path without
// decoding the whole header.
type View struct {
	// Frame is the whole Ethernet frame.
	Frame []byte
	// IP is the offset of the IPv4 header, Reef the offset of the reef header (0 if the
	// frame is IPv4 but not reef).
	IP, Reef int
}

// Classify reports whether frame is IPv4 (ok) and, if it is also a well-formed reef
// packet, where its reef header starts. It never panics.
func Classify(frame []byte) (v View, ok bool) {
	v.Frame = frame
	if len(frame) < EthLen+IPv4Len || be.Uint16(frame[12:]) != EtherTypeIPv4 || frame[EthLen]>>4 != 4 {
		return v, false
	}
	ihl := int(frame[EthLen]&0x0f) * 4
	if ihl < IPv4Len || len(frame) < EthLen+ihl {
		return v, false
	}
	v.IP = EthLen
	if frame[EthLen+9] != 17 || len(frame) < EthLen+ihl+UDPLen+HeaderLen {
		return v, true
	}
	udp := EthLen + ihl
	if be.Uint16(frame[udp+2:]) != Port {
		return v, true
	}
	r := udp + UDPLen
	t := frame[r+OffType]
	nsack, hopcap, nhops := int(frame[r+OffNSack]), int(frame[r+OffHopCap]), int(frame[r+OffNHops])
	if t < TypeData || t > TypeCNP || nsack > MaxSack || hopcap > MaxHops || nhops > hopcap ||
		len(frame) < r+HeaderLen+nsack*SackLen+hopcap*HopLen {
		return v, true
	}
	v.Reef = r
	return v, true
}

// IsReef reports whether the view found a reef header.
func (v View) IsReef() bool { return v.Reef != 0 }

// FlowID is a reef packet's flow ID (the view must have found a reef header).
func (v View) FlowID() uint32 { return be.Uint32(v.Frame[v.Reef+OffFlowID:]) }

// ECN returns the IPv4 ECN codepoint.
func (v View) ECN() uint8 { return v.Frame[v.IP+1] & 3 }

// SetCE marks the packet Congestion Experienced, fixing the IPv4 checksum incrementally.
// It does nothing to Not-ECT packets and reports whether it marked.
func (v View) SetCE() bool {
	ip := v.Frame[v.IP:]
	if ip[1]&3 == NotECT {
		return false
	}
	old := be.Uint16(ip[0:])
	ip[1] |= CE
	be.PutUint16(ip[10:], UpdateChecksum(be.Uint16(ip[10:]), old, be.Uint16(ip[0:])))
	return true
}

// TTL returns the IPv4 TTL.
func (v View) TTL() uint8 { return v.Frame[v.IP+8] }

// DecTTL decrements the TTL, fixing the checksum, and reports false if it had expired.
func (v View) DecTTL() bool {
	ip := v.Frame[v.IP:]
	if ip[8] <= 1 {
		return false
	}
	old := be.Uint16(ip[8:])
	ip[8]--
	be.PutUint16(ip[10:], UpdateChecksum(be.Uint16(ip[10:]), old, be.Uint16(ip[8:])))
	return true
}

// Src and Dst return the IPv4 addresses.
func (v View) Src() netip.Addr { return netip.AddrFrom4([4]byte(v.Frame[v.IP+12 : v.IP+16])) }

// Dst returns the IPv4 destination address.
func (v View) Dst() netip.Addr { return netip.AddrFrom4([4]byte(v.Frame[v.IP+16 : v.IP+20])) }

// Type returns the reef packet type (reef packets only).
func (v View) Type() uint8 { return v.Frame[v.Reef+OffType] }

// Flags returns the reef flags (reef packets only).
func (v View) Flags() uint8 { return v.Frame[v.Reef+OffFlags] }

// SetFlags ORs f into the reef flags (reef packets only).
func (v View) SetFlags(f uint8) { v.Frame[v.Reef+OffFlags] |= f }

// MPD returns the max-per-hop-delay field (reef packets only).
func (v View) MPD() uint16 { return be.Uint16(v.Frame[v.Reef+OffMPD:]) }

// SetMPD writes the max-per-hop-delay field (reef packets only).
func (v View) SetMPD(x uint16) { be.PutUint16(v.Frame[v.Reef+OffMPD:], x) }

// PushHop fills the next free INT hop slot, if any, and reports whether it did.
func (v View) PushHop(h Hop) bool {
	r := v.Frame[v.Reef:]
	n, c := int(r[OffNHops]), int(r[OffHopCap])
	if n >= c {
		return false
	}
	PutHop(r[hopAt(r, n):], h)
	r[OffNHops]++
	return true
}

// hopAt is the offset of hop slot i in r, a reef header and what follows it.
func hopAt(r []byte, i int) int { return HeaderLen + int(r[OffNSack])*SackLen + i*HopLen }

// NHops returns the number of INT hop records filled (reef packets only).
func (v View) NHops() int { return int(v.Frame[v.Reef+OffNHops]) }

// SetHopQLen rewrites the QLen of filled hop record i (reef packets only); an i out of
// range does nothing.
func (v View) SetHopQLen(i int, q uint32) {
	r := v.Frame[v.Reef:]
	if i < 0 || i >= int(r[OffNHops]) {
		return
	}
	be.PutUint32(r[hopAt(r, i)+hopOffQLen:], q)
}

// FlowKey is the 5-tuple ECMP hashes on.
type FlowKey struct {
	Src, Dst         [4]byte
	Proto            uint8
	SrcPort, DstPort uint16
}

// Key returns the frame's 5-tuple (ports are 0 for protocols without them).
func (v View) Key() FlowKey {
	ip := v.Frame[v.IP:]
	k := FlowKey{Src: [4]byte(ip[12:16]), Dst: [4]byte(ip[16:20]), Proto: ip[9]}
	l4 := v.IP + int(ip[0]&0x0f)*4
	if (k.Proto == 6 || k.Proto == 17) && len(v.Frame) >= l4+4 {
		k.SrcPort, k.DstPort = be.Uint16(v.Frame[l4:]), be.Uint16(v.Frame[l4+2:])
	}
	return k
}

// Hash is a fast, seedable hash of the 5-tuple (FNV-1a over the fields, mixed with seed).
func (k FlowKey) Hash(seed uint64) uint64 {
	h := uint64(14695981039346656037) ^ seed
	mix := func(b byte) { h ^= uint64(b); h *= 1099511628211 }
	for _, b := range k.Src {
		mix(b)
	}
	for _, b := range k.Dst {
		mix(b)
	}
	mix(k.Proto)
	mix(byte(k.SrcPort >> 8))
	mix(byte(k.SrcPort))
	mix(byte(k.DstPort >> 8))
	mix(byte(k.DstPort))
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}
