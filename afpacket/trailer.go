package afpacket

import (
	"encoding/binary"

	"reef/units"
)

// The release trailer: how a reef daemon tells the next one when a frame was due.
//
// Every IPv4 frame a driver sends carries, right after the IP packet (at byte 14 + the
// IP total length, replacing any Ethernet padding), TrailerLen bytes: the frame's Due as a
// CLOCK_MONOTONIC instant in ns (8 bytes, big endian; lab time plus the sender's epoch,
// since switches count lab time from the lab's epoch and hosts from the run's) and
// TrailerMagic (4 bytes). The IP total length
// does not cover them, so Linux stacks on hosts trim them like Ethernet padding; the
// receiving driver recognises them, strips them before the node sees the frame (the
// pipeline's byte counts, serialisation times and INT never see the trailer), and hands
// the node the carried Due as the arrival time instead of the kernel's receive stamp.
// The downstream schedule is then computed from the upstream's computed schedule, as in
// the sim, and an upstream daemon's release jitter shows as its lateness only, never as
// queueing downstream (DESIGN principle 2). Non-IPv4 frames (PFC pause, ARP) carry no
// trailer.
//
// Every lab veth therefore has a device MTU of the link's MTU + TrailerLen while hosts'
// kernels keep sending at the link's MTU (see emulator/netns DeviceMTU).
const (
	// TrailerLen is the trailer's size in bytes.
	TrailerLen = 12
	// TrailerMagic marks a trailer ("reeF" followed by a version byte would be too
	XX
	TrailerMagic uint32 = 0x524545F1
)

const (
	ethHdrLen     = 14
	etherTypeIPv4 = 0x0800
)

// ipEnd returns where frame's IPv4 packet ends (14 + IP total length), or false when
// frame is not an IPv4 frame whose packet fits in it.
func ipEnd(frame []byte) (int, bool) {
	if len(frame) < ethHdrLen+20 || binary.BigEndian.Uint16(frame[12:14]) != etherTypeIPv4 || frame[ethHdrLen]>>4 != 4 {
		return 0, false
	}
	end := ethHdrLen + int(binary.BigEndian.Uint16(frame[ethHdrLen+2:ethHdrLen+4]))
	if end < ethHdrLen+20 || end > len(frame) {
		return 0, false
	}
	return end, true
}

// PutTrailer copies frame into dst with the trailer carrying due (a CLOCK_MONOTONIC
// instant, ns) after its IP packet
// (any bytes past the IP packet are dropped) and returns the bytes written. Frames that
// are not IPv4, or for which dst has no room, are copied unchanged; ok says whether the
// trailer was written.
func PutTrailer(dst, frame []byte, due units.Time) (n int, ok bool) {
	end, isIP := ipEnd(frame)
	if !isIP || end+TrailerLen > len(dst) {
		return copy(dst, frame), false
	}
	copy(dst, frame[:end])
	binary.BigEndian.PutUint64(dst[end:], uint64(due))
	binary.BigEndian.PutUint32(dst[end+8:], TrailerMagic)
	return end + TrailerLen, true
}

// StripTrailer returns frame without its trailer and the Due it carried, or frame
// unchanged and ok false when it has none: a trailer sits exactly at the end of the IP
// packet of an IPv4 frame and ends with TrailerMagic. It never copies: the result
// aliases frame.
func StripTrailer(frame []byte) (inner []byte, due units.Time, ok bool) {
	end, isIP := ipEnd(frame)
	if !isIP || len(frame) < end+TrailerLen || binary.BigEndian.Uint32(frame[end+8:end+12]) != TrailerMagic {
		return frame, 0, false
	}
	return frame[:end:end], units.Time(binary.BigEndian.Uint64(frame[end : end+8])), true
}
