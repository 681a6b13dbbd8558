package dashboard

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"reef/emulator/expect"
	"reef/emulator/results"
	"reef/units"
)

// The collector exports the snapshot's end values with small label sets, and passes
// Prometheus' own lint.
func TestCollector(t *testing.T) {
	f := NewFeed("x")
	run := &results.Run{
		Flows: []results.Flow{{Name: "f1", Group: "left", CC: "swift", Acked: 1000, Samples: []results.FlowSample{
			{T: 0, Acked: 0}, {T: units.Millisecond, Acked: 125_000, Cwnd: 30000, RTT: 40 * units.Microsecond, Rate: units.Gbps}}}},
		Ports: []results.Port{{Switch: "s1", Name: "p2", Rate: units.Gbps, TxBytes: 62_500, TxPackets: 42, Drops: 1, Marks: 3,
			PauseTime: units.Millisecond, Lateness: results.Lateness{P50: units.Microsecond, P99: 5 * units.Microsecond, Max: 9 * units.Microsecond},
			Samples: []results.PortSample{{T: 0}, {T: units.Millisecond, TxBytes: 62_500, QueueBytes: 3000, QueueDelay: 24 * units.Microsecond}}}},
	}
	f.Push(units.Millisecond, run)
	f.Decide(expect.Result{Pass: true}, expect.Result{Pass: true}, expect.Result{})
	c := NewCollector(f)
	if probs, err := testutil.CollectAndLint(c); err != nil || len(probs) > 0 {
		t.Fatalf("lint: %v %v", probs, err)
	}
	want := `
# HELP reef_flow_goodput_bytes_per_second Goodput (payload) over the last few samples.
# TYPE reef_flow_goodput_bytes_per_second gauge
reef_flow_goodput_bytes_per_second{cc="swift",flow="f1",group="left"} 1.25e+08
# HELP reef_port_utilization_ratio Egress throughput over the port's rate, over the last few samples.
# TYPE reef_port_utilization_ratio gauge
reef_port_utilization_ratio{port="p2",switch="s1"} 0.5
# HELP reef_port_tx_packets_total Frames sent by a switch egress port.
# TYPE reef_port_tx_packets_total counter
reef_port_tx_packets_total{port="p2",switch="s1"} 42
# HELP reef_expectations Expectations decided so far, by verdict.
# TYPE reef_expectations gauge
reef_expectations{verdict="fail"} 1
reef_expectations{verdict="pass"} 2
# HELP reef_fidelity_lateness_seconds Release lateness over all ports: the worst port's p50, p99 and maximum.
# TYPE reef_fidelity_lateness_seconds gauge
reef_fidelity_lateness_seconds{stat="p50"} 1e-06
reef_fidelity_lateness_seconds{stat="p99"} 5e-06
reef_fidelity_lateness_seconds{stat="max"} 9e-06
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "reef_flow_goodput_bytes_per_second",
		"reef_port_utilization_ratio", "reef_port_tx_packets_total", "reef_expectations", "reef_fidelity_lateness_seconds"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 4+11+3+7 { // run 4, port 8 + 3 lateness, fidelity 3, flow 7
		t.Fatalf("gathered %d series (%v), want 25", n, err)
	}
}
