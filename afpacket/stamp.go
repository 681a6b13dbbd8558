package afpacket

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StampSpace is the room a receive's control messages need for the kernel's receive
// timestamp (ReceiveStamp).
var StampSpace = unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))

// StampReceives makes the kernel stamp every packet socket fd receives with its
// CLOCK_REALTIME receive time (SO_TIMESTAMPNS), which ReceiveStamp reads back. A
// program that reads late (a busy machine, the Go scheduler handing a wakeup from
// thread to thread) then still knows when each packet arrived.
func StampReceives(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
}

// ReceiveStamp returns the kernel's receive time from a receive's control messages
// (see StampReceives), and false when they hold none.
func ReceiveStamp(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return time.Unix(ts.Unix()), true
		}
	}
	return time.Time{}, false
}
