package hostd_test

import (
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"reef/cc"
	"reef/hostd"
	"reef/hostd/hosttest"
	"reef/hostd/transport"
	"reef/units"
	"reef/wire"
)

// pair builds two hosts at rate joined through one switch with the given port to h1.
func pair(t *testing.T, cfg hosttest.Config, rate units.Rate, port hosttest.Port) (*hosttest.Net, *hostd.Host, *hostd.Host) {
	t.Helper()
	n := hosttest.New(cfg)
	_, h0, err := n.AddHost(rate, hosttest.Port{Rate: rate}, hostd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, h1, err := n.AddHost(rate, port, hostd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return n, h0, h1
}

func addFlow(t *testing.T, h *hostd.Host, spec hostd.FlowSpec) {
	t.Helper()
	if err := h.AddFlow(spec); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, n *hosttest.Net, until units.Time) {
	t.Helper()
	if err := n.Run(until); err != nil {
		t.Fatal(err)
	}
}

// wantDelivered checks every byte of a finite flow arrived exactly once.
func wantDelivered(t *testing.T, why string, rx *hostd.Host, size units.Bytes) transportStats {
	t.Helper()
	rs := rx.ReceiverStats()
	if len(rs) != 1 {
		t.Fatalf("%s: %d receiving flows, want 1", why, len(rs))
	}
	r := rs[0]
	mss := transport.MSS(1500, 0)
	pkts := uint64((size + mss - 1) / mss)
	if !r.Done || r.BytesDelivered != size || r.Packets-r.Duplicates != pkts {
		t.Fatalf("%s: done=%v delivered %d of %d bytes, %d unique packets of %d", why, r.Done, r.BytesDelivered, size, r.Packets-r.Duplicates, pkts)
	}
	return transportStats{r.ReceiverStats}
}

type transportStats struct{ transport.ReceiverStats }

func TestInOrderDelivery(t *testing.T) {
	n, h0, h1 := pair(t, hosttest.Config{Delay: 5 * units.Microsecond}, units.Gbps, hosttest.Port{Rate: units.Gbps})
	const size = 1_000_000
	addFlow(t, h0, hostd.FlowSpec{ID: 7, Dst: h1.Config().Addr, Size: size, Alg: &hosttest.Fixed{W: 64_000}})
	run(t, n, 100*units.Millisecond)
	r := wantDelivered(t, "in-order path delivers every byte once", h1, size)
	if r.OutOfOrder != 0 || r.Duplicates != 0 {
		t.Errorf("in-order path: %d out of order, %d duplicates; want 0", r.OutOfOrder, r.Duplicates)
	}
	fs := h0.FlowStats()[0]
	if fs.Retransmits != 0 || !fs.Done {
		t.Errorf("lossless path: %d retransmits, done=%v; want 0, true", fs.Retransmits, fs.Done)
	}
	// 64KB window ≫ BDP (~2.5KB): the flow runs at line rate; FCT ≈ frames/rate + RTT.
	frames := units.Bytes(size/transport.MSS(1500, 0)+1) * units.Bytes(transport.DataFrameLen(0, 0))
	ideal := units.Gbps.TxTime(size+frames) + 20*units.Microsecond
	if fs.FCT > ideal+ideal/50 || fs.FCT < ideal-ideal/10 {
		t.Errorf("FCT %v, want within 2%% of %v (line rate)", fs.FCT, ideal)
	}
	if c := h0.Completions(); len(c) != 1 || c[0].FCT != fs.FCT || c[0].Size != size {
		t.Errorf("completion log %+v, want one entry with FCT %v", c, fs.FCT)
	}
}

func TestLossEveryTenthPacket(t *testing.T) {
	data := 0
	cfg := hosttest.Config{Delay: 5 * units.Microsecond, Drop: func(now units.Time, v wire.View) bool {
		if v.Type() != wire.TypeData {
			return false
		}
		data++
		return data%10 == 0
	}}
	// A tiny buffer (8 frames) behind a window of 40 packets also overflows.
	n, h0, h1 := pair(t, cfg, units.Gbps, hosttest.Port{Rate: units.Gbps / 2, Buffer: 8 * 1500})
	const size = 2_000_000
	alg := &hosttest.Fixed{W: 40 * transport.MSS(1500, 0)}
	addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: h1.Config().Addr, Size: size, Alg: alg})
	run(t, n, units.Second)
	wantDelivered(t, "lossy path still delivers every byte exactly once", h1, size)
	fs := h0.FlowStats()[0]
	lost := n.Drops + n.Overflow()
	if fs.Retransmits < lost || n.Drops == 0 || n.Overflow() == 0 {
		t.Errorf("%d dropped + %d overflowed, %d retransmits: every loss needs a retransmission", n.Drops, n.Overflow(), fs.Retransmits)
	}
	if alg.LostBytes == 0 {
		t.Errorf("RACK declared nothing lost; the algorithm must hear of losses")
	}
	t.Logf("drops %d overflow %d retx %d spurious %d timeouts %d fct %v", n.Drops, n.Overflow(), fs.Retransmits, fs.Spurious, fs.Timeouts, fs.FCT)
}

