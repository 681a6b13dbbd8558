package tapsock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// HeaderLen is the size of a record's header.
const HeaderLen = 16

// Record kinds.
const (
	// In is a frame delivered to the captured port (sent by its peer).
	In = 0
	// Out is a frame the captured port sent.
	Out = 1
	// End closes the stream; its Time field carries the frames the ring dropped.
	End = 0xff
)

// MaxFrame bounds a record's frame: a jumbo frame, its headers and trailer.
const MaxFrame = 1 << 16

// Record is one frame of a capture stream: when it crossed the port (Unix ns, the
// frame's computed Due), which way, and its bytes. On the wire: Time (8 bytes), the
// frame's length (4), Kind (1), 3 zero bytes, all big endian, then the frame.
type Record struct {
	Time  int64
	Kind  byte
	Frame []byte
}

// AppendRecord appends r's encoding to dst.
func AppendRecord(dst []byte, r Record) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Time))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Frame)))
	dst = append(dst, r.Kind, 0, 0, 0)
	return append(dst, r.Frame...)
}

// ReadRecord reads the next record from rd into buf (grown as needed; the record's
// Frame aliases it). It returns io.EOF at a clean end between records and an error
// naming what is wrong with a malformed one.
func ReadRecord(rd io.Reader, buf []byte) (Record, []byte, error) {
	var h [HeaderLen]byte
	if _, err := io.ReadFull(rd, h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Record{}, buf, fmt.Errorf("tapsock: record header cut short: %w", err)
		}
		return Record{}, buf, err
	}
	r := Record{Time: int64(binary.BigEndian.Uint64(h[0:8])), Kind: h[12]}
	n := binary.BigEndian.Uint32(h[8:12])
	switch {
	case r.Kind != In && r.Kind != Out && r.Kind != End:
		return Record{}, buf, fmt.Errorf("tapsock: record kind %#x; want 0 (in), 1 (out) or 0xff (end)", r.Kind)
	case h[13] != 0 || h[14] != 0 || h[15] != 0:
		return Record{}, buf, errors.New("tapsock: record header: reserved bytes not zero")
	case n > MaxFrame:
		return Record{}, buf, fmt.Errorf("tapsock: record of %d bytes; at most %d", n, MaxFrame)
	case r.Kind == End && n != 0:
		return Record{}, buf, fmt.Errorf("tapsock: end record with %d bytes of frame; want none", n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	r.Frame = buf[:n]
	if _, err := io.ReadFull(rd, r.Frame); err != nil {
		return Record{}, buf, fmt.Errorf("tapsock: frame of %d bytes cut short: %w", n, err)
	}
	return r, buf, nil
}
