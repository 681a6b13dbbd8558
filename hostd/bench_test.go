package hostd_test

import (
	"net/netip"
	"slices"
	"testing"

	"reef/hostd"
	"reef/hostd/hosttest"
	"reef/units"
)

// direct wires two hosts back to back with zero propagation delay: each frame reaches
// the peer at its Due. It needs no copies, so it measures the host alone.
type direct struct {
	h   [2]*hostd.Host
	now units.Time
	// onSend sees every frame host 0 sends.
	onSend func(out hostd.Out)
}

func newDirect(tb testing.TB, rate units.Rate, w units.Bytes, r units.Rate) *direct {
	tb.Helper()
	d := &direct{}
	for i := range d.h {
		h, err := hostd.New(hostd.Config{Name: "h", Addr: netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}), Rate: rate, MTU: 1500}, hostd.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		d.h[i] = h
	}
	if err := d.h[0].AddFlow(hostd.FlowSpec{ID: 1, Dst: d.h[1].Config().Addr, Alg: &hosttest.Fixed{W: w, R: r}}); err != nil {
		tb.Fatal(err)
	}
	return d
}

// step advances to the next deadline and exchanges frames; it returns data frames sent.
func (d *direct) step() int {
	d.now = max(d.now, min(d.h[0].NextDeadline(), d.h[1].NextDeadline()))
	n := 0
	for i, h := range d.h {
		for {
			out, ok := h.Poll(d.now)
			if !ok {
				break
			}
			if i == 0 {
				n++
				if d.onSend != nil {
					d.onSend(out)
				}
			}
			d.h[1-i].Receive(d.now, 0, out.Frame)
		}
	}
	return n
}

func TestZeroAllocsPerPacket(t *testing.T) {
	d := newDirect(t, 10*units.Gbps, 20_000, 0)
	for i := 0; i < 10_000; i++ { // warm up: rings and maps reach their size
		d.step()
	}
	sent := 0
	allocs := testing.AllocsPerRun(1000, func() { sent += d.step() })
	if allocs != 0 {
		t.Errorf("%.2f allocations per step in steady state, want 0", allocs)
	}
	if sent == 0 {
		t.Fatal("no data moved during the measurement")
	}
}

// BenchmarkPacketCycle is the host-side cost of one data packet and its ACK:
// Poll/PollTransmit on the sender, Receive/HandlePacket and the ACK on the receiver,
// Receive/HandlePacket of the ACK on the sender.
func BenchmarkPacketCycle(b *testing.B) {
	d := newDirect(b, 10*units.Gbps, 20_000, 0)
	for i := 0; i < 10_000; i++ {
		d.step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	pkts := 0
	for pkts < b.N {
		pkts += d.step()
	}
}

// BenchmarkNICPacer reports, in virtual time, the achieved rate against the configured
// one and the inter-packet gap p50/p99 for a NIC-limited flow and a cc-paced flow.
func BenchmarkNICPacer(b *testing.B) {
	for _, tc := range []struct {
		name string
		nic  units.Rate
		pace units.Rate
	}{{"nic-1Gbps", units.Gbps, 0}, {"paced-300Mbps-on-1Gbps", units.Gbps, 300 * units.Mbps}, {"nic-100Gbps", 100 * units.Gbps, 0}} {
		b.Run(tc.name, func(b *testing.B) {
			d := newDirect(b, tc.nic, units.MaxBytes, tc.pace)
			var deps []units.Time
			var bytes units.Bytes
			d.onSend = func(out hostd.Out) {
				deps = append(deps, out.Due)
				bytes += units.Bytes(len(out.Frame))
			}
			for len(deps) < b.N+1 {
				d.step()
			}
			gaps := make([]units.Time, 0, len(deps))
			for i := 1; i < len(deps); i++ {
				gaps = append(gaps, deps[i]-deps[i-1])
			}
			slices.Sort(gaps)
			want := tc.nic
			if tc.pace > 0 {
				want = tc.pace
			}
			span := deps[len(deps)-1] - deps[0]
			got := float64(bytes) * float64(len(deps)-1) / float64(len(deps)) * 8 / span.Seconds()
			b.ReportMetric(got/float64(want), "achieved/configured")
			b.ReportMetric(float64(gaps[len(gaps)/2]), "gap-p50-ns")
			b.ReportMetric(float64(gaps[len(gaps)*99/100]), "gap-p99-ns")
		})
	}
}

// BenchmarkPacketCycle64Flows is BenchmarkPacketCycle with 64 long-lived flows sharing
// the sender's NIC: the host's per-packet scans grow with the active flows.
func BenchmarkPacketCycle64Flows(b *testing.B) {
	d := newDirect(b, 10*units.Gbps, 20_000, 0)
	for id := uint32(2); id <= 64; id++ {
		if err := d.h[0].AddFlow(hostd.FlowSpec{ID: id, Dst: d.h[1].Config().Addr, Alg: &hosttest.Fixed{W: 20_000}}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 20_000; i++ {
		d.step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	pkts := 0
	for pkts < b.N {
		pkts += d.step()
	}
}