func TestReorderingWithoutLossRetransmitsNothing(t *testing.T) {
	// Spraying over paths whose delays differ by up to 50µs (half the RTT): a packet is
	// overtaken by up to four others, so three duplicate ACKs would fire constantly.
	var n *hosttest.Net
	cfg := hosttest.Config{Delay: 20 * units.Microsecond, Seed: 1, Jitter: func(now units.Time, v wire.View) units.Time {
		if v.Type() != wire.TypeData {
			return 0
		}
		return units.Time(n.Rand.Int64N(int64(50 * units.Microsecond)))
	}}
	n, h0, h1 := pair(t, cfg, units.Gbps, hosttest.Port{Rate: units.Gbps})
	const size = 3_000_000
	addFlow(t, h0, hostd.FlowSpec{ID: 3, Dst: h1.Config().Addr, Size: size, Alg: &hosttest.Fixed{W: 30_000}})
	run(t, n, units.Second)
	r := wantDelivered(t, "reordered path delivers every byte", h1, size)
	if r.OutOfOrder < 100 {
		t.Fatalf("only %d packets out of order: the test does not reorder", r.OutOfOrder)
	}
	fs := h0.FlowStats()[0]
	if fs.Retransmits != 0 || r.Duplicates != 0 {
		t.Errorf("reordering without loss: %d retransmits, %d duplicates; want 0 (dupACKs are not loss)", fs.Retransmits, r.Duplicates)
	}
}

func TestDupThreshUnderReordering(t *testing.T) {
	// With classic hole detection (dup_thresh 3, the MSwift paper's Swift baseline)
	// reordering by up to eight packets causes spurious retransmissions, and they are
	// recognised as such.
	var n *hosttest.Net
	cfg := hosttest.Config{Delay: 20 * units.Microsecond, Seed: 1, Jitter: func(now units.Time, v wire.View) units.Time {
		if v.Type() != wire.TypeData {
			return 0
		}
		return units.Time(n.Rand.Int64N(int64(100 * units.Microsecond)))
	}}
	n = hosttest.New(cfg)
	tun := transport.DefaultTuning()
	tun.DupThresh = 3
	_, h0, err := n.AddHost(units.Gbps, hosttest.Port{Rate: units.Gbps}, hostd.Options{Tuning: tun})
	if err != nil {
		t.Fatal(err)
	}
	_, h1, err := n.AddHost(units.Gbps, hosttest.Port{Rate: units.Gbps}, hostd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const size = 3_000_000
	alg := &hosttest.Fixed{W: 30_000}
	addFlow(t, h0, hostd.FlowSpec{ID: 3, Dst: h1.Config().Addr, Size: size, Alg: alg})
	run(t, n, units.Second)
	wantDelivered(t, "reordered path delivers every byte", h1, size)
	fs := h0.FlowStats()[0]
	if fs.Retransmits < 50 || alg.LostBytes == 0 {
		t.Errorf("dup_thresh 3 under 100µs of reordering: %d retransmits; want many (spraying looks like loss)", fs.Retransmits)
	}
	if fs.Spurious == 0 || fs.Spurious > fs.Retransmits {
		t.Errorf("%d spurious of %d retransmits: every one is spurious (no loss), most detectable", fs.Spurious, fs.Retransmits)
	}
	t.Logf("retransmits %d, spurious %d", fs.Retransmits, fs.Spurious)
}

func TestRTOBackoff(t *testing.T) {
	// A black hole from 1ms to 20ms: every probe is lost, and the timeout doubles.
	cfg := hosttest.Config{Delay: 5 * units.Microsecond, Drop: func(now units.Time, v wire.View) bool {
		return now >= units.Millisecond && now < 20*units.Millisecond
	}}
	n, h0, h1 := pair(t, cfg, units.Gbps, hosttest.Port{Rate: units.Gbps})
	var retx []units.Time
	n.OnEgress = func(host int, out hostd.Out) {
		v, _ := wire.Classify(out.Frame)
		if host == 0 && v.Flags()&wire.FlagRetx != 0 && out.Due < 20*units.Millisecond {
			retx = append(retx, out.Due)
		}
	}
	const size = 1_000_000
	alg := &hosttest.Fixed{W: 20_000}
	addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: h1.Config().Addr, Size: size, Alg: alg})
	run(t, n, units.Millisecond)
	srtt := h0.FlowStats()[0].SRTT // the RTT is steady by now: the timeout is srtt + max(MinRTO, srtt)
	run(t, n, units.Second)
	wantDelivered(t, "the flow recovers after the black hole", h1, size)
	if len(retx) < 5 {
		t.Fatalf("%d retransmissions during the black hole, want ≥ 5 probes", len(retx))
	}
	// Each gap between probes doubles (the first probe may wait for the frame then on
	// the wire, so start from the second gap).
	for i := 3; i < len(retx); i++ {
		g0, g1 := retx[i-1]-retx[i-2], retx[i]-retx[i-1]
		if g1 < 2*g0-2*units.Microsecond || g1 > 2*g0+2*units.Microsecond {
			t.Errorf("probe gaps %v then %v: want exponential backoff (×2)", g0, g1)
		}
	}
	if g, rto := retx[2]-retx[1], srtt+max(transport.DefaultTuning().MinRTO, srtt); g != 4*rto {
		t.Errorf("second gap %v, want 4 × the timeout, 4 × %v (srtt %v)", g, rto, srtt)
	}
	// The last timeout (after the black hole) sends its probe after 20ms.
	if alg.Timeouts != len(retx)+1 {
		t.Errorf("%d timeouts reported to cc, %d probes sent before 20ms; want one more timeout", alg.Timeouts, len(retx))
	}
}

