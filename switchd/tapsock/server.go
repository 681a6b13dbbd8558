package tapsock

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"reef/afpacket"
	"reef/fabric"
	"reef/units"
)

// RingSlots is how many frames a port's ring holds: at a poll every Poll (1 ms), room
// for a burst of 4096 frames between two, about 50 Gbit/s of 1500-byte frames.
const RingSlots = 4096

// Poll is how often the streaming goroutine looks at a ring (the datapath never wakes it).
const Poll = time.Millisecond

// Port is one in-memory port a Server can capture.
type Port struct {
	Switch string
	Index  int
	// MaxFrame is the largest frame the port carries (its MTU plus headers).
	MaxFrame int
}

// Clock maps a shard's lab time to the wall clock and to the trailers' clock.
type Clock interface {
	// Now is the lab time now.
	Now() units.Time
	// WireEpoch is lab time 0 on the clock release trailers carry.
	WireEpoch() int64
}

// Server streams captures of a shard's in-memory ports to clients of a Unix socket.
type Server struct {
	ports map[string]*port // "switch/index"
	clock Clock
	log   *slog.Logger
	ids   atomic.Uint64
	// stop ends the listener and every stream (Close); serving counts the goroutines
	// Close waits for.
	stop    context.CancelFunc
	serving sync.WaitGroup
}

// port is one capturable port: its tap (on the datapath) and its ring.
type port struct {
	Port
	cur  atomic.Pointer[session] // the capture running, nil if none
	mu   sync.Mutex
	busy bool
	ring *Ring // allocated at the port's first capture, reused after
}

type session struct {
	id   uint64
	ring *Ring
}

// New returns a server for ports; Tap gives each port's tap to install on the shard
// before the datapath starts.
func New(ports []Port, clock Clock, log *slog.Logger) *Server {
	s := &Server{ports: map[string]*port{}, clock: clock, log: log}
	for _, p := range ports {
		s.ports[key(p.Switch, p.Index)] = &port{Port: p}
	}
	return s
}

func key(sw string, i int) string { return sw + "/" + strconv.Itoa(i) }

// Tap returns the tap of port index of switch sw (nil if the server has no such
// port). It runs on the datapath: with no capture running it loads one pointer.
func (s *Server) Tap(sw string, index int) fabric.Tap {
	p := s.ports[key(sw, index)]
	if p == nil {
		return nil
	}
	return func(at units.Time, out bool, frame []byte) {
		if c := p.cur.Load(); c != nil {
			c.ring.Put(c.id, at, out, frame)
		}
	}
}

// Listen removes a stale socket at path, listens there and serves clients until Close;
// it returns once listening, serving in its own goroutines.
func (s *Server) Listen(path string) error {
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("tapsock: listen: %w", err)
	}
	// A capture sees the lab's traffic: only the lab's owner may ask for one.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("tapsock: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.serving.Go(func() {
		<-ctx.Done()
		ln.Close()
	})
	s.serving.Go(func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			s.serving.Go(func() { s.serve(ctx, c) })
		}
	})
	return nil
}

// Close stops listening and ends every capture running: each gets what its ring
// still holds and its end record, so a client sees an orderly end when the daemon
// stops. It waits for that (at most CloseWait) and removes nothing else.
func (s *Server) Close() {
	if s.stop == nil {
		return
	}
	s.stop()
	done := make(chan struct{})
	go func() {
		s.serving.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(CloseWait):
		s.log.Warn("capture streams did not end in time", "waited", CloseWait)
	}
}

// CloseWait bounds how long Close waits for the streams to end.
const CloseWait = 2 * time.Second

