package switchd

import (
	"errors"
	"fmt"
	"net/netip"

	"reef/units"
	"reef/wire"
)

// Limits on a port's configuration.
const (
	// MinMTU and MaxMTU bound PortConfig.MTU (IPv4's minimum; the largest jumbo frame
	// switches commonly take, which leaves room above the usual 9000).
	MinMTU = 68
	MaxMTU = 9216
	// frameHeadroom is what a frame may carry beyond the MTU: the Ethernet header and
	// one VLAN tag.
	frameHeadroom = wire.EthLen + 4
)

// MaxFrame is the largest frame a port with this MTU sends (the Ethernet header and one
// VLAN tag beyond the MTU): a port's buffer holds at least one.
func MaxFrame(mtu int) int { return mtu + frameHeadroom }

// pauseQuanta is what a pause frame the switch sends asks for (the maximum).
const pauseQuanta = 0xffff

// PFCHeadroom is the bytes that may still arrive on port p after the switch decides to
// pause its upstream: the pause frame's trip to the peer (p.Delay), the frame the peer
// is serialising and one more that the switch is receiving (2 × max frame), and what
// the link holds on the way back (p.IngressDelay, plus p.Delay again when the peer is a
// switch, which applies its own propagation), all at p.Rate (links are symmetric).
// A lossless port needs XOff + PFCHeadroom within the buffer of any egress port its
// traffic can reach; with several PFC ports feeding one egress, their sum.
func PFCHeadroom(p PortConfig) units.Bytes {
	flight := p.Delay + p.IngressDelay
	if !p.PeerIsHost {
		flight += p.Delay
	}
	return p.Rate.BytesIn(flight) + units.Bytes(2*MaxFrame(p.MTU))
}

// Validate checks cfg and returns every problem found (errors.Join), each naming the
// port, route or field at fault and what was expected.
func (cfg *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("switchd: "+format, args...))
	}
	n := len(cfg.Ports)
	if n == 0 {
		bad("switch %q has no ports", cfg.Name)
	}
	if n > 1<<15 {
		bad("switch %q has %d ports; want at most %d", cfg.Name, n, 1<<15)
	}
	minBuf := units.MaxBytes
	for i := range cfg.Ports {
		if b := cfg.Ports[i].Buffer; b < minBuf {
			minBuf = b
		}
	}
	for i, p := range cfg.Ports {
		where := fmt.Sprintf("port %d (%q)", i, p.Name)
		if p.Rate <= 0 {
			bad("%s: rate %v; want > 0", where, p.Rate)
		}
		if p.Delay < 0 {
			bad("%s: delay %v; want ≥ 0", where, p.Delay)
		}
		if p.IngressDelay < 0 {
			bad("%s: ingress_delay %v; want ≥ 0", where, p.IngressDelay)
		}
		if p.MTU < MinMTU || p.MTU > MaxMTU {
			bad("%s: mtu %d; want %d to %d", where, p.MTU, MinMTU, MaxMTU)
		} else if p.Buffer < units.Bytes(MaxFrame(p.MTU)) {
			bad("%s: buffer %v; want ≥ one full frame (%dB)", where, p.Buffer, MaxFrame(p.MTU))
		}
		if p.ECN != nil {
			validateECN(bad, where+": ecn", *p.ECN)
		}
		if p.PFC.Enabled {
			switch {
			case p.PFC.XOff <= 0:
				bad("%s: pfc xoff %v; want > 0", where, p.PFC.XOff)
			case p.PFC.XOn < 0 || p.PFC.XOn >= p.PFC.XOff:
				bad("%s: pfc xon %v; want ≥ 0 and below xoff (%v)", where, p.PFC.XOn, p.PFC.XOff)
			case p.MTU >= MinMTU && p.PFC.XOff+PFCHeadroom(p) > minBuf:
				bad("%s: pfc xoff %v + headroom %v exceeds the smallest egress buffer (%v): the port cannot be lossless; lower xoff or raise the buffers",
					where, p.PFC.XOff, PFCHeadroom(p), minBuf)
			}
		}
	}
	if cfg.Snap != 0 && cfg.Snap < max(wire.MinSnap, wire.PauseLen) {
		bad("snap %d; want 0 (whole frames) or ≥ %d bytes", cfg.Snap, max(wire.MinSnap, wire.PauseLen))
	}
	validateECN(bad, "ecn", cfg.ECN)
	switch cfg.INT.Mode {
	case "", INTOff, INTHPCC:
	case INTMPD:
		if cfg.INT.MPDUnit <= 0 {
			bad("int: mpd_unit %v; want > 0 in mode mpd", cfg.INT.MPDUnit)
		}
	default:
		bad("int: mode %q; want off, mpd or hpcc", cfg.INT.Mode)
	}
	switch cfg.LB.Mode {
	case "", LBECMP, LBSpray:
	case LBAdaptive:
		if cfg.LB.Quantum < 0 {
			bad("lb: quantum %v; want ≥ 0 (0: htsim's levels by buffer fraction)", cfg.LB.Quantum)
		}
	case LBFlowlet:
		if cfg.LB.FlowletGap <= 0 {
			bad("lb: flowlet_gap %v; want > 0 in mode flowlet", cfg.LB.FlowletGap)
		}
	default:
		bad("lb: mode %q; want ecmp, spray, adaptive or flowlet", cfg.LB.Mode)
	}
	seen := map[netip.Prefix]int{}
	for i, r := range cfg.Routes {
		where := fmt.Sprintf("route %d (%v)", i, r.Prefix)
		if !r.Prefix.IsValid() || !r.Prefix.Addr().Is4() {
			bad("%s: prefix must be a valid IPv4 prefix", where)
		} else if j, dup := seen[r.Prefix.Masked()]; dup {
			bad("%s: same prefix as route %d", where, j)
		} else {
			seen[r.Prefix.Masked()] = i
		}
		if len(r.Ports) == 0 {
			bad("%s: no ports", where)
		}
		used := map[int]bool{}
		for _, p := range r.Ports {
			if p < 0 || p >= n {
				bad("%s: port %d; want 0 to %d", where, p, n-1)
			} else if used[p] {
				bad("%s: port %d listed twice", where, p)
			}
			used[p] = true
		}
	}
	for i, p := range cfg.Pins {
		where := fmt.Sprintf("pin %d (%v → %v)", i, p.Src, p.Dst)
		if !p.Src.Is4() || !p.Dst.Is4() {
			bad("%s: src and dst must be IPv4 addresses", where)
		}
		if p.Port < 0 || p.Port >= n {
			bad("%s: port %d; want 0 to %d", where, p.Port, n-1)
		}
	}
	return errors.Join(errs...)
}

func validateECN(bad func(string, ...any), where string, c ECNConfig) {
	switch c.Mode {
	case "", ECNOff:
	case ECNStep:
		if c.K < 0 {
			bad("%s: k %v; want ≥ 0", where, c.K)
		}
	case ECNRED:
		if c.Min < 0 || c.Max <= c.Min {
			bad("%s: min %v, max %v; want 0 ≤ min < max", where, c.Min, c.Max)
		}
		if !(c.PMax > 0 && c.PMax <= 1) {
			bad("%s: pmax %v; want in (0, 1]", where, c.PMax)
		}
	default:
		bad("%s: mode %q; want off, step or red", where, c.Mode)
	}
}
