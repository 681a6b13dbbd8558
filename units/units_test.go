package units

import (
	"math"
	"testing"
)

func TestTxTime(t *testing.T) {
	tests := []struct {
		r    Rate
		b    Bytes
		want Time
	}{
		{100 * Mbps, 1500, 120 * Microsecond},
		{1 * Gbps, 1500, 12 * Microsecond},
		{1 * Gbps, 1, 8},
		{3 * Gbps, 1, 3},                   // 2.67ns rounds up
		{200 * Gbps, 4096, 164},            // 163.84ns rounds up
		{100 * Gbps, 1 << 40, 87960930223}, // no overflow at 1 TiB
		{0, 1500, 0},
	}
	for _, tc := range tests {
		if got := tc.r.TxTime(tc.b); got != tc.want {
			t.Errorf("%v.TxTime(%v) = %d, want %d", tc.r, tc.b, got, tc.want)
		}
	}
	if got := (100 * Mbps).BytesIn(8 * Millisecond); got != 100*Kilobyte {
		t.Errorf("100Mbps carries %v in 8ms, want 100KB", got)
	}
}

func TestParse(t *testing.T) {
	times := map[string]Time{"25us": 25 * Microsecond, "25µs": 25 * Microsecond, "1.5ms": 1500 * Microsecond, "100ns": 100, "2s": 2 * Second}
	for s, want := range times {
		if got, err := ParseTime(s); err != nil || got != want {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	sizes := map[string]Bytes{"1500": 1500, "1500B": 1500, "100KB": 100000, "64KiB": 65536, "1.5MB": 1500000}
	for s, want := range sizes {
		if got, err := ParseBytes(s); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	rates := map[string]Rate{"100Mbps": 100 * Mbps, "100Mbit/s": 100 * Mbps, "1.5Gbps": 1500 * Mbps, "200G": 200 * Gbps, "10M": 10 * Mbps}
	for s, want := range rates {
		if got, err := ParseRate(s); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, bad := range []string{"25", "25 parsecs", "us", ""} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"100", "100 furlongs", "Mbps"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
	if _, err := ParseBytes("12 apples"); err == nil {
		t.Error("ParseBytes accepted apples")
	}
}

func TestTextRoundTrip(t *testing.T) {
	for _, v := range []Time{0, 1, 25 * Microsecond, -3} {
		b, _ := v.MarshalText()
		var got Time
		if err := got.UnmarshalText(b); err != nil || got != v {
			t.Errorf("Time %d → %q → %d, %v", v, b, got, err)
		}
	}
	for _, v := range []Rate{1, 100 * Mbps} {
		b, _ := v.MarshalText()
		var got Rate
		if err := got.UnmarshalText(b); err != nil || got != v {
			t.Errorf("Rate %d → %q → %d, %v", v, b, got, err)
		}
	}
	if _, err := Never.MarshalText(); err == nil {
		t.Error("Never marshalled")
	}
	if s := (25 * Microsecond).String(); s != "25µs" {
		t.Errorf("String = %q", s)
	}
	if math.Abs((1500*Microsecond).Seconds()-0.0015) > 1e-12 {
		t.Error("Seconds")
	}
}
