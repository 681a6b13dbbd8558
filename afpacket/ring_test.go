package afpacket

import (
	"fmt"
	"testing"

	"reef/switchd"
	"reef/wire"
)

// The RX ring holds the largest frame a port can receive: issue 21's jumbo links need
// slots for 9000- and 9216-byte MTUs (switchd.MaxMTU, which the planner's INT headroom
// never exceeds), plus a VLAN tag and the release trailer, at the offset the kernel puts
// the frame (ringMacOffset); a block holds whole slots so that frame i is at i×frameSize.
func TestRingForHoldsFullFrames(t *testing.T) {
	for _, c := range []struct {
		mtu, n, page  int
		wantFrameSize int
	}{
		{1500, 512, 4096, 2048},
		{1756, 512, 4096, 2048},
		{9000, 512, 4096, 16384},
		{switchd.MaxMTU, 512, 4096, 16384},
		{switchd.MaxMTU, 100, 65536, 16384},
		{65535, 8, 4096, 131072},
	} {
		t.Run(fmt.Sprintf("mtu=%d,n=%d,page=%d", c.mtu, c.n, c.page), func(t *testing.T) {
			g := ringFor(c.mtu, c.n, c.page)
			// the largest frame: MTU + Ethernet header + VLAN tag + trailer
			frame := c.mtu + wire.EthLen + 4 + TrailerLen
			if ringMacOffset+frame > g.frameSize {
				t.Errorf("slot %d B < offset %d + frame %d B: the kernel would truncate it", g.frameSize, ringMacOffset, frame)
			}
			if g.frameSize != c.wantFrameSize {
				t.Errorf("slot %d B, want %d", g.frameSize, c.wantFrameSize)
			}
			if g.frameSize&(g.frameSize-1) != 0 || g.frameSize%16 != 0 {
				t.Errorf("slot %d B: want a power of two (TPACKET_ALIGNMENT 16)", g.frameSize)
			}
			if g.block%c.page != 0 || g.block%g.frameSize != 0 {
				t.Errorf("block %d B: want whole pages (%d B) and whole slots (%d B)", g.block, c.page, g.frameSize)
			}
			if g.frames < c.n || g.frames != g.blocks*(g.block/g.frameSize) {
				t.Errorf("%d slots in %d blocks of %d B; want at least %d, every block full", g.frames, g.blocks, g.block, c.n)
			}
		})
	}
}
