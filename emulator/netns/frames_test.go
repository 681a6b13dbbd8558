package netns_test

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gopacket/gopacket/pcapgo"
)

// readFrames returns every packet of a pcapng capture a run wrote, in capture order.
func readFrames(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out [][]byte
	for {
		data, _, err := r.ReadPacketData() // a fresh slice per packet
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, data)
	}
}