func TestAckCoalescing(t *testing.T) {
	n, h0, h1 := pair(t, hosttest.Config{Delay: 5 * units.Microsecond}, units.Gbps, hosttest.Port{Rate: units.Gbps})
	const size = 1_450_000 // 1000 packets
	addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: h1.Config().Addr, Size: size, Alg: &hosttest.Fixed{W: 64_000},
		Ack: transport.AckPolicy{Every: 4, Delay: 50 * units.Microsecond}})
	run(t, n, 100*units.Millisecond)
	r := wantDelivered(t, "coalesced ACKs still complete the flow", h1, size)
	if r.AcksSent < 240 || r.AcksSent > 260 {
		t.Errorf("%d ACKs for %d packets with every=4: want ≈ 250", r.AcksSent, r.Packets)
	}
}

func TestCEAckedImmediately(t *testing.T) {
	// Every packet queued above 1 byte is marked; with every=16 CE still gets its own ACK.
	n, h0, h1 := pair(t, hosttest.Config{Delay: 5 * units.Microsecond}, units.Gbps, hosttest.Port{Rate: units.Gbps / 2, ECNK: 1})
	addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: h1.Config().Addr, Size: 145_000, Alg: &hosttest.Fixed{W: 64_000},
		Ack: transport.AckPolicy{Every: 16}})
	run(t, n, 100*units.Millisecond)
	r := wantDelivered(t, "flow completes", h1, 145_000)
	if r.CE == 0 || r.AcksSent < r.CE {
		t.Errorf("%d CE packets, %d ACKs: every CE packet must be acknowledged at once", r.CE, r.AcksSent)
	}
}

func TestNICSharedFairly(t *testing.T) {
	n, h0, h1 := pair(t, hosttest.Config{Delay: 5 * units.Microsecond}, units.Gbps, hosttest.Port{Rate: 10 * units.Gbps})
	for id := uint32(1); id <= 3; id++ {
		addFlow(t, h0, hostd.FlowSpec{ID: id, Dst: h1.Config().Addr, Alg: &hosttest.Fixed{W: units.MaxBytes}, Stop: 10 * units.Millisecond})
	}
	run(t, n, 10*units.Millisecond)
	var total units.Bytes
	fs := h0.FlowStats()
	for _, f := range fs {
		total += f.BytesSent
	}
	for _, f := range fs {
		if d := f.BytesSent - total/3; d < -1500 || d > 1500 {
			t.Errorf("flow %d sent %d of %d bytes, want a third ± one packet (round robin)", f.ID, f.BytesSent, total)
		}
	}
	// The NIC is never idle: frames back to back at 1Gbps for 10ms.
	if got := h0.Stats().BytesSent; got < 1_249_000 || got > 1_250_000 {
		t.Errorf("NIC sent %d bytes in 10ms at 1Gbps, want 1.25MB", got)
	}
}

func TestSubPacketWindowPaces(t *testing.T) {
	// Window = MSS/4: one packet every 4 × srtt (Swift's cwnd < 1 rule).
	n, h0, h1 := pair(t, hosttest.Config{Delay: 25 * units.Microsecond}, units.Gbps, hosttest.Port{Rate: units.Gbps})
	var sent []units.Time
	n.OnEgress = func(host int, out hostd.Out) {
		if host == 0 {
			sent = append(sent, out.Due)
		}
	}
	mss := transport.MSS(1500, 0)
	addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: h1.Config().Addr, Alg: &hosttest.Fixed{W: mss / 4}, Stop: 20 * units.Millisecond})
	run(t, n, 20*units.Millisecond)
	srtt := h0.FlowStats()[0].SRTT
	last := sent[len(sent)-1] - sent[len(sent)-2]
	if want := 4 * srtt; last < want-units.Microsecond || last > want+units.Microsecond {
		t.Errorf("gap between packets %v, want 4 × srtt = %v", last, want)
	}
}

