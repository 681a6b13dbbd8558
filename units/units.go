// Package units holds the value types every reef core shares: Time (nanoseconds since the
// start of a run), Bytes and Rate (bits per second), with exact integer conversions
// between them and parsers for the unit strings people write in topology and experiment
// files ("100Mbps", "25us", "100KB").
//
// Time is used both for instants and for durations, as in quic-go's monotime: the cores
// never see time.Time, so a run in virtual time (the sim backend) and a run on the
// monotonic clock (netns, docker) execute the same arithmetic.
package units

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Time is a point in time or a duration, in nanoseconds. Instants count from the start of
// the run.
type Time int64

// Common durations.
const (
	Nanosecond  Time = 1
	Microsecond Time = 1000
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond

	// Never is a deadline that is never reached: a component that wants no timer
	// returns Never from its NextDeadline.
	Never Time = math.MaxInt64
)

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / 1e9 }

// Microseconds returns t in microseconds as a float.
func (t Time) Microseconds() float64 { return float64(t) / 1e3 }

// Scale multiplies t by f, rounding to the nearest nanosecond.
func (t Time) Scale(f float64) Time { return Time(math.Round(float64(t) * f)) }

// String formats t with the largest unit that keeps it readable ("25µs", "1.5ms").
func (t Time) String() string {
	switch {
	case t == Never:
		return "never"
	case t == 0:
		return "0s"
	case abs64(int64(t)) < int64(Microsecond):
		return strconv.FormatInt(int64(t), 10) + "ns"
	case abs64(int64(t)) < int64(Millisecond):
		return trim(float64(t)/1e3) + "µs"
	case abs64(int64(t)) < int64(Second):
		return trim(float64(t)/1e6) + "ms"
	default:
		return trim(float64(t)/1e9) + "s"
	}
}

// Bytes is a size in bytes.
type Bytes int64

// Common sizes (decimal, as link buffers are quoted; KiB and friends parse too).
const (
	Byte     Bytes = 1
	Kilobyte Bytes = 1000
	Megabyte Bytes = 1000 * Kilobyte
	Gigabyte Bytes = 1000 * Megabyte
	// MaxBytes means "no limit" where a size bounds something (a window, a buffer).
	MaxBytes Bytes = math.MaxInt64
)

// String formats b with a decimal unit.
func (b Bytes) String() string {
	switch {
	case b == MaxBytes:
		return "unlimited"
	case abs64(int64(b)) < int64(Kilobyte):
		return strconv.FormatInt(int64(b), 10) + "B"
	case abs64(int64(b)) < int64(Megabyte):
		return trim(float64(b)/1e3) + "KB"
	case abs64(int64(b)) < int64(Gigabyte):
		return trim(float64(b)/1e6) + "MB"
	default:
		return trim(float64(b)/1e9) + "GB"
	}
}

// Rate is a data rate in bits per second.
type Rate int64

// Common rates.
const (
	BitPerSecond Rate = 1
	Kbps         Rate = 1000
	Mbps         Rate = 1000 * Kbps
	Gbps         Rate = 1000 * Mbps
)

// String formats r with a decimal unit ("100Mbps").
func (r Rate) String() string {
	switch {
	case abs64(int64(r)) < int64(Kbps):
		return strconv.FormatInt(int64(r), 10) + "bps"
	case abs64(int64(r)) < int64(Mbps):
		return trim(float64(r)/1e3) + "Kbps"
	case abs64(int64(r)) < int64(Gbps):
		return trim(float64(r)/1e6) + "Mbps"
	default:
		return trim(float64(r)/1e9) + "Gbps"
	}
}

// TxTime is how long b bytes take to serialise at rate r, rounded up to the next
// nanosecond. It is exact for any b and r that fit in int64 (the product is computed in
// 128 bits). A rate of zero or less means "infinitely fast" and gives 0.
func (r Rate) TxTime(b Bytes) Time {
	if r <= 0 || b <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(b), 8e9)
	q, rem := bits.Div64(hi, lo, uint64(r))
	if rem != 0 {
		q++
	}
	return Time(q)
}

// BytesIn is how many whole bytes rate r carries in duration d (rounded down).
func (r Rate) BytesIn(d Time) Bytes {
	if r <= 0 || d <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(r), uint64(d))
	q, _ := bits.Div64(hi, lo, 8e9)
	return Bytes(q)
}

