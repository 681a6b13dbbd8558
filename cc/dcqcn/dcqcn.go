// Package dcqcn implements DCQCN (Zhu et al., SIGCOMM 2015), the rate-based congestion
// control of RoCEv2 NICs. It has three parts: switches (the congestion point, CP) mark CE
// on packets with a RED profile on the egress queue; the receiver (the notification
// point, NP) turns marks into congestion notification packets (CNPs); and the sender (the
// reaction point, RP), implemented here, cuts its rate on each CNP and raises it again on
// its own timer and byte counter. The host transport (hostd/transport) calls OnFeedback
// for every CNP, OnSend for every data packet, and OnDeadline when Deadline passes, and
// paces the flow at Rate. Like every cc algorithm it is a pure state machine: it never
// reads a clock.
//
// # What the NP (receiver side of the host transport) must do
//
// For each flow, when a data packet arrives carrying CE, the receiver sends a CNP to the
// sender at once, unless it already sent this flow a CNP less than Params.CNPInterval
// (τ = 50 µs in paper units) ago; packets without CE never cause a CNP. NotificationPoint
// implements exactly that rule; a receiver keeps one per flow. The sender's transport
// then calls OnFeedback(now, &cc.Feedback{Kind: cc.CNP}) once per CNP received. For
// Kind == cc.CNP only the kind (and now) matter: the RP reads no other field. ACKs
// (Kind == cc.Ack), their ECE flag included, are ignored: the NP's CNPs are DCQCN's only
// congestion signal, so a transport that echoes marks only as ECE on ACKs gives DCQCN
// nothing to react to. The CNP interval is part of Params (cnp_interval) so that the
// experiment layer scales it with the RP's timers; the transport reads it from there.
//
// # RP control law (spec baselines.md §3.3, oscar.md §4.6)
//
//	on CNP:           R_T = R_C;  R_C = R_C·(1 − α/2);  α = (1 − g)·α + g
//	                  reset the rate timer, the byte counter and their event counts
//	no CNP for τ':    α = (1 − g)·α   (and again every τ')
//	rate timer (every T) and byte counter (every B bytes sent) each count events iT, iB;
//	on each event:    both > F: hyper increase    R_T += R_HAI
//	                  one > F:  additive increase R_T += R_AI
//	                  else:     fast recovery     (R_T unchanged)
//	                  then R_C = (R_T + R_C)/2
//
// Flows start at line rate with α = 1 and no slow start. The increase process starts with
// the first CNP and stops once R_C and R_T are both back at line rate (events would
// change nothing); until then Deadline returns the next rate-timer expiry.
//
// # Parameters
//
// See Params. Defaults are the paper's (40 Gb/s NICs): g = 1/256, τ' = T = 55 µs,
// B = 10 MB, F = 5, R_AI = 40 Mb/s, CNP interval 50 µs. The stored text gives no R_HAI
// or minimum rate; the defaults, 400 Mb/s (10·R_AI) and 40 Mb/s (0.001 of 40 Gb/s), are
// the OSCAR artifact's ratios to line rate (0.01, 0.001) at the paper's 40 Gb/s. Rates
// are absolute, so cc.ScaleParams divides them by the time scale with the line rate.
//
// # Departures from the paper
//
//   - The α timer is kept lazily: on each CNP, α is first decayed by (1 − g)^k for the k
//     whole periods τ' since the last CNP, exactly what a periodic timer restarted at
//     each CNP would have done, without waking the flow every τ'.
//   - A late OnDeadline runs every rate-timer period that has passed, in order.
//   - R_C never drops below MinRate, and neither rate rises above the line rate.
//   - Losses and timeouts do not change the rate: RoCE NICs run DCQCN on CNPs alone.
package dcqcn

import (
	"fmt"
	"math"

	"reef/cc"
	"reef/units"
)

// Params are DCQCN's parameters, in paper units (scaled by cc.ScaleParams).
type Params struct {
	// G is the EWMA gain g of α (dimensionless, in (0, 1]). Default 1/256.
	G float64 `yaml:"g"`
	// InitAlpha is α at the start (dimensionless, in [0, 1]). Default 1.
	InitAlpha float64 `yaml:"init_alpha"`
	// AlphaTimer is τ', the period after which α decays without CNPs (time, > 0).
	// Default 55µs.
	AlphaTimer units.Time `yaml:"alpha_timer"`
	// RateTimer is T, the period of the rate-increase timer (time, > 0). Default 55µs.
	RateTimer units.Time `yaml:"rate_timer"`
	// ByteCounter is B, the bytes sent per byte-counter increase event (bytes, > 0).
	// Default 10MB.
	ByteCounter units.Bytes `yaml:"byte_counter"`
	// FastRecovery is F, the number of events of each kind before additive and hyper
	// increase (count, ≥ 0). Default 5.
	FastRecovery int `yaml:"fast_recovery"`
	// RateAI is R_AI, the additive increase step of the target rate (rate, > 0).
	// Default 40Mbps.
	RateAI units.Rate `yaml:"rate_ai"`
	// RateHAI is R_HAI, the hyper increase step (rate, > 0). Default 400Mbps.
	RateHAI units.Rate `yaml:"rate_hai"`
	// MinRate is the floor of the current rate (rate, > 0). Default 40Mbps.
	MinRate units.Rate `yaml:"min_rate"`
	// CNPInterval is τ, the NP's minimum gap between two CNPs of one flow (time, > 0).
	// The RP does not use it; the receiver does (see NotificationPoint). Default 50µs.
	CNPInterval units.Time `yaml:"cnp_interval"`
}

