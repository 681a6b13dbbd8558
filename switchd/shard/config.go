package shard

import (
	"errors"
	"fmt"

	"reef/switchd"
)

// Config is what one switch daemon runs: its switches, the links between them that it
// carries in memory, and its external ports (real interfaces). The planner writes it
// (emulator/plan, through the backend) as JSON; a lone switch is a shard of one
// (Single).
type Config struct {
	// Name names the shard ("shard1"), for logs and placement.
	Name string `json:"name"`
	// Switches are the shard's switches, in a fixed order.
	Switches []switchd.Config `json:"switches"`
	// Links are the links between two switches of the shard.
	Links []Link `json:"links,omitempty"`
	// Ports are the external ports, in the I/O driver's port order.
	Ports []Port `json:"ports"`
}

// End is one switch port.
type End struct {
	Switch string `json:"switch"`
	Port   int    `json:"port"`
}

// Link is an in-memory link between two switch ports of a shard.
type Link struct {
	A End `json:"a"`
	B End `json:"b"`
}

// Port is an external port: a switch port whose frames go out on a real interface.
type Port struct {
	End
	// Iface is the interface's name, in namespace Netns (a path such as
	// /run/netns/reef-lab-tor1; "": the daemon's own namespace).
	Iface string `json:"iface"`
	Netns string `json:"netns,omitempty"`
}

// Single is the shard of one switch whose ports are all external, each named as the
// switch's port, in the daemon's own namespace: what a daemon per switch runs.
func Single(cfg switchd.Config) Config {
	c := Config{Name: cfg.Name, Switches: []switchd.Config{cfg}}
	for i, p := range cfg.Ports {
		c.Ports = append(c.Ports, Port{End: End{cfg.Name, i}, Iface: p.Name})
	}
	return c
}

// PortConfig returns the configuration of switch port e, if the shard has it.
func (c *Config) PortConfig(e End) (switchd.PortConfig, bool) {
	for i := range c.Switches {
		if sc := &c.Switches[i]; sc.Name == e.Switch && e.Port >= 0 && e.Port < len(sc.Ports) {
			return sc.Ports[e.Port], true
		}
	}
	return switchd.PortConfig{}, false
}

// Validate checks that every link and external port names a switch port of the shard,
// and that no port is used twice. Every switch port need not be wired (an unwired port
// drops what it sends).
func (c *Config) Validate() error {
	if len(c.Switches) == 0 {
		return fmt.Errorf("shard %s: no switches", c.Name)
	}
	ports := map[string]int{}
	for i, s := range c.Switches {
		if _, dup := ports[s.Name]; dup {
			return fmt.Errorf("shard %s: switch %q appears twice", c.Name, s.Name)
		}
		ports[s.Name] = len(c.Switches[i].Ports)
	}
	used := map[End]string{}
	use := func(e End, what string) error {
		n, ok := ports[e.Switch]
		switch {
		case !ok:
			return fmt.Errorf("shard %s: %s: no switch %q in the shard", c.Name, what, e.Switch)
		case e.Port < 0 || e.Port >= n:
			return fmt.Errorf("shard %s: %s: switch %s has no port %d (it has %d)", c.Name, what, e.Switch, e.Port, n)
		}
		if prev, dup := used[e]; dup {
			return fmt.Errorf("shard %s: %s: %s port %d is already %s", c.Name, what, e.Switch, e.Port, prev)
		}
		used[e] = what
		return nil
	}
	var errs []error
	for i, l := range c.Links {
		what := fmt.Sprintf("links[%d]", i)
		errs = append(errs, use(l.A, what), use(l.B, what))
	}
	for i, p := range c.Ports {
		what := fmt.Sprintf("ports[%d]", i)
		if p.Iface == "" {
			errs = append(errs, fmt.Errorf("shard %s: %s: no interface name", c.Name, what))
		}
		errs = append(errs, use(p.End, what))
	}
	return errors.Join(errs...)
}
