package switchd

import (
	"net/netip"
	"slices"
	"testing"
)

// Routes with the same ports share one group, and every destination still resolves to
// its own route's ports, the longest prefix first.
func TestRouterSharesGroups(t *testing.T) {
	cfg := Config{Routes: []Route{
		{Prefix: netip.MustParsePrefix("10.0.0.1/32"), Ports: []int{0}},
		{Prefix: netip.MustParsePrefix("10.0.0.2/32"), Ports: []int{2, 3}},
		{Prefix: netip.MustParsePrefix("10.0.0.3/32"), Ports: []int{2, 3}},
		{Prefix: netip.MustParsePrefix("10.0.0.4/32"), Ports: []int{3, 2}}, // another order: another group
		{Prefix: netip.MustParsePrefix("10.0.1.0/24"), Ports: []int{0}},
		{Prefix: netip.MustParsePrefix("10.0.0.0/16"), Ports: []int{1}},
	}}
	r := newRouter(&cfg)
	if len(r.groups) != 4 {
		t.Fatalf("%d groups, want 4 ([0] [2 3] [3 2] [1])", len(r.groups))
	}
	tests := []struct {
		dst   string
		ports []int
	}{
		{"10.0.0.1", []int{0}},
		{"10.0.0.2", []int{2, 3}},
		{"10.0.0.3", []int{2, 3}},
		{"10.0.0.4", []int{3, 2}},
		{"10.0.1.9", []int{0}},
		{"10.0.7.7", []int{1}},
		{"10.0.0.5", []int{1}},
		{"11.0.0.1", nil},
	}
	for _, tc := range tests {
		g := r.lookup(netip.MustParseAddr(tc.dst).As4())
		var got []int
		if g >= 0 {
			got = r.groups[g].up
		}
		if !slices.Equal(got, tc.ports) {
			t.Errorf("%s: ports %v, want %v", tc.dst, got, tc.ports)
		}
	}
	// a port going down shrinks every route's group that has it, shared or not
	r.setUp([]bool{true, true, false, true})
	if g := r.lookup(netip.MustParseAddr("10.0.0.3").As4()); !slices.Equal(r.groups[g].up, []int{3}) {
		t.Errorf("10.0.0.3 after port 2 went down: %v, want [3]", r.groups[g].up)
	}
}
