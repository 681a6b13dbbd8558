package dashboard

import (
	"github.com/prometheus/client_golang/prometheus"

	"reef/emulator/results"
)

// Collector exports a Source's latest snapshot as Prometheus metrics. It does its work at
// scrape time only, over the snapshot's end-of-series values (O(ports + flows) per
// scrape, nothing per packet), with small label sets: switch and port; flow, group and
// cc; quantile. Rates and times are the emulator's (laptop units).
type Collector struct {
	src Source

	emulated, live, expectations                                 *prometheus.Desc
	portBytes, portPackets, portDrops, portMarks, portPause      *prometheus.Desc
	portQueue, portQueueDelay, portUtil, portLateness            *prometheus.Desc
	flowAcked, flowGoodput, flowRate, flowCwnd, flowRTT, flowMPD *prometheus.Desc
	flowRetx, fidelityLateness                                   *prometheus.Desc
}

// NewCollector returns a collector over src.
func NewCollector(src Source) *Collector {
	port, flow := []string{"switch", "port"}, []string{"flow", "group", "cc"}
	d := prometheus.NewDesc
	return &Collector{src: src,
		emulated:         d("reef_emulated_time_seconds", "Emulated time reached by the run or lab.", nil, nil),
		live:             d("reef_live", "1 while the run or lab is going, 0 once finished.", nil, nil),
		expectations:     d("reef_expectations", "Expectations decided so far, by verdict.", []string{"verdict"}, nil),
		portBytes:        d("reef_port_tx_bytes_total", "Bytes sent by a switch egress port.", port, nil),
		portPackets:      d("reef_port_tx_packets_total", "Frames sent by a switch egress port.", port, nil),
		portDrops:        d("reef_port_drops_total", "Frames dropped at a switch port (all reasons).", port, nil),
		portMarks:        d("reef_port_ecn_marks_total", "Frames marked CE at a switch egress queue.", port, nil),
		portPause:        d("reef_port_pause_seconds_total", "Time a port's egress was paused by PFC.", port, nil),
		portQueue:        d("reef_port_queue_bytes", "Egress queue backlog at the latest sample.", port, nil),
		portQueueDelay:   d("reef_port_queue_delay_seconds", "Queueing delay a frame arriving at the latest sample would see.", port, nil),
		portUtil:         d("reef_port_utilization_ratio", "Egress throughput over the port's rate, over the last few samples.", port, nil),
		portLateness:     d("reef_port_lateness_seconds", "How late the emulator released a port's frames (stat p50, p99, max).", append(port, "stat"), nil),
		flowAcked:        d("reef_flow_acked_bytes_total", "Payload bytes acknowledged.", flow, nil),
		flowGoodput:      d("reef_flow_goodput_bytes_per_second", "Goodput (payload) over the last few samples.", flow, nil),
		flowRate:         d("reef_flow_rate_bytes_per_second", "The congestion controller's pacing rate.", flow, nil),
		flowCwnd:         d("reef_flow_cwnd_bytes", "The congestion controller's window.", flow, nil),
		flowRTT:          d("reef_flow_rtt_seconds", "Latest RTT sample.", flow, nil),
		flowMPD:          d("reef_flow_mpd_seconds", "Latest max-per-hop delay (Poseidon MPD) echoed.", flow, nil),
		flowRetx:         d("reef_flow_retransmits_total", "Retransmitted packets.", flow, nil),
		fidelityLateness: d("reef_fidelity_lateness_seconds", "Release lateness over all ports: the worst port's p50, p99 and maximum.", []string{"stat"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.emulated, c.live, c.expectations, c.portBytes, c.portPackets, c.portDrops,
		c.portMarks, c.portPause, c.portQueue, c.portQueueDelay, c.portUtil, c.portLateness, c.flowAcked, c.flowGoodput,
		c.flowRate, c.flowCwnd, c.flowRTT, c.flowMPD, c.flowRetx, c.fidelityLateness} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	// a label value Prometheus rejects (not UTF-8) drops that one series, not the scrape
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, l ...string) {
		if m, err := prometheus.NewConstMetric(d, t, v, l...); err == nil {
			ch <- m
		}
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) { emit(d, prometheus.GaugeValue, v, l...) }
	counter := func(d *prometheus.Desc, v float64, l ...string) { emit(d, prometheus.CounterValue, v, l...) }
	gauge(c.emulated, s.Now.Seconds())
	gauge(c.live, b2f(s.Live))
	pass, fail := 0, 0
	for _, v := range s.Verdicts {
		if v.Pass {
			pass++
		} else {
			fail++
		}
	}
	gauge(c.expectations, float64(pass), "pass")
	gauge(c.expectations, float64(fail), "fail")
	if s.Run == nil {
		return
	}
	var worst results.Lateness
	seen := map[[2]string]bool{} // a malformed source must not make the scrape fail
	for i := range s.Run.Ports {
		p := &s.Run.Ports[i]
		l := []string{p.Switch, p.Name}
		if seen[[2]string{p.Switch, p.Name}] {
			continue
		}
		seen[[2]string{p.Switch, p.Name}] = true
		txBytes, drops, marks := p.TxBytes, p.Drops, p.Marks
		var queue, delay float64
		if n := len(p.Samples); n > 0 {
			last := p.Samples[n-1]
			txBytes, drops, marks = max(txBytes, last.TxBytes), max(drops, last.Drops), max(marks, last.Marks)
			queue, delay = float64(last.QueueBytes), last.QueueDelay.Seconds()
		}
		counter(c.portBytes, float64(txBytes), l...)
		counter(c.portPackets, float64(p.TxPackets), l...)
		counter(c.portDrops, float64(drops), l...)
		counter(c.portMarks, float64(marks), l...)
		counter(c.portPause, p.PauseTime.Seconds(), l...)
		gauge(c.portQueue, queue, l...)
		gauge(c.portQueueDelay, delay, l...)
		var util float64
		if p.Rate > 0 {
			util = float64(portRate(p.Samples)) / float64(p.Rate)
		}
		gauge(c.portUtil, util, l...)
		gauge(c.portLateness, p.Lateness.P50.Seconds(), append(l, "p50")...)
		gauge(c.portLateness, p.Lateness.P99.Seconds(), append(l, "p99")...)
		gauge(c.portLateness, p.Lateness.Max.Seconds(), append(l, "max")...)
		worst.P50, worst.P99, worst.Max = max(worst.P50, p.Lateness.P50), max(worst.P99, p.Lateness.P99), max(worst.Max, p.Lateness.Max)
	}
	gauge(c.fidelityLateness, worst.P50.Seconds(), "p50")
	gauge(c.fidelityLateness, worst.P99.Seconds(), "p99")
	gauge(c.fidelityLateness, worst.Max.Seconds(), "max")
	seenFlow := map[string]bool{}
	for i := range s.Run.Flows {
		f := &s.Run.Flows[i]
		if seenFlow[f.Name] {
			continue
		}
		seenFlow[f.Name] = true
		l := []string{f.Name, f.Group, f.CC}
		acked, retx := f.Acked, f.Retransmits
		var last results.FlowSample
		if n := len(f.Samples); n > 0 {
			last = f.Samples[n-1]
			acked, retx = max(acked, last.Acked), max(retx, last.Retransmits)
		}
		counter(c.flowAcked, float64(acked), l...)
		counter(c.flowRetx, float64(retx), l...)
		gauge(c.flowGoodput, float64(flowGoodput(f.Samples))/8, l...)
		gauge(c.flowRate, float64(last.Rate)/8, l...)
		gauge(c.flowCwnd, float64(last.Cwnd), l...)
		gauge(c.flowRTT, last.RTT.Seconds(), l...)
		gauge(c.flowMPD, last.MPD.Seconds(), l...)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
