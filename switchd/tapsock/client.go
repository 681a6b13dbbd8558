package tapsock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
)

// Stream is a capture a switch daemon has started: Dial returns it once the daemon's
// tap is attached, so no frame crossing the port after Dial returns is missed.
type Stream struct {
	c     *net.UnixConn
	rd    *bufio.Reader
	sw    string
	index int
}

// Dial asks the switch daemon listening at path to capture port index of switch sw.
func Dial(ctx context.Context, path, sw string, index int) (*Stream, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("tapsock: capture %s port %d: %w", sw, index, err)
	}
	s := &Stream{c: c.(*net.UnixConn), rd: bufio.NewReaderSize(c, 1<<16), sw: sw, index: index}
	if _, err := fmt.Fprintf(s.c, "capture %s %d\n", sw, index); err != nil {
		s.c.Close()
		return nil, s.errorf("%w", err)
	}
	line, err := s.rd.ReadString('\n')
	if err != nil {
		s.c.Close()
		return nil, s.errorf("no answer from the daemon: %w", err)
	}
	if line = strings.TrimSpace(line); line != "ok" {
		s.c.Close()
		return nil, s.errorf("%s", strings.TrimPrefix(line, "error "))
	}
	return s, nil
}

func (s *Stream) errorf(format string, args ...any) error {
	return fmt.Errorf("tapsock: capture %s port %d: "+format, append([]any{s.sw, s.index}, args...)...)
}

// Run calls fn with every frame the daemon streams (the record's Frame is valid during
// the call) until ctx is done; it then ends the capture, takes what the daemon still
// held, closes the stream and returns how many frames the daemon's ring had to drop.
// An error fn returns stops the capture and is returned.
func (s *Stream) Run(ctx context.Context, fn func(Record) error) (dropped uint64, err error) {
	defer s.c.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.c.CloseWrite() })
	defer stop()
	var buf []byte
	for {
		var r Record
		r, buf, err = ReadRecord(s.rd, buf)
		if errors.Is(err, io.EOF) {
			return 0, s.errorf("the daemon closed the stream before its end (did it exit?)")
		}
		if err != nil {
			return 0, s.errorf("%w", err)
		}
		if r.Kind == End {
			return uint64(r.Time), nil
		}
		if err := fn(r); err != nil {
			return 0, err
		}
	}
}
