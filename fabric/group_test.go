package fabric

import (
	"net/netip"
	"strings"
	"testing"

	"reef/hostd"
	"reef/switchd"
	"reef/units"
)

// Cut refuses what a group cannot carry between its partitions, saying which link and
// why: a link inside one partition, a host's link, a delay too short to look ahead by,
// a node of no partition, a port wired twice.
func TestCutRefuses(t *testing.T) {
	newSwitch := func(t *testing.T, k int, delay units.Time) *switchd.Switch {
		cfg := chainConfig(k)
		for i := range cfg.Ports {
			cfg.Ports[i].Delay = delay
		}
		sw, err := switchd.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return sw
	}
	for _, tc := range []struct {
		name string
		wire func(t *testing.T) error
		want string
	}{
		{"one partition", func(t *testing.T) error {
			a, b := New(), New()
			g := NewGroup([]*Fabric{a, b}, nil)
			x, y := a.AddSwitch(newSwitch(t, 0, units.Microsecond)), a.AddSwitch(newSwitch(t, 1, units.Microsecond))
			return g.Cut(x, 1, y, 0)
		}, "both ends are in partition 0"},
		{"host", func(t *testing.T) error {
			a, b := New(), New()
			g := NewGroup([]*Fabric{a, b}, nil)
			h, err := hostd.New(hostd.Config{Name: "h1", Addr: netip.AddrFrom4([4]byte{10, 0, 1, 1}), Rate: units.Gbps, MTU: 1500}, hostd.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return g.Cut(a.AddSwitch(newSwitch(t, 0, units.Microsecond)), 1, b.AddHost(h), 0)
		}, "only switch-to-switch links can be cut"},
		{"short delay", func(t *testing.T) error {
			a, b := New(), New()
			g := NewGroup([]*Fabric{a, b}, nil)
			return g.Cut(a.AddSwitch(newSwitch(t, 0, 1)), 1, b.AddSwitch(newSwitch(t, 1, 1)), 0)
		}, "a cut link needs at least 2ns"},
		{"outside the group", func(t *testing.T) error {
			a, b, c := New(), New(), New()
			g := NewGroup([]*Fabric{a, b}, nil)
			return g.Cut(a.AddSwitch(newSwitch(t, 0, units.Microsecond)), 1, c.AddSwitch(newSwitch(t, 1, units.Microsecond)), 0)
		}, "in no partition"},
		{"wired twice", func(t *testing.T) error {
			a, b := New(), New()
			g := NewGroup([]*Fabric{a, b}, nil)
			x, y := a.AddSwitch(newSwitch(t, 0, units.Microsecond)), b.AddSwitch(newSwitch(t, 1, units.Microsecond))
			if err := g.Cut(x, 1, y, 0); err != nil {
				return err
			}
			return g.Cut(x, 1, b.AddSwitch(newSwitch(t, 2, units.Microsecond)), 0)
		}, "wired twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.wire(t)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Cut: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}
