package analysis

import (
	"fmt"
	"strings"

	"reef/emulator/results"
	"reef/units"
)

// DegradedP99Packets is the fidelity threshold: a port or host whose p99 skew is more
// than this many packet times (MTU at its rate) makes the run "degraded" (a host may
// have more when FeedbackRTTFraction of its RTT is more).
const DegradedP99Packets = 1.0

// FeedbackRTTFraction is the fraction of its flows' shortest base RTT a host's p99 skew
// may reach: a host's skew delays the feedback its algorithms act on, as a slow host
// stack would, and a tenth of the RTT leaves their control loops as they are.
const FeedbackRTTFraction = 0.1

// LatenessRTTFraction is the fraction of the shortest base RTT any port's or host's p99
// release lateness may reach (or one packet time, or LatenessFloor, if more): a host's
// against the flows it sends or receives, a switch port's against the run's shortest.
// A frame released late arrives late, and the RTT its flow samples grows by as much.
// Measured on 2 cores: quiet runs of the reproductions reach 0.015-0.04 of their RTT,
// the VM's wakeup latency (p99 ~150 µs) against RTTs of 4-12 ms; runs on a contended
// host whose flows were 12-19% off the sim, with skew under its bound, reached 0.44-1.0
// (6-9 ms).
const LatenessRTTFraction = 0.25

// LatenessFloor is what p99 release lateness may always reach: the wakeup latency of
// the machine's scheduler, which every run has, is no sign of a run gone wrong. On a
// quiet 2-core VM whose wakeups are late by 150-250 µs at p99, the 4-flow Swift
// dumbbell (RTT ~0.5 ms) reached 1.3 times a quarter of its RTT with every flow within
// 1.8% of the sim, and timely-incast (RTT 1 ms) 1.0-1.9 times with its expectations
// held; the runs that went wrong were late by several milliseconds.
const LatenessFloor = units.Millisecond

// MaxStallFraction is how much of a run a host daemon may spend stalled, not scheduled
// by the machine past the deadline it slept until (results.Host.Stalled). A stall
// can cost a host's flows throughput that its p99 release lateness and skew do not
// show: measured on oscar-convergence's Swift run, stopping the sender's daemon for
// ~11 ms every 100 ms (5.9% of the run) cost its flow 13% against the sim, the
// receiver's (4.0%) 7.6%, with p99 lateness at the quiet run's 0.11-0.14 ms and no
// skew. Most of that was the sender's lost ACK clock, since fixed (a flow alone on its
// path now loses nothing, TestStalledSenderCatchesUp); with bursts sharing its
// bottleneck it still lost 18% at 11% stalled, the bursts having taken the link while
// it was stopped. Quiet runs of the reproductions stall a host for at most 0.75% of
// the run (most < 0.4%).
const MaxStallFraction = 0.02

