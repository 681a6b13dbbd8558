package capture

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"reef/wire"
)

// Writer writes Ethernet frames to a pcapng stream with nanosecond timestamps. It is not
// safe for concurrent use. Close flushes it.
type Writer struct {
	bw *bufio.Writer
	ng *pcapgo.NgWriter
}

// NewWriter starts a pcapng stream on w for frames seen on the interface called iface
// (e.g. "tor1:p3").
func NewWriter(w io.Writer, iface string) (*Writer, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	ng, err := pcapgo.NewNgWriterInterface(bw, pcapgo.NgInterface{
		Name: iface, LinkType: layers.LinkTypeEthernet, SnapLength: 65535,
		TimestampResolution: 9, // nanoseconds
	}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		return nil, fmt.Errorf("capture: start pcapng: %w", err)
	}
	return &Writer{bw: bw, ng: ng}, nil
}

// WriteFrame appends one frame seen at t. A frame held truncated after its headers (the
// sim's: wire.FrameLen) is written so, with its length on the wire as the original
// length, as a capture with a short snap length records it.
func (w *Writer) WriteFrame(t time.Time, frame []byte) error {
	ci := gopacket.CaptureInfo{Timestamp: t, CaptureLength: len(frame), Length: wire.FrameLen(frame)}
	if err := w.ng.WritePacket(ci, frame); err != nil {
		return fmt.Errorf("capture: write frame: %w", err)
	}
	return nil
}

// Close flushes what is buffered; it does not close the underlying writer.
func (w *Writer) Close() error {
	if err := w.ng.Flush(); err != nil {
		return fmt.Errorf("capture: flush: %w", err)
	}
	return w.bw.Flush()
}
