// Command udpint is a transport that is not reef's: a plain UDP sender and receiver
// that read the congestion feedback a reef fabric stamps on their packets, written from
// docs/wire.md alone (it imports no reef code). Run it in a lab's hosts:
//
//	reef up topologies/parking-lot.yaml     # switches with int: {mode: hpcc} or mpd
//	reef exec h8 -- udpint recv &
//	reef exec h1 -- udpint send -to h8 -n 5 -hops 3
//
// The sender sends data packets to UDP port 5140 with HopCap INT slots reserved (and
// FlagINT set, so switches in hpcc mode fill them); the receiver prints each packet's
// MPD and hop records and answers with an ACK that echoes them (EchoMPD and a copy of
// the records) from port 5140 too, so the reverse path stamps the ACK's own MPD; the
// sender prints what came back. UDP checksums are off (SO_NO_CHECK): switches rewrite
// reef fields without recomputing them, as docs/wire.md says.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: udpint send -to HOST [-n N] [-hops H] | udpint recv")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "send":
		fs := flag.NewFlagSet("send", flag.ExitOnError)
		to := fs.String("to", "", "receiver host or address")
		n := fs.Int("n", 5, "packets to send")
		hops := fs.Int("hops", 3, "INT hop slots to reserve (0-8)")
		port := fs.Int("port", reefPort, "UDP port of both ends")
		_ = fs.Parse(os.Args[2:])
		err = send(os.Stdout, *to, *port, *n, *hops)
	case "recv":
		fs := flag.NewFlagSet("recv", flag.ExitOnError)
		port := fs.Int("port", reefPort, "UDP port to listen on")
		count := fs.Int("n", 0, "stop after this many packets (0: never)")
		_ = fs.Parse(os.Args[2:])
		var c *net.UDPConn
		if c, err = listen(*port); err == nil {
			err = recv(os.Stdout, c, *count)
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "udpint:", err)
		os.Exit(1)
	}
}

// listen opens the UDP socket with checksums off, receiving each packet's TTL.
func listen(port int) (*net.UDPConn, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: port})
	if err != nil {
		return nil, err
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = errors.Join(syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_NO_CHECK, 1),
			syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_RECVTTL, 1))
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		c.Close()
		return nil, fmt.Errorf("socket options: %w", serr)
	}
	return c, nil
}

var start = time.Now()

func now() int64 { return int64(time.Since(start)) }

// send sends n data packets and prints the feedback each ACK brings back.
func send(w io.Writer, to string, port, n, hops int) error {
	return sendFrom(w, to, port, port, n, hops)
}

// sendFrom is send from local UDP port from (0: any).
func sendFrom(w io.Writer, to string, port, from, n, hops int) error {
	if hops < 0 || hops > maxHops {
		return fmt.Errorf("-hops %d: want 0 to %d", hops, maxHops)
	}
	dst, err := net.ResolveUDPAddr("udp4", net.JoinHostPort(to, fmt.Sprint(port)))
	if err != nil {
		return err
	}
	c, err := listen(from)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 2048)
	for seq := range uint64(n) {
		h := &header{Type: typeData, FlowID: 1, Seq: seq, Ack: 1, TS: now(), HopCap: uint8(hops)}
		if hops > 0 {
			h.Flags = flagINT
		}
		if _, err := c.WriteToUDP(h.encode(), dst); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		k, _, err := c.ReadFromUDP(buf)
		if err != nil {
			return fmt.Errorf("packet %d: no ACK: %w", seq, err)
		}
		a, err := decode(buf[:k])
		if err != nil || a.Type != typeAck {
			return fmt.Errorf("packet %d: not an ACK: %v", seq, err)
		}
		fmt.Fprintf(w, "ack %d: rtt %v, forward mpd %s, reverse mpd %s, %d switches\n", a.Seq,
			time.Duration(now()-a.EchoTS), mpd(a.EchoMPD, a.Flags&flagEchoMPDSeen != 0), mpd(a.MPD, a.Flags&flagMPDSeen != 0), a.PathHops)
		printHops(w, a.Hops)
	}
	return nil
}

// recv answers every data packet with an ACK echoing its feedback, and prints it.
func recv(w io.Writer, c *net.UDPConn, count int) error {
	buf, oob := make([]byte, 2048), make([]byte, 64)
	for i := 0; count == 0 || i < count; i++ {
		k, oobn, _, from, err := c.ReadMsgUDP(buf, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		h, err := decode(buf[:k])
		if err != nil || h.Type != typeData {
			fmt.Fprintf(w, "from %v: not a reef data packet: %v\n", from, err)
			continue
		}
		fmt.Fprintf(w, "data %d from %v: mpd %s\n", h.Seq, from, mpd(h.MPD, h.Flags&flagMPDSeen != 0))
		printHops(w, h.Hops)
		a := &header{Type: typeAck, FlowID: h.FlowID, Seq: h.Seq, Ack: h.Seq + 1, TS: now(), EchoTS: h.TS,
			EchoMPD: h.MPD, HopCap: uint8(len(h.Hops)), Hops: h.Hops, PathHops: pathHops(oob[:oobn])}
		if h.Flags&flagMPDSeen != 0 {
			a.Flags |= flagEchoMPDSeen
		}
		if _, err := c.WriteToUDP(a.encode(), from); err != nil {
			return err
		}
	}
	return nil
}

func mpd(v uint16, seen bool) string {
	if !seen {
		return "none (no switch in mpd mode)"
	}
	return fmt.Sprintf("%d units", v)
}

func printHops(w io.Writer, hops []hop) {
	for i, h := range hops {
		fmt.Fprintf(w, "  hop %d: ts %d ns, tx %d B, queue %d B, rate %d kbit/s\n", i, h.TS, h.TxBytes, h.QLen, h.RateKbps)
	}
}

// pathHops is the number of switches a packet crossed: hosts send with TTL 64 and every
// switch decrements it (docs/wire.md). 0 when the TTL is unknown.
func pathHops(oob []byte) uint8 {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.IPPROTO_IP && m.Header.Type == syscall.IP_TTL && len(m.Data) >= 4 {
			return uint8(max(64-int(binary.NativeEndian.Uint32(m.Data)), 0))
		}
	}
	return 0
}