// Fidelity is how closely the emulator kept the computed schedule (see the package doc).
type Fidelity struct {
	// SkewP99US and SkewMaxUS are the worst port's or host's p99 skew and the largest
	// skew anywhere. SkewRatio is the worst p99 skew over what its port or host may
	// have: DegradedP99Packets packet times (MTU at its rate) at a switch port; at a
	// host, the larger of that and FeedbackRTTFraction of the shortest base RTT of the
	// flows it sends or receives (a host's skew delays its feedback, which matters
	// against the control loop's RTT).
	SkewP99US float64 `json:"skew_p99_us"`
	SkewMaxUS float64 `json:"skew_max_us"`
	SkewRatio float64 `json:"skew_ratio"`
	// LatenessP50US and LatenessP99US are the worst port's (largest) p50 and p99 release
	// lateness; MaxUS the largest lateness anywhere.
	LatenessP50US float64 `json:"lateness_p50_us"`
	LatenessP99US float64 `json:"lateness_p99_us"`
	LatenessMaxUS float64 `json:"lateness_max_us"`
	// RelativeP50 and RelativeP99 are the same in packet times (MTU at the port's rate),
	// again the worst port's.
	RelativeP50 float64 `json:"relative_p50"`
	RelativeP99 float64 `json:"relative_p99"`
	// WorstPort is the port (or host NIC, "h1:nic", on real backends) with the largest
	// SkewRatio, or, when nothing was skewed, the largest relative p99 lateness.
	WorstPort string `json:"worst_port,omitempty"`
	// Frames is the number of frames measured.
	Frames int64 `json:"frames"`
	// LateRatio is the worst p99 release lateness over what its port or host may have
	// (LatenessRTTFraction of the base RTT, or a packet time or LatenessFloor if more);
	// LatePort is where.
	LateRatio float64 `json:"late_ratio"`
	LatePort  string  `json:"late_port,omitempty"`
	// StallFraction is the largest share of the run a host daemon spent stalled
	// (results.Host.Stalled over the run's duration); StallHost is which.
	StallFraction float64 `json:"stall_fraction"`
	StallHost     string  `json:"stall_host,omitempty"`
	// StaleTimers counts, over the hosts, frames read after a timer they should have
	// preceded had fired: a daemon stalled longer than its timer grace, so timeouts
	// may have fired where they would not have.
	StaleTimers int64 `json:"stale_timers"`
	// Lost counts the frames the emulator itself lost, outside the model, at every
	// port and host NIC (results.Port.Lost: a daemon's receive ring overflowed while
	// it was not running, or a write failed); LostAt is where the most were lost.
	// Any such loss makes the run degraded: it is a drop the emulated network did not
	// make, which a flow takes as congestion.
	Lost   int64  `json:"lost,omitempty"`
	LostAt string `json:"lost_at,omitempty"`
	// Tunnel names the machines of a lab across machines whose tunnel, measured during
	// the run, needed more than the delay of the links cut between them
	// ("m1→m2: 1.6ms over 1.4ms"): frames then reached the far switch after they
	// were due.
	Tunnel string `json:"tunnel,omitempty"`
	// Verdict is "ok" or "degraded" (SkewRatio > 1, LateRatio > 1, StallFraction >
	// MaxStallFraction, StaleTimers > 0, Lost > 0 or a Tunnel).
	Verdict   string  `json:"verdict"`
	Threshold float64 `json:"threshold_packets"`
}

