package afpacket

import (
	"net"
	"testing"
	"time"
)

// TestReceiveStamp: a datagram read with StampReceives on carries the kernel's receive
// time, between its send and its read; without it there is no stamp.
func TestReceiveStamp(t *testing.T) {
	for _, stamp := range []bool{true, false} {
		rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer rx.Close()
		if stamp {
			rc, err := rx.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var serr error
			if err := rc.Control(func(fd uintptr) { serr = StampReceives(int(fd)) }); err != nil || serr != nil {
				t.Fatal(err, serr)
			}
		}
		tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Close()
		sent := time.Now()
		if _, err := tx.Write([]byte("probe")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // read late: the stamp is still the arrival
		buf, oob := make([]byte, 16), make([]byte, StampSpace)
		_, oobn, _, _, err := rx.ReadMsgUDPAddrPort(buf, oob)
		read := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		at, ok := ReceiveStamp(oob[:oobn])
		if ok != stamp {
			t.Fatalf("stamping %v: stamp found %v", stamp, ok)
		}
		if stamp && (at.Before(sent.Add(-time.Millisecond)) || at.After(read.Add(-15*time.Millisecond))) {
			t.Fatalf("stamp %v: want between the send (%v) and well before the read (%v)", at, sent, read)
		}
	}
}
