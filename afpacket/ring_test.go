package afpacket

import (
	"fmt"
	"testing"

	"reef/switchd"
	"reef/units"
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

// A port's ring holds RingHold of full-size frames at its link's rate, with at least
// MinRingFrames slots and no more than MaxRingBytes of them.
func TestRingFramesFor(t *testing.T) {
	for _, c := range []struct {
		rate units.Rate
		mtu  int
		want int
	}{
		{6250 * units.Kbps, 1500, MinRingFrames}, // the slow links of the reproductions
		{100 * units.Mbps, 1500, MinRingFrames},  // 406 frames in 50 ms
		{units.Gbps, 1500, 4063},                 // 1e9 × 0.05 / (8 × 1538)
		{units.Gbps, 0, 4063},                    // no MTU: 1500
		{10 * units.Gbps, 1500, 4096},            // 40,630: 8 MB of 2 KB slots
		{units.Gbps, 9000, 512},                  // 691: 8 MB of 16 KB slots
		{100 * units.Gbps, 4096, 1024},           // 8 MB of 8 KB slots
	} {
		got := RingFramesFor(c.rate, c.mtu)
		if got != c.want {
			t.Errorf("RingFramesFor(%v, %d) = %d, want %d", c.rate, c.mtu, got, c.want)
		}
		mtu := max(c.mtu, 1500)
		if g := ringFor(mtu, got, 4096); got > MinRingFrames && g.frames*g.frameSize > MaxRingBytes {
			t.Errorf("RingFramesFor(%v, %d): %d slots of %d B, more than %d B", c.rate, c.mtu, g.frames, g.frameSize, MaxRingBytes)
		}
		if hold := units.Time(float64(got) * float64(c.rate.TxTime(units.Bytes(mtu+38)))); got > MinRingFrames && hold > RingHold {
			t.Errorf("RingFramesFor(%v, %d): %d slots hold %v, more than %v", c.rate, c.mtu, got, hold, RingHold)
		}
	}
}
