package hostd_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"

	"reef/cc/swift"
	"reef/hostd"
	"reef/units"
)

// A host whose caller keeps every polled frame's storage and gives it other storage
// with SwapFrame (as the sim does) sends the same frames at the same times, built in
// the storage it was given; storage too small for an MTU-sized frame is refused.
func TestSwapFrame(t *testing.T) {
	type sent struct {
		due   units.Time
		frame []byte
	}
	pass := func(swap bool) (out []sent, inGiven int) {
		var hosts [2]*hostd.Host
		for i := range hosts {
			h, err := hostd.New(hostd.Config{Name: fmt.Sprintf("h%d", i+1), Rate: units.Gbps, MTU: 1500,
				Addr: netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)})}, hostd.Options{})
			if err != nil {
				t.Fatal(err)
			}
			hosts[i] = h
		}
		env := hosts[0].FlowEnv(0)
		env.BaseRTT = 30 * units.Microsecond
		alg, _ := swift.New(env, *swift.DefaultParams())
		if err := hosts[0].AddFlow(hostd.FlowSpec{ID: 1, Dst: hosts[1].Config().Addr, Size: 50_000, Alg: alg}); err != nil {
			t.Fatal(err)
		}
		given := map[*byte]bool{}
		for now := units.Time(0); ; {
			next := min(hosts[0].NextDeadline(), hosts[1].NextDeadline())
			if next == units.Never {
				break
			}
			now = max(now, next)
			for i, h := range hosts {
				for {
					o, ok := h.Poll(now)
					if !ok {
						break
					}
					if i == 0 {
						out = append(out, sent{o.Due, bytes.Clone(o.Frame)})
						if given[&o.Frame[0]] {
							inGiven++
						}
					}
					hosts[1-i].Receive(o.Due, 0, o.Frame)
					if swap && i == 0 {
						if h.SwapFrame(make([]byte, 1000)) {
							t.Fatal("SwapFrame took storage too small for an MTU-sized frame")
						}
						b := make([]byte, 1600)
						given[&b[0]] = true
						if !h.SwapFrame(b) {
							t.Fatal("SwapFrame refused 1600 bytes")
						}
					}
				}
			}
		}
		return out, inGiven
	}
	want, _ := pass(false)
	got, inGiven := pass(true)
	if len(want) < 30 || len(got) != len(want) {
		t.Fatalf("%d frames with swaps, %d without", len(got), len(want))
	}
	for i := range want {
		if got[i].due != want[i].due || !bytes.Equal(got[i].frame, want[i].frame) {
			t.Fatalf("frame %d differs with swaps", i)
		}
	}
	if inGiven < len(got)-2 { // the first two frames are built in the host's own storage
		t.Fatalf("%d of %d frames built in the storage given back, want all but 2", inGiven, len(got))
	}
}
