package scenario

import (
	"fmt"
	"math/rand/v2"
	"net/netip"

	"reef/cc"
	"reef/emulator/plan"
	"reef/hostd"
	"reef/hostd/transport"
	"reef/switchd"
	"reef/units"
)

// HostFlow is a flow ready for its source host: the scenario's Flow with what the plan
// says about its path. The controller computes it (it has the plan); a host daemon that
// gets it over JSON needs nothing else to build the flow.
type HostFlow struct {
	Flow
	// DstAddr is the destination host's address.
	DstAddr netip.Addr `json:"dst_addr"`
	// BaseRTT is the path's unloaded round-trip time for a full data packet and its ACK;
	// PathHops the switches on it.
	BaseRTT  units.Time `json:"base_rtt"`
	PathHops int        `json:"path_hops"`
	// NetworkRTT is the largest base RTT among the run's flows (cc.Env.NetworkRTT; see
	// Scenario.NetworkRTT), set by the controller.
	NetworkRTT units.Time `json:"network_rtt,omitempty"`
}

// Resolve computes the HostFlow of f for a source host whose NIC carries full data
// frames of packetBytes.
func (f *Flow) Resolve(p *plan.Plan, packetBytes units.Bytes) (HostFlow, error) {
	dst, ok := p.HostAddr(f.Dst)
	if !ok {
		return HostFlow{}, fmt.Errorf("flow %s: no destination host %q", f.Name, f.Dst)
	}
	if _, ok := p.HostByName(f.Src); !ok {
		return HostFlow{}, fmt.Errorf("flow %s: no source host %q", f.Name, f.Src)
	}
	rtt, err := p.BaseRTT(f.Src, f.Dst, packetBytes)
	if err != nil {
		return HostFlow{}, fmt.Errorf("flow %s: %w", f.Name, err)
	}
	path, err := p.FirstPath(f.Src, f.Dst)
	if err != nil {
		return HostFlow{}, fmt.Errorf("flow %s: no path from %s to %s", f.Name, f.Src, f.Dst)
	}
	return HostFlow{Flow: *f, DstAddr: dst, BaseRTT: rtt, PathHops: len(path) - 1}, nil
}

// NetworkRTT is the largest base RTT among the scenario's flows, each for a full data
// frame of its source host (hostd.Config.FlowEnv) and an ACK: cc.Env's NetworkRTT, the
// same for every flow of the run on every backend. 0 without flows. Flows of a workload
// share host pairs: each pair and frame size is computed once.
func (s *Scenario) NetworkRTT(p *plan.Plan) (units.Time, error) {
	type pair struct {
		src, dst string
		pkt      units.Bytes
	}
	seen := map[pair]bool{}
	var m units.Time
	for i := range s.Flows {
		f := &s.Flows[i]
		hp, ok := p.HostByName(f.Src)
		if !ok {
			return 0, fmt.Errorf("flow %s: no source host %q", f.Name, f.Src)
		}
		k := pair{f.Src, f.Dst, hp.Config.FlowEnv(f.INTHops).PacketSize}
		if seen[k] {
			continue
		}
		seen[k] = true
		rtt, err := p.BaseRTT(k.src, k.dst, k.pkt)
		if err != nil {
			return 0, fmt.Errorf("flow %s: %w", f.Name, err)
		}
		m = max(m, rtt)
	}
	return m, nil
}

// Spec builds the hostd.FlowSpec for h, with a fresh congestion controller whose random
// source is seeded from (seed, flow ID), so every backend builds the same flow.
func (hf *HostFlow) Spec(h *hostd.Host, seed uint64) (hostd.FlowSpec, error) {
	env := h.FlowEnv(hf.INTHops)
	env.BaseRTT, env.PathHops, env.NetworkRTT = hf.BaseRTT, hf.PathHops, hf.NetworkRTT
	env.Rand = rand.New(rand.NewPCG(seed, uint64(hf.ID)))
	alg, err := hf.Algorithm(env)
	if err != nil {
		return hostd.FlowSpec{}, err
	}
	return hostd.FlowSpec{ID: hf.ID, Name: hf.Name, Dst: hf.DstAddr, Size: hf.Size, Start: hf.Start, Stop: hf.Stop,
		Alg: alg, HopCap: hf.INTHops, Ack: transport.AckPolicy{Every: hf.AckEvery}, BaseRTT: hf.BaseRTT}, nil
}

// HostOptions are the options every host of a run is built with, the same on every
// backend: the lab's MPD unit (from the first switch stamping MPD) and the transport's
// loss-recovery tuning, the scenario's (in emulator units, as compile scaled it) or the
// transport defaults.
func (s *Scenario) HostOptions(p *plan.Plan) (hostd.Options, error) {
	var o hostd.Options
	for _, sp := range p.Switches {
		if sp.Config.INT.Mode == switchd.INTMPD {
			o.MPDUnit = sp.Config.INT.MPDUnit
			break
		}
	}
	o.Tuning = transport.DefaultTuning()
	if s.Transport != nil {
		o.Tuning = *s.Transport
	}
	if err := o.Tuning.Validate(); err != nil {
		return o, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return o, nil
}

// TuningAt is the transport's default loss-recovery tuning at time scale tau (its
// times multiplied by tau), so timeouts keep their relation to the scaled RTTs: what
// an experiment compiles into Scenario.Transport.
func TuningAt(tau float64) (*transport.Tuning, error) {
	t := transport.DefaultTuning()
	if tau != 1 {
		if err := cc.ScaleParams(&t, tau); err != nil {
			return nil, fmt.Errorf("transport tuning: %w", err)
		}
	}
	return &t, nil
}