// fidelity sets s.Fidelity from the run's lateness, skew and stalls (see the package
// doc).
func (s *Summary) fidelity() {
	f := Fidelity{Verdict: "ok", Threshold: DegradedP99Packets}
	worstLate := ""
	// add counts one port's or host's frames; pkt is its packet time, skewMay and lateMay
	// what its p99 skew and lateness may reach.
	add := func(name string, late, skew results.Lateness, pkt, skewMay, lateMay units.Time) {
		if late.Count == 0 && skew.Count == 0 {
			return
		}
		f.Frames += late.Count
		f.LatenessP50US = max(f.LatenessP50US, late.P50.Microseconds())
		f.LatenessP99US = max(f.LatenessP99US, late.P99.Microseconds())
		f.LatenessMaxUS = max(f.LatenessMaxUS, late.Max.Microseconds())
		f.SkewP99US = max(f.SkewP99US, skew.P99.Microseconds())
		f.SkewMaxUS = max(f.SkewMaxUS, skew.Max.Microseconds())
		if pkt <= 0 {
			return
		}
		r50, r99 := float64(late.P50)/float64(pkt), float64(late.P99)/float64(pkt)
		f.RelativeP50 = max(f.RelativeP50, r50)
		if r99 > f.RelativeP99 || worstLate == "" {
			f.RelativeP99 = max(f.RelativeP99, r99)
			worstLate = name
		}
		if rs := float64(skew.P99) / float64(skewMay); rs > f.SkewRatio {
			f.SkewRatio = rs
			f.WorstPort = name
		}
		if rl := float64(late.P99) / float64(lateMay); rl > f.LateRatio {
			f.LateRatio = rl
			f.LatePort = name
		}
	}
	// may is what a p99 delay may reach against an RTT: fraction of it, or one packet
	// time if more.
	may := func(pkt, rtt units.Time, fraction float64) units.Time {
		return max(units.Time(DegradedP99Packets*float64(pkt)), units.Time(fraction*float64(rtt)))
	}
	// mayLate is what p99 release lateness may reach against an RTT.
	mayLate := func(pkt, rtt units.Time) units.Time {
		return max(may(pkt, rtt, LatenessRTTFraction), LatenessFloor)
	}
	var shortest units.Time // the run's shortest base RTT
	for _, r := range s.hostRTT {
		if shortest == 0 || r < shortest {
			shortest = r
		}
	}
	var mostLost int64
	lost := func(name string, n int64) {
		f.Lost += n
		if n > mostLost {
			mostLost, f.LostAt = n, name
		}
	}
	for _, pt := range s.in.Run.Ports {
		pkt := pt.Rate.TxTime(units.Bytes(portMTU(s.in.Plan, pt.Switch, pt.Port)))
		add(pt.Switch+":"+pt.Name, pt.Lateness, pt.Skew, pkt, units.Time(DegradedP99Packets*float64(pkt)), mayLate(pkt, shortest))
		lost(pt.Switch+":"+pt.Name, pt.Lost)
	}
	// Host daemons (real backends) release their NIC's frames late too.
	for _, h := range s.in.Run.Hosts {
		mtu := 1500
		if s.in.Plan != nil {
			if hp, ok := s.in.Plan.HostByName(h.Name); ok && hp.Config.MTU > 0 {
				mtu = hp.Config.MTU
			}
		}
		pkt := h.Rate.TxTime(units.Bytes(mtu))
		rtt := s.hostRTT[h.Name]
		add(h.Name+":nic", h.Lateness, h.Skew, pkt, may(pkt, rtt, FeedbackRTTFraction), mayLate(pkt, rtt))
		lost(h.Name+":nic", h.Lost)
		f.StaleTimers += h.StaleTimers
		if s.in.Run.Duration > 0 {
			if sf := float64(h.Stalled) / float64(s.in.Run.Duration); sf > f.StallFraction {
				f.StallFraction, f.StallHost = sf, h.Name
			}
		}
	}
	if f.WorstPort == "" {
		f.WorstPort = worstLate
	}
	for _, t := range s.in.Run.Tunnels {
		if t.WorstMargin > t.MinDelay && f.Tunnel == "" {
			f.Tunnel = fmt.Sprintf("%s→%s: %v over %v", t.From, t.To, t.WorstMargin, t.MinDelay)
		}
	}
	if f.SkewRatio > 1 || f.LateRatio > 1 || f.StallFraction > MaxStallFraction || f.StaleTimers > 0 || f.Lost > 0 || f.Tunnel != "" {
		f.Verdict = "degraded"
	}
	s.Fidelity = f
}

// attempts is a run's attempt count as summaries show it: omitted (0) when it ran once.
func attempts(n int) int {
	if n <= 1 {
		return 0
	}
	return n
}

// DegradedWhy says what made a run with this fidelity degraded ("" when it is not).
func DegradedWhy(f Fidelity) string {
	if f.Verdict != "degraded" {
		return ""
	}
	var why []string
	if f.SkewRatio > 1 {
		at := ""
		if f.WorstPort != "" {
			at = " at " + f.WorstPort
		}
		why = append(why, fmt.Sprintf("p99 schedule skew %.3g× what it may be%s", f.SkewRatio, at))
	}
	if f.LateRatio > 1 {
		at := ""
		if f.LatePort != "" {
			at = " at " + f.LatePort
		}
		why = append(why, fmt.Sprintf("p99 release lateness %.3g× what it may be%s", f.LateRatio, at))
	}
	if f.StallFraction > MaxStallFraction {
		why = append(why, fmt.Sprintf("%s's daemon stalled for %.1f%% of the run", f.StallHost, 100*f.StallFraction))
	}
	if f.StaleTimers > 0 {
		why = append(why, fmt.Sprintf("%d frames read after a timer had fired", f.StaleTimers))
	}
	if f.Lost > 0 {
		why = append(why, fmt.Sprintf("the emulator lost %d frames outside the model, the most at %s (a daemon's receive ring overflowed while it did not run, or a write failed)", f.Lost, f.LostAt))
	}
	if f.Tunnel != "" {
		why = append(why, "the tunnel "+f.Tunnel+" (transit, clock offset and jitter against the cut links' delay)")
	}
	return strings.Join(why, "; ")
}
