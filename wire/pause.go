package wire

// PFC pause frames (IEEE 802.1Qbb MAC control). reef uses one priority (class 0) and
// treats quanta as "pause for quanta × 512 bit times at the link rate"; quanta 0 resumes.

// EtherTypeMACControl is the Ethernet type of MAC control frames (PAUSE, PFC).
const EtherTypeMACControl = 0x8808

// PauseLen is the length of a PFC frame (without the FCS, padded to the 60-byte minimum).
const PauseLen = 60

// pfcOpcode is the PFC (per-priority pause) opcode.
const pfcOpcode = 0x0101

// pfcDst is the reserved multicast address MAC control frames are sent to.
var pfcDst = [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x01}

// BuildPause writes a PFC frame for priority 0 with the given quanta into b (at least
// PauseLen bytes) and returns its length.
func BuildPause(b []byte, src [6]byte, quanta uint16) int {
	clear(b[:PauseLen])
	copy(b[0:6], pfcDst[:])
	copy(b[6:12], src[:])
	be.PutUint16(b[12:], EtherTypeMACControl)
	be.PutUint16(b[14:], pfcOpcode)
	be.PutUint16(b[16:], 1) // priority enable vector: class 0
	be.PutUint16(b[18:], quanta)
	return PauseLen
}

// ParsePause reports whether frame is a PFC frame pausing priority 0, and its quanta.
func ParsePause(frame []byte) (quanta uint16, ok bool) {
	if len(frame) < 20 || be.Uint16(frame[12:]) != EtherTypeMACControl || be.Uint16(frame[14:]) != pfcOpcode {
		return 0, false
	}
	if be.Uint16(frame[16:])&1 == 0 {
		return 0, false
	}
	return be.Uint16(frame[18:]), true
}