func TestPausePausesNIC(t *testing.T) {
	n, h0, h1 := pair(t, hosttest.Config{Delay: 5 * units.Microsecond}, units.Gbps, hosttest.Port{Rate: units.Gbps})
	addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: h1.Config().Addr, Alg: &hosttest.Fixed{W: units.MaxBytes}, Stop: units.Millisecond})
	var sent []units.Time
	n.OnEgress = func(host int, out hostd.Out) {
		if host == 0 {
			sent = append(sent, out.Due)
		}
	}
	run(t, n, 100*units.Microsecond)
	pause := make([]byte, wire.PauseLen)
	wire.BuildPause(pause, [6]byte{2}, 1000) // 1000 × 512 bits at 1Gbps = 512µs
	h0.Receive(n.Now(), 0, pause)
	before := len(sent)
	run(t, n, 700*units.Microsecond)
	// At most the frame already on the wire leaves during the pause.
	for _, at := range sent[before:] {
		if at > 100*units.Microsecond+13*units.Microsecond && at < 612*units.Microsecond {
			t.Fatalf("frame left at %v during a pause ending at 612µs", at)
		}
	}
	if len(sent) == before+1 || h0.Stats().Pauses != 1 {
		t.Errorf("NIC did not resume after the pause (%d frames after it)", len(sent)-before)
	}
}

func TestNonReefIgnored(t *testing.T) {
	_, h0, _ := pair(t, hosttest.Config{}, units.Gbps, hosttest.Port{Rate: units.Gbps})
	h0.Receive(0, 0, []byte{1, 2, 3})
	h0.Receive(0, 0, make([]byte, 100))
	if got := h0.Stats().Ignored; got != 2 {
		t.Errorf("ignored %d frames, want 2 (left to the kernel)", got)
	}
	if _, ok := h0.Poll(0); ok {
		t.Errorf("garbage made the host send")
	}
	// A data frame cut short of its payload creates no receiver.
	alg := &hosttest.Fixed{W: 10_000}
	addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: hosttest.Addr(1), Alg: alg})
	out, ok := h0.Poll(0)
	for !ok {
		out, ok = h0.Poll(h0.NextDeadline())
	}
	_, _, h2 := pair(t, hosttest.Config{}, units.Gbps, hosttest.Port{Rate: units.Gbps})
	h2.Receive(0, 0, out.Frame[:len(out.Frame)-1])
	if h2.Stats().Malformed != 1 || len(h2.ReceiverStats()) != 0 {
		t.Errorf("truncated data: malformed %d, %d receivers; want 1, 0", h2.Stats().Malformed, len(h2.ReceiverStats()))
	}
}

func TestAddFlowErrors(t *testing.T) {
	_, h0, h1 := pair(t, hosttest.Config{}, units.Gbps, hosttest.Port{Rate: units.Gbps})
	ok := hostd.FlowSpec{ID: 1, Dst: h1.Config().Addr, Alg: &hosttest.Fixed{W: 1}}
	addFlow(t, h0, ok)
	bad := map[string]hostd.FlowSpec{
		"duplicate id": ok,
		"no algorithm": {ID: 2, Dst: h1.Config().Addr},
		"self":         {ID: 3, Dst: h0.Config().Addr, Alg: ok.Alg},
		"stop<start":   {ID: 4, Dst: h1.Config().Addr, Alg: ok.Alg, Start: 5, Stop: 4},
		"too many int": {ID: 5, Dst: h1.Config().Addr, Alg: ok.Alg, HopCap: 9},
	}
	for name, spec := range bad {
		if err := h0.AddFlow(spec); err == nil {
			t.Errorf("%s: AddFlow accepted %+v", name, spec)
		}
	}
	if got := len(h0.FlowStats()); got != 1 {
		t.Errorf("%d flows after rejected specs, want 1", got)
	}
}

