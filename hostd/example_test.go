package hostd_test

import (
	"fmt"
	"net/netip"

	"reef/cc/swift"
	"reef/hostd"
	"reef/units"
)

// Two hosts wired back to back (no switch, no propagation delay), one 100KB Swift flow,
// driven the way every backend drives a node: Receive, NextDeadline, Poll. The FCT is
// 70 full frames and one short one at 1Gbps, plus the last ACK.
func Example() {
	var hosts [2]*hostd.Host
	for i := range hosts {
		h, err := hostd.New(hostd.Config{Name: fmt.Sprintf("h%d", i+1), Rate: units.Gbps, MTU: 1500,
			Addr: netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)})}, hostd.Options{})
		if err != nil {
			panic(err)
		}
		hosts[i] = h
	}
	env := hosts[0].FlowEnv(0)
	env.BaseRTT = 30 * units.Microsecond
	alg, _ := swift.New(env, *swift.DefaultParams())
	if err := hosts[0].AddFlow(hostd.FlowSpec{ID: 1, Name: "demo", Dst: hosts[1].Config().Addr, Size: 100_000, Alg: alg}); err != nil {
		panic(err)
	}
	now := units.Time(0)
	for {
		next := min(hosts[0].NextDeadline(), hosts[1].NextDeadline())
		if next == units.Never {
			break
		}
		now = max(now, next)
		for i, h := range hosts {
			for {
				out, ok := h.Poll(now)
				if !ok {
					break
				}
				hosts[1-i].Receive(out.Due, 0, out.Frame) // the frame arrives as it leaves
			}
		}
	}
	c := hosts[0].Completions()[0]
	fmt.Printf("%s: %v in %v\n", c.Name, c.Size, c.FCT)
	// Output: demo: 100KB in 856.448µs
}
