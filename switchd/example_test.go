package switchd_test

import (
	"fmt"
	"net/netip"

	"reef/switchd"
	"reef/units"
	"reef/wire"
)

// A two-port switch forwarding a burst: departures are computed (120 µs per 1500 B
// frame at 100 Mbps) and each frame is due one link delay (10 µs) after it leaves.
func Example() {
	port := func(name string) switchd.PortConfig {
		return switchd.PortConfig{Name: name, Rate: 100 * units.Mbps, Delay: 10 * units.Microsecond,
			Buffer: 100 * units.Kilobyte, MTU: 1500}
	}
	sw, err := switchd.New(switchd.Config{
		Name:   "s1",
		Ports:  []switchd.PortConfig{port("p0"), port("p1")},
		Routes: []switchd.Route{{Prefix: netip.MustParsePrefix("198.18.1.0/24"), Ports: []int{1}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	frame := make([]byte, 1500)
	h := wire.Header{Type: wire.TypeData, PayloadLen: uint16(1500 - wire.Overhead)}
	a := wire.Addrs{Src: netip.MustParseAddr("198.18.0.1"), Dst: netip.MustParseAddr("198.18.1.1"), SrcPort: 1}
	if _, err := wire.BuildFrame(frame, a, wire.ECT0, &h); err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		sw.Receive(0, 0, frame)
	}
	for now := sw.NextDeadline(); now != units.Never; now = sw.NextDeadline() {
		for {
			out, ok := sw.Poll(now)
			if !ok {
				break
			}
			fmt.Printf("port %d: %d bytes due %v\n", out.Port, len(out.Frame), out.Due)
		}
	}
	st := sw.Stats()[1]
	fmt.Println("tx", st.TxPackets, "max queue", st.MaxQueueBytes)
	// Output:
	// port 1: 1500 bytes due 130µs
	// port 1: 1500 bytes due 250µs
	// port 1: 1500 bytes due 370µs
	// tx 3 max queue 4.5KB
}
