package shard

import (
	"encoding/json"
	"reflect"
	"testing"

	"reef/afpacket"
	"reef/switchd"
	"reef/units"
)

// fill sets every field v holds, recursively, to a value distinct from the others (a
// field the appender forgot, or wrote under another name, then shows in the diff).
func fill(v reflect.Value, n *int, name string) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Bool:
		v.SetBool(*n%2 == 1)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n) * 1001)
	case reflect.Uint64:
		v.SetUint(uint64(*n) * 7)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n, name)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range v.Len() {
			fill(v.Index(i), n, name)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n, name)
		}
	default:
		panic("fill: no case for " + v.Kind().String())
	}
}

// TestReportAppendJSONIsMarshalIndent checks that the stats file's writer and
// encoding/json agree byte for byte on every field of Report (so `reef stats` and the
// dashboard, which decode it with encoding/json, read what they read before), on
// names that need escaping, and on empty and missing slices.
func TestReportAppendJSONIsMarshalIndent(t *testing.T) {
	full := Report{}
	n := 0
	fill(reflect.ValueOf(&full).Elem(), &n, "p1")
	tests := []struct {
		name string
		r    Report
	}{
		{"every field set", full},
		{"zero", Report{}},
		{"empty slices, no shard", Report{Node: "s1", Ports: []switchd.PortStats{}, Driver: afpacket.Stats{Ports: []afpacket.PortStats{}}}},
		{"names to escape", Report{Node: "a\"b\\c<d>&e\u2028f\u2029\x01\t\n\r\b\f", Shard: "\xff\xfeé→x",
			Ports: []switchd.PortStats{{Name: "eth0/1 \x7f ünï"}}, Time: -5 * units.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.MarshalIndent(&tt.r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got, err := tt.r.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("AppendJSON:\n%s\nencoding/json:\n%s", got, want)
			}
		})
	}
}

// TestReportAppendJSONNever checks that a Time of units.Never fails, as it does with
// encoding/json, rather than writing something no reader parses.
func TestReportAppendJSONNever(t *testing.T) {
	r := Report{Time: units.Never}
	if _, err := r.AppendJSON(nil); err == nil {
		t.Error("AppendJSON of a Never time: no error")
	}
}

// TestReportAppendJSONAllocs checks that a report appended to a buffer with room
// allocates nothing (encoding/json with a reused Encoder: 130 allocations for a
// switch of 10 ports).
func TestReportAppendJSONAllocs(t *testing.T) {
	r := Report{}
	n := 0
	fill(reflect.ValueOf(&r).Elem(), &n, "p1")
	buf, _ := r.AppendJSON(nil)
	if allocs := testing.AllocsPerRun(100, func() { buf, _ = r.AppendJSON(buf[:0]) }); allocs != 0 {
		t.Errorf("AppendJSON: %v allocations, want 0", allocs)
	}
}
