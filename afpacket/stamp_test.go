package afpacket

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

// TestReceiveStamp: a datagram read with StampReceives on carries the kernel's receive
// time, between its send and its read; without it there is no stamp. The kernel turns
// receive stamps on for the machine a moment after the first socket asks for them (a
// deferred work item): until then a datagram is stamped when it is read, so a stamp
// taken at the read is tried again a few times.
func TestReceiveStamp(t *testing.T) {
	for _, stamp := range []bool{true, false} {
		for try := 1; ; try++ {
			late, err := probeStamp(stamp)
			if err != nil {
				t.Fatal(err)
			}
			if late == nil {
				break
			}
			if try == 5 {
				t.Fatalf("%d tries: %v", try, late)
			}
		}
	}
}

// probeStamp sends a datagram to a socket stamping receives (or not), reads it 20 ms
// later and checks its stamp. late reports a stamp taken at the read rather than the
// arrival.
func probeStamp(stamp bool) (late error, err error) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	defer rx.Close()
	if stamp {
		rc, err := rx.SyscallConn()
		if err != nil {
			return nil, err
		}
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = StampReceives(int(fd)) }); err != nil || serr != nil {
			return nil, errors.Join(err, serr)
		}
	}
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		return nil, err
	}
	defer tx.Close()
	sent := time.Now()
	if _, err := tx.Write([]byte("probe")); err != nil {
		return nil, err
	}
	time.Sleep(20 * time.Millisecond) // read late: the stamp is still the arrival
	buf, oob := make([]byte, 16), make([]byte, StampSpace)
	_, oobn, _, _, err := rx.ReadMsgUDPAddrPort(buf, oob)
	read := time.Now()
	if err != nil {
		return nil, err
	}
	at, ok := ReceiveStamp(oob[:oobn])
	if ok != stamp {
		return nil, fmt.Errorf("stamping %v: stamp found %v", stamp, ok)
	}
	if stamp && at.Before(sent.Add(-time.Millisecond)) {
		return nil, fmt.Errorf("stamp %v: before the send (%v)", at, sent)
	}
	if stamp && at.After(read.Add(-15*time.Millisecond)) {
		return fmt.Errorf("stamp %v: want well before the read (%v), at the arrival after the send (%v)", at, read, sent), nil
	}
	return nil, nil
}