func TestCNPs(t *testing.T) {
	// Every queued packet is marked; the receiver sends one CNP per 50µs at most.
	n, h0, h1 := pair(t, hosttest.Config{Delay: 5 * units.Microsecond}, units.Gbps, hosttest.Port{Rate: units.Gbps / 2, ECNK: 1})
	alg := &hosttest.Fixed{W: 64_000}
	const size = 1_416_000 // 1000 packets, ≈ 24ms at 0.5Gbps
	addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: h1.Config().Addr, Size: size, Alg: alg, CNPInterval: 50 * units.Microsecond})
	run(t, n, units.Second)
	wantDelivered(t, "flow completes", h1, size)
	r := h1.ReceiverStats()[0]
	fct := h0.FlowStats()[0].FCT
	// Marked packets arrive every 24.2µs (1514B at 0.5Gbps): the first one ≥ 50µs after
	// a CNP is the third, so CNPs go every 72.7µs.
	gap := 3 * (units.Gbps / 2).TxTime(1514)
	want := int(fct / gap)
	if alg.CNPs != int(r.CNPsSent) || alg.CNPs > want+1 || alg.CNPs < want*9/10 {
		t.Errorf("%d CNPs sent, %d heard over %v: want ≈ %d (one per %v)", r.CNPsSent, alg.CNPs, fct, want, gap)
	}
	// Without an interval no CNPs.
	n, h0, h1 = pair(t, hosttest.Config{Delay: 5 * units.Microsecond}, units.Gbps, hosttest.Port{Rate: units.Gbps / 2, ECNK: 1})
	alg = &hosttest.Fixed{W: 64_000}
	addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: h1.Config().Addr, Size: size, Alg: alg})
	run(t, n, units.Second)
	if alg.CNPs != 0 {
		t.Errorf("%d CNPs for a flow that asked for none", alg.CNPs)
	}
}

func TestSubPacketWindowWithRate(t *testing.T) {
	// A rate-based flow whose window is below one packet keeps one packet in flight.
	n, h0, h1 := pair(t, hosttest.Config{Delay: 25 * units.Microsecond}, units.Gbps, hosttest.Port{Rate: units.Gbps})
	mss := transport.MSS(1500, 0)
	addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: h1.Config().Addr, Alg: &hosttest.Fixed{W: mss / 2, R: 500 * units.Mbps}, Stop: 5 * units.Millisecond})
	for at := units.Microsecond; at < 5*units.Millisecond; at += 7 * units.Microsecond {
		run(t, n, at)
		if in := h0.FlowStats()[0].Inflight; in > mss {
			t.Fatalf("at %v: %dB in flight with a window of %dB and a rate; want at most one packet", at, in, mss/2)
		}
	}
	// One packet per RTT (≈ 100µs + serialisation): far below the 500Mbps rate.
	if sent := h0.FlowStats()[0].PacketsSent; sent < 40 || sent > 50 {
		t.Errorf("%d packets in 5ms, want ≈ one per RTT", sent)
	}
}

func TestStressLossReorderManyFlows(t *testing.T) {
	// Random 2% loss, reordering up to 40µs, a small buffer and flows of every window
	// mode at once: every byte of every flow arrives exactly once.
	for seed := uint64(1); seed <= 3; seed++ {
		var n *hosttest.Net
		cfg := hosttest.Config{Delay: 10 * units.Microsecond, Seed: seed,
			Drop: func(now units.Time, v wire.View) bool { return n.Rand.IntN(50) == 0 },
			Jitter: func(now units.Time, v wire.View) units.Time {
				return units.Time(n.Rand.Int64N(int64(40 * units.Microsecond)))
			},
		}
		n = hosttest.New(cfg)
		var hosts []*hostd.Host
		for i := 0; i < 4; i++ {
			_, h, err := n.AddHost(units.Gbps, hosttest.Port{Rate: units.Gbps, Buffer: 30_000}, hostd.Options{})
			if err != nil {
				t.Fatal(err)
			}
			hosts = append(hosts, h)
		}
		mss := transport.MSS(1500, 0)
		windows := []units.Bytes{mss / 3, 2 * mss, 20 * mss, units.MaxBytes}
		sizes := map[uint32]units.Bytes{}
		id := uint32(0)
		for src := range hosts {
			for k, w := range windows {
				id++
				dst := (src + 1 + k%3) % 4
				size := units.Bytes(50_000 + 37_000*int(id))
				sizes[id] = size
				var rate units.Rate
				if w == units.MaxBytes {
					rate = 200 * units.Mbps
				}
				addFlow(t, hosts[src], hostd.FlowSpec{ID: id, Dst: hosts[dst].Config().Addr, Size: size,
					Start: units.Time(k) * 100 * units.Microsecond, Alg: &hosttest.Fixed{W: w, R: rate}})
			}
		}
		run(t, n, 5*units.Second)
		done := 0
		for _, h := range hosts {
			for _, c := range h.Completions() {
				done++
				if c.Size != sizes[c.ID] {
					t.Errorf("flow %d completed with size %d", c.ID, c.Size)
				}
			}
			for _, r := range h.ReceiverStats() {
				if !r.Done || r.BytesDelivered != sizes[r.ID] {
					t.Errorf("seed %d flow %d: done=%v delivered %d of %d", seed, r.ID, r.Done, r.BytesDelivered, sizes[r.ID])
				}
			}
		}
		if done != len(sizes) {
			t.Errorf("seed %d: %d of %d flows completed", seed, done, len(sizes))
		}
		t.Logf("seed %d: %d drops, %d overflows", seed, n.Drops, n.Overflow())
	}
}