// serve answers one client.
func (s *Server) serve(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	rd := bufio.NewReader(c)
	line, err := rd.ReadString('\n')
	if err != nil {
		return
	}
	p, err := s.take(strings.TrimSpace(line))
	if err != nil {
		fmt.Fprintf(c, "error %v\n", err)
		return
	}
	defer s.give(p)
	// Attached before the answer: the client misses nothing after it reads ok.
	sess := &session{id: s.ids.Add(1), ring: p.ring}
	drops0 := p.ring.Drops()
	p.cur.Store(sess)
	if _, err := io.WriteString(c, "ok\n"); err != nil {
		p.cur.Store(nil)
		return
	}
	// The client ends the capture by closing its writing half (or hanging up).
	hung := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, rd)
		close(hung)
	}()
	drops, err := s.stream(ctx, p, sess, drops0, c, hung)
	if err != nil {
		s.log.Warn("capture stream ended", "port", key(p.Switch, p.Index), "err", err)
		return
	}
	if drops > 0 {
		s.log.Warn("capture missed frames: its ring was full", "port", key(p.Switch, p.Index), "dropped", drops)
	}
}

// take parses a request and reserves its port.
func (s *Server) take(req string) (*port, error) {
	f := strings.Fields(req)
	if len(f) != 3 || f[0] != "capture" {
		return nil, fmt.Errorf("request %q: want \"capture SWITCH PORT\"", req)
	}
	i, err := strconv.Atoi(f[2])
	if err != nil {
		return nil, fmt.Errorf("request %q: port %q is not a port index", req, f[2])
	}
	p := s.ports[key(f[1], i)]
	if p == nil {
		return nil, fmt.Errorf("switch %s port %d is not an in-memory port of this daemon", f[1], i)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy {
		return nil, fmt.Errorf("switch %s port %d is already being captured", f[1], i)
	}
	p.busy = true
	if p.ring == nil {
		p.ring = NewRing(RingSlots, p.MaxFrame+afpacket.TrailerLen)
	}
	return p, nil
}

func (s *Server) give(p *port) {
	p.mu.Lock()
	p.busy = false
	p.mu.Unlock()
}

// stream sends what p's ring receives for session sess to w until hung is closed or
// ctx is done, then detaches it, sends what is left and the end record. It returns how
// many frames the ring dropped during the session (drops0: its count before).
func (s *Server) stream(ctx context.Context, p *port, sess *session, drops0 uint64, w io.Writer, hung <-chan struct{}) (uint64, error) {
	// Lab time to Unix time, fixed at the start: the lab's clock and the wall clock
	// run at the same rate for the length of a capture.
	wall := time.Now().UnixNano() - int64(s.clock.Now())
	wire := s.clock.WireEpoch()
	bw := bufio.NewWriterSize(w, 1<<16)
	var rec, tr []byte
	tr = make([]byte, p.ring.size)
	drain := func() error {
		for {
			id, at, out, frame, ok := p.ring.Get()
			if !ok {
				return bw.Flush()
			}
			if id != sess.id {
				continue // an earlier session's last frame
			}
			n, _ := afpacket.PutTrailer(tr, frame, at+units.Time(wire))
			kind := byte(In)
			if out {
				kind = Out
			}
			rec = AppendRecord(rec[:0], Record{Time: wall + int64(at), Kind: kind, Frame: tr[:n]})
			if _, err := bw.Write(rec); err != nil {
				return err
			}
		}
	}
	tick := time.NewTicker(Poll)
	defer tick.Stop()
	var err error
streaming:
	for err == nil {
		select {
		case <-hung:
			break streaming
		case <-ctx.Done():
			break streaming
		case <-tick.C:
			err = drain()
		}
	}
	p.cur.Store(nil)
	if err != nil {
		return 0, err
	}
	// A frame the datapath was putting as the session ended lands after this drain;
	// the next session skips it (its id).
	drops := p.ring.Drops() - drops0
	if err := drain(); err != nil {
		return drops, err
	}
	if _, err := w.Write(AppendRecord(nil, Record{Time: int64(drops), Kind: End})); err != nil {
		return drops, err
	}
	return drops, nil
}
