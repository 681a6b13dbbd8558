package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"reef/afpacket"
	"reef/emulator/plan"
	"reef/wire"
)

// featureModes are the switch configurations BenchmarkForwardingFeatures compares: all
// three switches of the chain with ECN and INT off, then with a step ECN threshold and
// INT in mpd or hpcc mode. The suffix is appended to chainTopo.
var featureModes = []struct{ name, switches string }{
	{"off", ""},
	{"ecn+mpd", `switches:
  "*":
    ecn: {mode: step, k: 30KB}
    int: {mode: mpd, mpd_unit: 1us}
`},
	{"ecn+hpcc", `switches:
  "*":
    ecn: {mode: step, k: 30KB}
    int: {mode: hpcc}
`},
}

// BenchmarkForwardingFeatures is issue 3's forwarding-rate figure: how many reef data
// packets per second a chain of three switchd daemons forwards with ECN and INT on, as a
// ratio to the same chain with them off. Every mode has its own lab (a switch's features
// are fixed at start); the labs are up together and blasted in turn, 15 rounds, so
// the load the machine carries meanwhile spreads over every mode; the ratios are the
// medians of each round's ratio to that round's off rate, the rates the median rounds. The frames are reef data packets (INT applies to nothing else), ECT(0)
// (ECN marking looks at nothing else) with FlagINT and three hop slots (hpcc stamps one
// per switch). The links run at 1 Tbit/s, so no queue builds and ECN never marks: this
// is the cost of the checks and stamps on every packet. A probe frame first checks that
// each mode does stamp (MPD seen, or three hop records). Besides packets per second,
// each mode reports the daemons' CPU time per delivered packet, which other work on the
// machine changes less (it takes CPU and packets away alike); X/off-cpu is off's CPU
// per packet over X's, a rate ratio as X/off-pps is.
func BenchmarkForwardingFeatures(b *testing.B) {
	needRoot(b)
	// 170 B: the smallest reef data frame with three hop slots.
	for _, size := range []int{wire.ReefOffset + wire.HeaderLen + 3*wire.HopLen, 1514} {
		b.Run(fmt.Sprintf("frame=%dB", size), func(b *testing.B) {
			type labRun struct {
				name   string
				lab    *Lab
				h1, h2 *nsHandle
				frame  []byte
				pps    []float64
				cpu    []float64 // the daemons' CPU ns per delivered packet
			}
			var runs []*labRun
			for _, m := range featureModes {
				p := planFor(b, chainTopo+m.switches, labName("bff"))
				lab := up(b, p, Options{SwitchdArgs: []string{"--busy-poll", "50us"}})
				r := &labRun{name: m.name, lab: lab, frame: reefBlastFrame(b, p, size)}
				var err error
				if r.h1, err = openNS(lab.NS("h1")); err != nil {
					b.Fatal(err)
				}
				defer r.h1.close()
				if r.h2, err = openNS(lab.NS("h2")); err != nil {
					b.Fatal(err)
				}
				defer r.h2.close()
				eth0, err := r.h2.nl.LinkByName("eth0")
				if err != nil {
					b.Fatal(err)
				}
				// Frames stop at h2 (PACKET_OTHERHOST): nothing answers.
				if err := r.h2.nl.LinkSetHardwareAddr(eth0, net.HardwareAddr{0x02, 0xbe, 0xef, 0, 0, 1}); err != nil {
					b.Fatal(err)
				}
				// The switches share CPU 1; the blaster has CPU 0.
				for _, d := range lab.State.Daemons {
					pinProcess(d.Pid, 1)
				}
				h, err := probeReef(r.h1, r.h2, r.frame)
				if err != nil {
					b.Fatalf("%s: probe: %v", m.name, err)
				}
				stamped := h.Flags&wire.FlagMPDSeen != 0
				switch m.name {
				case "off":
					if stamped || len(h.Hops) != 0 {
						b.Fatalf("off: probe came through stamped: flags %#x, %d hops", h.Flags, len(h.Hops))
					}
				case "ecn+mpd":
					if !stamped {
						b.Fatalf("mpd: probe came through without MPD-seen: flags %#x", h.Flags)
					}
				case "ecn+hpcc":
					if len(h.Hops) != 3 {
						b.Fatalf("hpcc: probe came through with %d hop records, want 3", len(h.Hops))
					}
				}
				runs = append(runs, r)
			}
			// Rounds rotate the order of the modes; each round's rates are compared with
			// that round's off rate, so load that changes between rounds cancels out.
			// -benchtime Nx asks for more rounds.
			const blast = 400 * time.Millisecond
			rounds := max(b.N, 15)
			var load [3]float64
			if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
				_, _ = fmt.Sscan(string(raw), &load[0], &load[1], &load[2])
			}
			b.Logf("load average %v (the ratios below are only as steady as the machine)", load)
			ratio := make([][2][]float64, len(runs)) // per mode: pps and CPU ratios to off
			for round := range rounds {
				for k := range runs {
					r := runs[(round+k)%len(runs)]
					cpu0 := daemonsCPU(r.lab)
					sent, got := blastAndCount(b, r.h1, r.h2, r.frame, blast)
					cpu := float64(daemonsCPU(r.lab)-cpu0) / float64(max(got, 1))
					pps := float64(got) / blast.Seconds()
					r.pps, r.cpu = append(r.pps, pps), append(r.cpu, cpu)
					b.Logf("round %d %-8s offered %.0f pps, delivered %.0f pps, switchd CPU %.0f ns per packet (3 switches)",
						round+1, r.name, float64(sent)/blast.Seconds(), pps, cpu)
				}
				off := runs[0]
				for i, r := range runs {
					ratio[i][0] = append(ratio[i][0], r.pps[round]/max(off.pps[round], 1))
					ratio[i][1] = append(ratio[i][1], off.cpu[round]/max(r.cpu[round], 1))
				}
			}
			for i, r := range runs {
				b.ReportMetric(median(r.pps), r.name+"-pps")
				b.ReportMetric(median(r.cpu), r.name+"-cpu-ns/pkt")
				if i > 0 {
					b.ReportMetric(median(ratio[i][0]), r.name+"/off-pps")
					b.ReportMetric(median(ratio[i][1]), r.name+"/off-cpu")
					b.Logf("%s/off: pps ratio median %.3f (quartiles %.3f–%.3f), CPU ratio median %.3f (quartiles %.3f–%.3f), over %d rounds",
						r.name, median(ratio[i][0]), quantile(ratio[i][0], 0.25), quantile(ratio[i][0], 0.75),
						median(ratio[i][1]), quantile(ratio[i][1], 0.25), quantile(ratio[i][1], 0.75), rounds)
				}
				for _, sw := range []string{"s1", "s2", "s3"} {
					b.Logf("%s %s: %s", r.name, sw, statsSummary(r.lab, sw))
				}
			}
		})
	}
}