// DefaultParams returns the paper's defaults.
func DefaultParams() *Params {
	return &Params{
		G:            1.0 / 256,
		InitAlpha:    1,
		AlphaTimer:   55 * units.Microsecond,
		RateTimer:    55 * units.Microsecond,
		ByteCounter:  10 * units.Megabyte,
		FastRecovery: 5,
		RateAI:       40 * units.Mbps,
		RateHAI:      400 * units.Mbps,
		MinRate:      40 * units.Mbps,
		CNPInterval:  50 * units.Microsecond,
	}
}

// Validate names the first bad field and its unit.
func (p *Params) Validate() error {
	switch {
	case !(p.G > 0 && p.G <= 1):
		return fmt.Errorf("dcqcn: g must be in (0, 1] (EWMA gain), got %g", p.G)
	case !(p.InitAlpha >= 0 && p.InitAlpha <= 1):
		return fmt.Errorf("dcqcn: init_alpha must be in [0, 1] (fraction), got %g", p.InitAlpha)
	case p.AlphaTimer <= 0 || p.AlphaTimer == units.Never:
		return fmt.Errorf("dcqcn: alpha_timer must be > 0 (time), got %v", p.AlphaTimer)
	case p.RateTimer <= 0 || p.RateTimer == units.Never:
		return fmt.Errorf("dcqcn: rate_timer must be > 0 (time), got %v", p.RateTimer)
	case p.ByteCounter <= 0:
		return fmt.Errorf("dcqcn: byte_counter must be > 0 (bytes), got %v", p.ByteCounter)
	case p.FastRecovery < 0:
		return fmt.Errorf("dcqcn: fast_recovery must be ≥ 0 (events), got %d", p.FastRecovery)
	case p.RateAI <= 0:
		return fmt.Errorf("dcqcn: rate_ai must be > 0 (bit/s), got %v", p.RateAI)
	case p.RateHAI <= 0:
		return fmt.Errorf("dcqcn: rate_hai must be > 0 (bit/s), got %v", p.RateHAI)
	case p.MinRate <= 0:
		return fmt.Errorf("dcqcn: min_rate must be > 0 (bit/s), got %v", p.MinRate)
	case p.CNPInterval <= 0:
		return fmt.Errorf("dcqcn: cnp_interval must be > 0 (time), got %v", p.CNPInterval)
	}
	return nil
}

func init() {
	cc.Register(cc.SpecOf("dcqcn",
		"DCQCN (SIGCOMM'15): RoCEv2 rate control, cut on CNPs, timer and byte-counter recovery",
		DefaultParams, func(env cc.Env, p *Params) (*DCQCN, error) { return New(env, *p) }))
}

// DCQCN is one flow's reaction point. Build it with New.
type DCQCN struct {
	p    Params
	line float64 // bit/s
	min  float64

	rc, rt     float64 // current and target rate, bit/s
	alpha      float64
	alphaEpoch units.Time // last CNP: α has been decayed for the periods up to here

	active   bool       // the increase process runs (after a CNP, until back at line rate)
	next     units.Time // next rate-timer expiry, units.Never when inactive
	iT, iB   int        // timer and byte-counter events since the last CNP
	sentB    units.Bytes
	sawCNP   bool
	cnpCount uint64
}

// New builds DCQCN's RP for one flow.
func New(env cc.Env, p Params) (*DCQCN, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if env.LineRate <= 0 {
		return nil, fmt.Errorf("dcqcn: line rate must be > 0, got %v", env.LineRate)
	}
	line := float64(env.LineRate)
	return &DCQCN{
		p: p, line: line, min: min(float64(p.MinRate), line),
		rc: line, rt: line, alpha: p.InitAlpha, next: units.Never,
	}, nil
}