// RateOf is the rate that carries b bytes in d (0 when d <= 0).
func RateOf(b Bytes, d Time) Rate {
	if d <= 0 || b <= 0 {
		return 0
	}
	return Rate(float64(b) * 8e9 / float64(d))
}

// BDP is the bandwidth-delay product of rate r over round-trip time rtt.
func BDP(r Rate, rtt Time) Bytes { return r.BytesIn(rtt) }

// ParseTime parses a duration with a unit: "25us", "25µs", "1.5ms", "100ns", "2s".
// A bare number is an error: a time without a unit is ambiguous.
func ParseTime(s string) (Time, error) {
	num, unit := splitUnit(s)
	mult := map[string]float64{"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}
	m, ok := mult[unit]
	if !ok {
		return 0, fmt.Errorf("time %q: want a number with a unit of ns, us, ms or s", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("time %q: %q is not a number", s, num)
	}
	return Time(math.Round(v * m)), nil
}

// ParseBytes parses a size: "1500", "1500B", "100KB", "1.5MB", "64KiB". KB, MB and GB are
// decimal; KiB, MiB and GiB are binary. A bare number is bytes.
func ParseBytes(s string) (Bytes, error) {
	num, unit := splitUnit(s)
	mult := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}
	m, ok := mult[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("size %q: want a number of B, KB, MB, GB, KiB, MiB or GiB", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: %q is not a number", s, num)
	}
	return Bytes(math.Round(v * m)), nil
}

// ParseRate parses a rate: "100Mbps", "100Mbit/s", "1.5Gbps", "200G", "10M". A bare number
// is an error.
func ParseRate(s string) (Rate, error) {
	num, unit := splitUnit(s)
	u := strings.ToLower(unit)
	u = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(u, "bps"), "bit/s"), "b/s")
	mult := map[string]float64{"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
	m, ok := mult[u]
	if !ok || unit == "" {
		return 0, fmt.Errorf("rate %q: want a number with a unit of bps, Kbps, Mbps, Gbps or Tbps", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("rate %q: %q is not a number", s, num)
	}
	return Rate(math.Round(v * m)), nil
}

// UnmarshalText lets Time fields decode from YAML and JSON strings such as "25us".
func (t *Time) UnmarshalText(b []byte) error {
	v, err := ParseTime(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// MarshalText writes t in the form ParseTime reads.
func (t Time) MarshalText() ([]byte, error) { return t.AppendText(nil) }

// AppendText appends what MarshalText writes to b (encoding.TextAppender): a writer
// that reuses its buffer allocates nothing.
func (t Time) AppendText(b []byte) ([]byte, error) {
	if t == Never {
		return b, fmt.Errorf("units: cannot write an infinite time")
	}
	return append(strconv.AppendInt(b, int64(t), 10), "ns"...), nil
}

// UnmarshalText lets Bytes fields decode from strings such as "100KB".
func (b *Bytes) UnmarshalText(s []byte) error {
	v, err := ParseBytes(string(s))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalText writes b in the form ParseBytes reads.
func (b Bytes) MarshalText() ([]byte, error) { return b.AppendText(nil) }

// AppendText appends what MarshalText writes to dst (encoding.TextAppender).
func (b Bytes) AppendText(dst []byte) ([]byte, error) {
	return strconv.AppendInt(dst, int64(b), 10), nil
}

// UnmarshalText lets Rate fields decode from strings such as "100Mbps".
func (r *Rate) UnmarshalText(s []byte) error {
	v, err := ParseRate(string(s))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// MarshalText writes r in the form ParseRate reads.
func (r Rate) MarshalText() ([]byte, error) { return r.AppendText(nil) }

// AppendText appends what MarshalText writes to b (encoding.TextAppender).
func (r Rate) AppendText(b []byte) ([]byte, error) {
	return append(strconv.AppendInt(b, int64(r), 10), "bps"...), nil
}

func splitUnit(s string) (num, unit string) {
	s = strings.TrimSpace(s)
	i := len(s)
	for i > 0 {
		c := s[i-1]
		if (c >= '0' && c <= '9') || c == '.' {
			break
		}
		i--
	}
	return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i:])
}

func trim(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
