package sim_test

import (
	"fmt"
	"strings"
	"testing"

	"reef/hostd/transport"
	"reef/units"
)

// Jumbo frames run end to end on the sim (issue 21: a topology with mtu: 9000 passed
// validation and then failed at run time, "switchd: port 8 ("p9"): mtu 9256; want 68 to
// 9216"): the flows deliver their data in full-size jumbo frames across two switches.
func TestJumboFramesEndToEnd(t *testing.T) {
	for _, mtu := range []int{9000, 9216} {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			src := fmt.Sprintf(`name: jumbo
topology:
  name: jumbo
  defaults: {rate: 10Gbps, delay: 2us, buffer: 4MB, mtu: %d}
  generator: {kind: dumbbell, hosts: 2}
time_scale: 1
duration: 5ms
sample_interval: 100us
seed: 1
switches:
  "*": {ecn: {mode: step, k: 100KB}}
defaults: {cc: dctcp}
flows:
  - {group: bulk, count: 2, src: "h{i}", dst: "h{i+2}"}
`, mtu)
			r, run := runExperiment(t, src)
			var acked units.Bytes
			for _, f := range run.Flows {
				acked += f.Acked
				if f.Timeouts > 0 || f.Retransmits > 0 {
					t.Errorf("flow %s: %d timeouts, %d retransmissions", f.Name, f.Timeouts, f.Retransmits)
				}
			}
			// the two flows share the 10 Gbit/s s1→s2 link for 5 ms: want 90% of it in
			// payload (a jumbo frame's headers are under 1%)
			if want := (10 * units.Gbps).BytesIn(r.Scenario.Duration) * 9 / 10; acked < want {
				t.Errorf("%v acknowledged in %v, want at least %v", acked, r.Scenario.Duration, want)
			}
			if mss := transport.MSS(mtu, 0); mss < units.Bytes(mtu)*99/100 {
				t.Errorf("mss %v for mtu %d", mss, mtu)
			}
			for _, p := range run.Ports {
				if p.Switch != "s1" || !strings.HasPrefix(p.Peer, "s2:") {
					continue
				}
				if p.TxPackets == 0 {
					t.Fatalf("port %s→%s sent nothing", p.Switch, p.Peer)
				}
				// data frames are full jumbo frames: the bottleneck's mean frame is one
				if mean := p.TxBytes / p.TxPackets; mean < int64(mtu)*9/10 {
					t.Errorf("port %s→%s: mean frame %d B, want jumbo frames near %d B", p.Switch, p.Peer, mean, mtu)
				}
			}
		})
	}
}