func TestWindowFilledNeverExceeded(t *testing.T) {
	// RTT ≈ 800µs: the 1Gbps BDP (100KB) exceeds the 64KB window, so the window binds.
	n, h0, h1 := pair(t, hosttest.Config{Delay: 200 * units.Microsecond}, units.Gbps, hosttest.Port{Rate: units.Gbps})
	addFlow(t, h0, hostd.FlowSpec{ID: 7, Dst: h1.Config().Addr, Alg: &hosttest.Fixed{W: 64_000}, Stop: 10 * units.Millisecond})
	maxIn := units.Bytes(0)
	for at := units.Microsecond; at < 10*units.Millisecond; at += 7 * units.Microsecond {
		run(t, n, at)
		maxIn = max(maxIn, h0.FlowStats()[0].Inflight)
	}
	if maxIn > 64_000 || maxIn < 64_000-transport.MSS(1500, 0) {
		t.Errorf("most in flight %dB; want the 64000B window filled but never exceeded", maxIn)
	}
}

// A driver that stalls past an RTO deadline and only then reads the ACK that arrived
// before it: with no grace the timeout fires (at its deadline) and the late ACK shows
// as skew; with a grace longer than the stall the ACK is handled first, in computed
// order, and nothing times out. A grace shorter than the stall does the same when the
// driver reports the stall (Resumed), and not when it does not. Either way the flow
// finishes at the ACK's arrival.
func TestTimerGraceLateAck(t *testing.T) {
	const ms = units.Millisecond
	for _, tc := range []struct {
		name     string
		grace    units.Time
		resumed  bool
		timedOut bool
		skewed   bool
	}{
		{"no grace", 0, false, true, true}, // at its deadline, and again after each backoff
		{"no grace, stall reported", 0, true, true, true},
		{"grace longer than the stall", 20 * ms, false, false, false},
		{"grace shorter than the stall", 2 * ms, false, true, true},
		{"grace shorter than the stall, stall reported", 2 * ms, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newHost := func(i byte, opts hostd.Options) *hostd.Host {
				h, err := hostd.New(hostd.Config{Name: "h", Addr: hosttest.Addr(int(i)), Rate: 100 * units.Mbps}, opts)
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			h0, h1 := newHost(0, hostd.Options{TimerGrace: tc.grace}), newHost(1, hostd.Options{})
			alg := &hosttest.Fixed{W: 100 * units.Kilobyte}
			addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: hosttest.Addr(1), Size: 1000, Alg: alg})
			// next polls h at its deadlines until it sends a frame.
			next := func(h *hostd.Host) hostd.Out {
				for range 10 {
					if out, ok := h.Poll(h.NextDeadline()); ok {
						return out
					}
				}
				t.Fatal("no frame")
				return hostd.Out{}
			}
			data := next(h0)
			h1.Receive(data.Due, 0, data.Frame)
			ack := next(h1)
			ackFrame, ackAt := append([]byte(nil), ack.Frame...), ack.Due
			// h0's driver stalls 10 ms, well past the RTO, then reads the ACK.
			if tc.resumed {
				h0.Resumed(h0.NextDeadline(), ackAt+10*ms)
			}
			for {
				if _, ok := h0.Poll(ackAt + 10*ms); !ok {
					break
				}
			}
			h0.Receive(ackAt, 0, ackFrame)
			for {
				if _, ok := h0.Poll(ackAt + 10*ms); !ok {
					break
				}
			}
			if (alg.Timeouts > 0) != tc.timedOut {
				t.Errorf("%d timeouts, want some: %v", alg.Timeouts, tc.timedOut)
			}
			fs := h0.FlowStats()[0]
			if !fs.Done || fs.FCT != ackAt {
				t.Errorf("done %v with FCT %v, want done at the ACK's arrival %v", fs.Done, fs.FCT, ackAt)
			}
			if sk := h0.Skew(); (sk.Max > 0) != tc.skewed || sk.Count != 1 {
				t.Errorf("skew %+v over the ACK, want skewed %v", sk, tc.skewed)
			}
			if st := h0.Stats().StaleTimers; (st > 0) != tc.skewed {
				t.Errorf("%d stale timers, want some: %v", st, tc.skewed)
			}
		})
	}
}

