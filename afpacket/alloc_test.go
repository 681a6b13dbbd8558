package afpacket

import (
	"testing"
	"time"

	"reef/units"
)

// TestTickAllocatesNothing checks that the driver's periodic work (the clock's resync,
// the counters' snapshot) allocates nothing: the daemons run with the GC off, so an
// allocation per tick is never freed. Before: one per port per tick (the ring's drop
// counters read through unix.GetsockoptTpacketStats).
func TestTickAllocatesNothing(t *testing.T) {
	needRoot(t)
	ticks := 0
	drv := openOnVeth(t, &stuckNode{}, time.Millisecond, Config{OnTick: func(units.Time, *Stats) { ticks++ }})
	if allocs := testing.AllocsPerRun(100, func() { drv.tick(0) }); allocs != 0 {
		t.Errorf("%v allocations per tick, want 0", allocs)
	}
	if ticks == 0 {
		t.Error("OnTick not called")
	}
}