// OnSend feeds the byte counter while the increase process runs.
func (d *DCQCN) OnSend(now units.Time, seq uint64, size units.Bytes) {
	if !d.active {
		return
	}
	d.sentB += size
	for d.active && d.sentB >= d.p.ByteCounter {
		d.sentB -= d.p.ByteCounter
		d.iB++
		d.increase()
	}
}

// OnFeedback cuts the rate on a CNP; ACKs are ignored.
func (d *DCQCN) OnFeedback(now units.Time, fb *cc.Feedback) {
	if fb.Kind != cc.CNP {
		return
	}
	d.decayAlpha(now)
	d.cnpCount++
	d.rt = d.rc
	d.rc = max(d.rc*(1-d.alpha/2), d.min)
	d.alpha = (1-d.p.G)*d.alpha + d.p.G
	d.alphaEpoch = now
	d.sawCNP = true
	d.active = true
	d.iT, d.iB, d.sentB = 0, 0, 0
	d.next = now + d.p.RateTimer
}

// decayAlpha applies the α timer's decays for every whole period τ' since the last CNP.
func (d *DCQCN) decayAlpha(now units.Time) {
	if !d.sawCNP || now <= d.alphaEpoch {
		return
	}
	k := int64((now - d.alphaEpoch) / d.p.AlphaTimer)
	if k > 0 {
		d.alpha *= math.Pow(1-d.p.G, float64(k))
		d.alphaEpoch += units.Time(k) * d.p.AlphaTimer
	}
}

// increase runs one rate-increase event (fast recovery, additive or hyper increase).
func (d *DCQCN) increase() {
	f := d.p.FastRecovery
	switch {
	case d.iT > f && d.iB > f:
		d.rt = min(d.rt+float64(d.p.RateHAI), d.line)
	case d.iT > f || d.iB > f:
		d.rt = min(d.rt+float64(d.p.RateAI), d.line)
	}
	d.rc = min((d.rt+d.rc)/2, d.line)
	if math.Abs(d.rt-d.rc) < 1 { // within a bit per second: arrived
		d.rc = d.rt
	}
	if d.rc >= d.line {
		d.active = false
		d.next = units.Never
	}
}

// OnLoss does nothing: DCQCN reacts to CNPs only.
func (d *DCQCN) OnLoss(now units.Time, lost units.Bytes) {}

// OnTimeout does nothing: DCQCN reacts to CNPs only.
func (d *DCQCN) OnTimeout(now units.Time) {}

// Deadline is the next rate-timer expiry, or units.Never when the flow is at line rate.
func (d *DCQCN) Deadline() units.Time { return d.next }

// OnDeadline runs one rate-timer event for each period T that has passed.
func (d *DCQCN) OnDeadline(now units.Time) {
	for d.active && d.next <= now {
		d.iT++
		d.next += d.p.RateTimer
		d.increase()
	}
}

// Window returns units.MaxBytes: DCQCN limits by rate only.
func (d *DCQCN) Window() units.Bytes { return units.MaxBytes }

// Rate is the current rate R_C.
func (d *DCQCN) Rate() units.Rate { return units.Rate(d.rc) }

// TargetRate is R_T.
func (d *DCQCN) TargetRate() units.Rate { return units.Rate(d.rt) }

// Alpha is α as of now (the α timer's decays since the last CNP applied).
func (d *DCQCN) Alpha(now units.Time) float64 {
	a, epoch := d.alpha, d.alphaEpoch
	d.decayAlpha(now)
	v := d.alpha
	d.alpha, d.alphaEpoch = a, epoch
	return v
}

// CNPs is the number of CNPs received.
func (d *DCQCN) CNPs() uint64 { return d.cnpCount }

// NotificationPoint is DCQCN's receiver side for one flow: it decides which CE-marked
// data packets trigger a CNP. It is a pure value; the zero value with Interval set is
// ready to use.
type NotificationPoint struct {
	// Interval is the minimum gap between two CNPs (Params.CNPInterval).
	Interval units.Time
	last     units.Time
	sent     bool
}

// OnData reports whether the receiver must send a CNP now for a data packet of this flow
// that arrived at now, CE-marked or not: yes for a CE-marked packet when no CNP went out
// in the last Interval (spec baselines.md §3.3: "send a CNP at most once per τ = 50 µs
// per flow when marked packets arrive").
func (np *NotificationPoint) OnData(now units.Time, ce bool) bool {
	if !ce || (np.sent && now-np.last < np.Interval) {
		return false
	}
	np.sent, np.last = true, now
	return true
}

// CNPInterval is the notification point's minimum gap between two CNPs of this flow. The
// host transport reads it to act as the flow's NP: the receiver sends a CNP for a
// CE-marked data packet unless it sent one less than this long ago.
func (d *DCQCN) CNPInterval() units.Time { return d.p.CNPInterval }