// A hold after a reported stall is not forever: with no frame to cancel it, a timer
// that came due in the stall fires once the host has run for the stall's length and a
// grace again.
func TestResumedHoldEnds(t *testing.T) {
	const ms = units.Millisecond
	const grace = 2 * ms
	h, err := hostd.New(hostd.Config{Name: "h", Addr: hosttest.Addr(0), Rate: 100 * units.Mbps}, hostd.Options{TimerGrace: grace})
	if err != nil {
		t.Fatal(err)
	}
	alg := &hosttest.Fixed{W: 100 * units.Kilobyte}
	addFlow(t, h, hostd.FlowSpec{ID: 1, Dst: hosttest.Addr(1), Size: 1000, Alg: alg})
	for range 10 {
		if _, ok := h.Poll(h.NextDeadline()); ok {
			break
		}
	}
	from := h.NextDeadline() // the RTO deadline plus the grace: the stall starts there
	resume := from + 10*ms
	h.Resumed(from, resume)
	if d := h.NextDeadline(); d != resume+10*ms+grace {
		t.Fatalf("next deadline %v after the stall, want the hold's end %v", d, resume+10*ms+grace)
	}
	for now := resume; now < resume+10*ms+grace; now += ms {
		for {
			if _, ok := h.Poll(now); !ok {
				break
			}
		}
		if alg.Timeouts != 0 {
			t.Fatalf("timeout handled at %v, during the hold", now)
		}
	}
	for {
		if _, ok := h.Poll(h.NextDeadline()); !ok {
			break
		}
	}
	if alg.Timeouts == 0 {
		t.Fatal("no timeout after the hold")
	}
}

// AppendActiveProgress reports the flows running now and those that finished since
// the count the caller passes back: a flow not started yet is left out, and a finished
// one is reported once, by the first call after its end, at its final state.
func TestActiveProgress(t *testing.T) {
	n, h0, h1 := pair(t, hosttest.Config{Delay: 5 * units.Microsecond}, units.Gbps, hosttest.Port{Rate: units.Gbps})
	dst := h1.Config().Addr
	addFlow(t, h0, hostd.FlowSpec{ID: 1, Dst: dst, Alg: &hosttest.Fixed{W: 8_000}})                                             // long-lived
	addFlow(t, h0, hostd.FlowSpec{ID: 2, Dst: dst, Size: 10_000, Alg: &hosttest.Fixed{W: 8_000}})                               // ends early
	addFlow(t, h0, hostd.FlowSpec{ID: 3, Dst: dst, Size: 10_000, Start: 5 * units.Millisecond, Alg: &hosttest.Fixed{W: 8_000}}) // starts late
	since := 0
	for _, step := range []struct {
		until units.Time
		want  map[uint32]bool // reported flows: done or not
		ended int
	}{
		{units.Millisecond, map[uint32]bool{1: false, 2: true}, 1},
		{2 * units.Millisecond, map[uint32]bool{1: false}, 1},
		{10 * units.Millisecond, map[uint32]bool{1: false, 3: true}, 2},
		{11 * units.Millisecond, map[uint32]bool{1: false}, 2},
	} {
		run(t, n, step.until)
		var got []hostd.FlowProgress
		got, since = h0.AppendActiveProgress(nil, since)
		stats := map[uint32]hostd.FlowStats{}
		for _, s := range h0.FlowStats() {
			stats[s.ID] = s
		}
		if len(got) != len(step.want) || since != step.ended {
			t.Fatalf("at %v: %d flows reported, %d ended; want %v and %d", step.until, len(got), since, step.want, step.ended)
		}
		for _, p := range got {
			done, ok := step.want[p.ID]
			if s := stats[p.ID]; !ok || p.Done != done || !p.Started || p.BytesAcked != s.BytesAcked || p.Cwnd != s.Cwnd {
				t.Errorf("at %v: flow %d reported %+v; want it %v, done %v, %d bytes acked", step.until, p.ID, p, ok, done, s.BytesAcked)
			}
		}
	}
}

// A flow's Stop is part of the workload, not a timer a late frame could cancel: a host
// polled late, with a timer grace, or after a reported stall starts no new data at or
// after it, and still sends all it had due before it, as a host polled at every
// deadline does.
func TestStopIsExact(t *testing.T) {
	const us = units.Microsecond
	const stop = 1000 * us
	sends := func(grace, step units.Time, stall bool) int {
		tun := transport.DefaultTuning()
		tun.InitRTO = 10 * units.Millisecond // no ACKs come: no RTO before the run's end
		h, err := hostd.New(hostd.Config{Name: "h", Addr: hosttest.Addr(0), Rate: units.Gbps},
			hostd.Options{TimerGrace: grace, Tuning: tun})
		if err != nil {
			t.Fatal(err)
		}
		// Paced at 100 Mbit/s: a frame every 121 µs from 0, the last before the stop at 969 µs.
		alg := &hosttest.Fixed{W: units.MaxBytes, R: 100 * units.Mbps}
		addFlow(t, h, hostd.FlowSpec{ID: 1, Dst: hosttest.Addr(1), Alg: alg, Stop: stop})
		for now := units.Time(0); now <= 3*stop; {
			if stall && now >= stop-200*us {
				h.Resumed(now-500*us, now)
			}
			for {
				if _, ok := h.Poll(now); !ok {
					break
				}
			}
			if step == 0 {
				if now = h.NextDeadline(); now == units.Never {
					break
				}
				continue
			}
			now += step
		}
		return alg.Sends
	}
	want := sends(0, 0, false)
	if want != 9 {
		t.Fatalf("polled at every deadline: %d data frames, want 9 (0 to 969 µs, 121 µs apart)", want)
	}
	for _, tc := range []struct {
		name  string
		grace units.Time
		step  units.Time
		stall bool
	}{
		{"polled every 300 µs", 0, 300 * us, false},
		{"5 ms grace", 5 * units.Millisecond, 300 * us, false},
		{"5 ms grace, polled every 70 µs", 5 * units.Millisecond, 70 * us, false},
		{"5 ms grace, stalls reported", 5 * units.Millisecond, 300 * us, true},
	} {
		if got := sends(tc.grace, tc.step, tc.stall); got != want {
			t.Errorf("%s: %d data frames, want %d", tc.name, got, want)
		}
	}
}