// daemonsCPU is the CPU time (ns) the lab's daemons have run so far, every thread
// (from /proc/PID/task/TID/schedstat).
func daemonsCPU(lab *Lab) int64 {
	var sum int64
	for _, d := range lab.State.Daemons {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", d.Pid))
		for _, t := range tasks {
			raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", d.Pid, t.Name()))
			if err != nil {
				continue
			}
			var ns int64
			if _, err := fmt.Sscan(string(raw), &ns); err == nil {
				sum += ns
			}
		}
	}
	return sum
}

func median(xs []float64) float64 { return quantile(xs, 0.5) }

// quantile is the q-quantile of xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// statsSummary condenses sw's stats file (see summarize).
func statsSummary(lab *Lab, sw string) string {
	raw, err := os.ReadFile(lab.StatsPath(sw))
	if err != nil {
		return err.Error()
	}
	return summarize(raw)
}

// reefBlastFrame builds a reef data frame of size bytes from h1 to h2: ECT(0), FlagINT,
// three hop slots, the rest payload.
func reefBlastFrame(b *testing.B, p *plan.Plan, size int) []byte {
	b.Helper()
	h1, _ := p.HostByName("h1")
	h2, _ := p.HostByName("h2")
	h := wire.Header{Type: wire.TypeData, Flags: wire.FlagINT, FlowID: 7, Seq: 1, HopCap: 3}
	pay := size - wire.ReefOffset - h.Len()
	if pay < 0 {
		b.Fatalf("a %d B frame cannot hold a reef header with %d hop slots", size, h.HopCap)
	}
	h.PayloadLen = uint16(pay)
	f := make([]byte, size)
	n, err := wire.BuildFrame(f, wire.Addrs{SrcMAC: h1.Config.MAC, DstMAC: h1.Config.GatewayMAC,
		Src: h1.Config.Addr, Dst: h2.Config.Addr, SrcPort: 40000}, wire.ECT0, &h)
	if err != nil {
		b.Fatal(err)
	}
	return f[:n]
}

// probeReef sends frame once from h1's eth0 and returns the reef header of the copy that
// reaches h2's eth0.
func probeReef(h1, h2 *nsHandle, frame []byte) (wire.Header, error) {
	var rx int
	err := inNetns(h2.fd, func() error {
		var err error
		if rx, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL))); err != nil {
			return err
		}
		ifi, err := net.InterfaceByName("eth0")
		if err == nil {
			err = unix.Bind(rx, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index})
		}
		if err != nil {
			unix.Close(rx)
		}
		return err
	})
	if err != nil {
		return wire.Header{}, fmt.Errorf("receive socket: %w", err)
	}
	defer unix.Close(rx)
	tv := unix.NsecToTimeval((200 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(rx, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return wire.Header{}, err
	}
	tx, err := packetSocket(h1, "eth0")
	if err != nil {
		return wire.Header{}, err
	}
	defer unix.Close(tx)
	want, _ := wire.Classify(frame)
	buf := make([]byte, 65536)
	for try := 0; try < 5; try++ {
		if _, err := unix.Write(tx, frame); err != nil {
			return wire.Header{}, fmt.Errorf("send: %w", err)
		}
		for {
			n, _, err := unix.Recvfrom(rx, buf, 0)
			if errors.Is(err, unix.EAGAIN) {
				break // lost: send again
			}
			if err != nil {
				return wire.Header{}, err
			}
			inner, _, _ := afpacket.StripTrailer(buf[:n])
			v, ok := wire.Classify(inner)
			if !ok || !v.IsReef() || v.Key() != want.Key() {
				continue
			}
			var h wire.Header
			if err := h.Decode(inner[v.Reef:]); err != nil {
				return wire.Header{}, err
			}
			return h, nil
		}
	}
	return wire.Header{}, errors.New("no copy of the probe reached h2")
}