// A flow whose algorithm the host builds (FlowSpec.NewAlg) gets it when it starts and
// lets it go, with its sender, when it finishes; it sends the same frames as a flow
// given its algorithm up front, and reports at the end what it did at its completion.
func TestFlowBuiltAtStartReleasedAtFinish(t *testing.T) {
	const size = 200_000
	// The first flow runs from 0 to about 5 ms (it loses frames and recovers); the
	// host is looked at in the middle of it, and the second starts after it.
	const mid, second = 2 * units.Millisecond, 10 * units.Millisecond
	type result struct {
		stats []hostd.FlowStats
		done  []hostd.Completion
		sent  uint64
		net   *hosttest.Net // the hosts, kept alive
	}
	// built counts the algorithms NewAlg built, freed those the collector then found
	// unreachable.
	var built, freed atomic.Int32
	newAlg := func() (cc.Algorithm, error) {
		a := &hosttest.Fixed{W: 40_000}
		built.Add(1)
		runtime.AddCleanup(a, func(*atomic.Int32) { freed.Add(1) }, &freed)
		return a, nil
	}
	// collect runs the collector until want algorithms are freed, or a while.
	collect := func(want int32) int32 {
		for range 100 {
			runtime.GC()
			if freed.Load() >= want {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		return freed.Load()
	}
	exchange := func(lazy bool) result {
		n, h0, h1 := pair(t, hosttest.Config{Delay: 5 * units.Microsecond}, units.Gbps,
			hosttest.Port{Rate: units.Gbps / 2, Buffer: 20 * 1500})
		for i, at := range []units.Time{0, second} {
			spec := hostd.FlowSpec{ID: uint32(i + 1), Dst: h1.Config().Addr, Size: size, Start: at}
			if lazy {
				spec.NewAlg = newAlg
			} else {
				spec.Alg = &hosttest.Fixed{W: 40_000}
			}
			addFlow(t, h0, spec)
		}
		if lazy {
			if got := built.Load(); got != 2 {
				t.Fatalf("AddFlow built %d algorithms for 2 flows; want one each, to check it", got)
			}
			if st := h0.FlowStats()[0]; st.Started || st.Cwnd != 0 {
				t.Errorf("a flow not started reports started %v, window %d; want false, 0", st.Started, st.Cwnd)
			}
			run(t, n, mid)
			st := h0.FlowStats()
			if built.Load() != 3 || !st[0].Started || st[1].Started {
				t.Fatalf("at %v: %d algorithms built, started %v and %v; want 3, the first flow's at its start",
					mid, built.Load(), st[0].Started, st[1].Started)
			}
			// The first flow is running: its algorithm is held, the two checked ones not.
			if got := collect(2); got != 2 {
				t.Errorf("at %v: %d algorithms freed; want the 2 AddFlow checked", mid, got)
			}
		}
		run(t, n, 50*units.Millisecond)
		return result{h0.FlowStats(), h0.Completions(), h0.Stats().FramesSent, n}
	}
	want := exchange(false)
	if len(want.done) != 2 || want.done[0].Finish >= second || want.stats[1].Cwnd != 40_000 {
		t.Fatalf("up front: completions %+v, stats %+v; want both flows finished, the first before %v", want.done, want.stats, second)
	}
	got := exchange(true)
	if built.Load() != 4 {
		t.Errorf("%d algorithms built; want 4: each flow's checked, and built at its start", built.Load())
	}
	if !reflect.DeepEqual(got.stats, want.stats) || !reflect.DeepEqual(got.done, want.done) || got.sent != want.sent {
		t.Errorf("built at start: %+v\nup front: %+v; want the same", got, want)
	}
	// Both flows finished while the host lives on: it holds neither algorithm.
	if n := collect(4); n != 4 {
		t.Errorf("%d of 4 algorithms freed after both flows finished; want all", n)
	}
	runtime.KeepAlive(got.net)
}
