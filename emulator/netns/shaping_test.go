package netns

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"reef/emulator/plan"
	"reef/switchd"
	"reef/units"
)

// The latency probes (ping, the UDP blaster) run under SCHED_FIFO 5, below the
// switches' datapaths (10): on a machine shared with other work they would otherwise
// measure the machine's load, not the emulator. iperf3 runs at nice -10 instead: a TCP
// sender under SCHED_FIFO starves the softirq threads that drain its own tbf.

// lineTopo is h1 – s1 – s2 – h2: host links at 1 Gbit/s with 100 KB buffers, the s1–s2
// link at the rate and with the buffer under test (the second and third %s after the
// name), every link with the same propagation delay (the first).
const lineTopo = `name: %%s
defaults: {rate: 1Gbps, delay: %s, buffer: 100KB, mtu: 1500}
nodes:
  - {name: h1, kind: host}
  - {name: h2, kind: host}
  - {name: s1, kind: switch}
  - {name: s2, kind: switch}
links:
  - [h1, s1]
  - {a: s1, b: s2, rate: %s, buffer: %s}
  - [s2, h2]
`

// startServer starts `iperf3 -s -1` in node, waits until it listens and returns a
// function that waits for it to finish.
func startServer(t *testing.T, ctx context.Context, lab *Lab, node string) func() {
	t.Helper()
	cmd, err := Command(ctx, lab.Name, node, "nice", "-n", "-10", "iperf3", "-s", "-1", "--forceflush")
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), "Server listening") {
			break
		}
	}
	if len(seen) == 0 || !strings.Contains(seen[len(seen)-1], "Server listening") {
		t.Fatalf("iperf3 server in %s did not start: %s", node, strings.Join(seen, "\n"))
	}
	go io.Copy(io.Discard, out)
	return func() { _ = cmd.Wait() }
}

// iperfClient runs an iperf3 client in node until the server accepts it (retrying while
// it starts) and returns its JSON report.
func iperfClient(t *testing.T, ctx context.Context, lab *Lab, node string, args ...string) map[string]any {
	t.Helper()
	var out string
	var err error
	for range 20 {
		out, err = run(ctx, lab, node, append([]string{"nice", "-n", "-10", "iperf3", "-J"}, args...)...)
		if err == nil || !strings.Contains(out, "Connection refused") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("iperf3 %v: %v\n%s", args, err, out)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("iperf3 JSON: %v\n%s", err, out)
	}
	if e, ok := r["error"]; ok {
		t.Fatalf("iperf3 %v: %v", args, e)
	}
	return r
}

func get(m map[string]any, path ...string) float64 {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return math.NaN()
		}
		v = mm[k]
	}
	f, ok := v.(float64)
	if !ok {
		return math.NaN()
	}
	return f
}

// TestIperfBottleneck runs kernel TCP (iperf3, cubic) from h1 to h2 through a 100 Mbit/s
// and a 500 Mbit/s s1–s2 link (issue 2). The shaping must never let more through than
// the rate: goodput at most 3% above the rate less header overhead (Ethernet, IPv4, TCP
// with timestamps: a 1448-byte payload per 1514-byte frame) and s1's tx counter at most
// 1% above the rate. While the port is backlogged (the interval less the growth of its
// Idle counter) its tx counter must run at the rate within 1%: always asserted, since
// the schedule is computed and a loaded machine cannot change it.
//
// Goodput within 3% of the rate less header overhead is asserted whenever the emulator
// kept up. TCP keeps the bottleneck backlogged only if nothing stalls its ACK clock for
// longer than the bottleneck's queue bridges (cover: half the buffer's drain time, about
// the least standing queue cubic keeps with this buffer). So the floor is asserted when
//   - the switches kept up: every port on the flow's path (data and ACKs) released 99%
//     of its frames less than cover late and none later than the buffer's whole drain
//     time (a switch that stops reading for longer than that takes in the frames that
//     piled up meanwhile at once and drops what its buffer cannot hold: drops a real
//     switch would not make, after which cubic backs off; seen in CI, where both
//     daemons stopped for 36 ms at once, 47 drops, the link idle 2.6% of the run), and
//   - the hosts did: a thread at iperf3's priority (stallProbe) lost at most 1% of the
//     run to stalls longer than cover, a third of the floor's 3%.
//
// On a 2-core machine shared with other work the second can fail at 500 Mbit/s: the
// two switch daemons run under SCHED_FIFO and, with the hosts' kernel TCP work their
// sends trigger, take about 1.5 cores (measured), so ordinary processes such as iperf3
// get the rest and at times wait tens of ms; the link then idles for want of packets,
// not because of the switch. The test says so in its log instead of failing.
func TestIperfBottleneck(t *testing.T) {
	needRoot(t)
	needTool(t, "iperf3")
	for _, rate := range []string{"100Mbps", "500Mbps"} {
		t.Run(rate, func(t *testing.T) {
			r, err := units.ParseRate(rate)
			if err != nil {
				t.Fatal(err)
			}
			buf := bottleneckBuffer(r)
			name := labName("ip")
			p := planFor(t, fmt.Sprintf(lineTopo, "200us", rate, buf), name)
			lab := up(t, p, Options{SwitchdArgs: []string{"--stats-interval", "100ms"}})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			wait := startServer(t, ctx, lab, "h2")
			defer wait()

			// Sample s1's counters for the port toward s2 inside the measured 5 s (iperf3
			// omits the first second: slow start).
			port := portTo(t, p, "s1", "s2")
			samples := make(chan report, 2)
			go func() {
				defer close(samples)
				for _, d := range []time.Duration{1200 * time.Millisecond, 4600 * time.Millisecond} {
					time.Sleep(d)
					r, err := loadReport(lab, "s1")
					if err != nil {
						t.Error(err) // t.Fatal belongs to the test's goroutine
						return
					}
					samples <- r
				}
			}()
			probe := startStallProbe()
			// Cubic (loss-based) keeps the bottleneck queue backlogged; the machine's
			// default may be BBR, which aims to keep it empty.
			res := iperfClient(t, ctx, lab, "h1", "-c", "h2", "-t", "5", "-O", "1", "-C", "cubic")
			probe.stop()
			var snaps []report
			for s := range samples {
				snaps = append(snaps, s)
			}
			if len(snaps) < 2 {
				t.Fatalf("s1's counters were read %d times, want 2", len(snaps))
			}

			mss := get(res, "start", "tcp_mss_default")
			if math.IsNaN(mss) || mss == 0 {
				mss = 1448
			}
			want := float64(r) * mss / (mss + 66)
			got := get(res, "end", "sum_received", "bits_per_second")
			t.Logf("goodput %.2f Mbit/s, want %.2f Mbit/s (%.4f; rate %v, MSS %.0f, s1–s2 buffer %v), retransmits %.0f",
				got/1e6, want/1e6, got/want, r, mss, buf, get(res, "end", "sum_sent", "retransmits"))
			if got > 1.03*want {
				t.Errorf("goodput %.2f Mbit/s exceeds %.2f Mbit/s by more than 3%%: the link is not shaped", got/1e6, want/1e6)
			}

			a, b := snaps[0].Ports[port], snaps[1].Ports[port]
			dt := snaps[1].Time - snaps[0].Time
			sent := float64(b.TxBytes-a.TxBytes) * 8
			busy := dt - (b.Idle - a.Idle)
			tx := sent / dt.Seconds()
			t.Logf("s1→s2 tx %.2f Mbit/s (%.4f of the rate) over %v, backlogged %v (%.2f%%); queue %v then %v (max %v); drops %v",
				tx/1e6, tx/float64(r), dt, busy, 100*busy.Seconds()/dt.Seconds(), a.QueueBytes, b.QueueBytes, b.MaxQueueBytes, b.Drops)
			if tx > 1.01*float64(r) {
				t.Errorf("switch tx rate %.2f Mbit/s exceeds %v by more than 1%%", tx/1e6, r)
			}
			// The frames on the line at either sample are busy time not yet (or no longer)
			// in the counter: allow two frame times.
			frame := r.TxTime(1514)
			if busy < 100*frame {
				t.Logf("s1→s2 was backlogged only %v of %v: its rate while backlogged is not measurable", busy, dt)
			} else {
				bt := sent / busy.Seconds()
				t.Logf("s1→s2 tx while backlogged %.2f Mbit/s (%.5f of the rate)", bt/1e6, bt/float64(r))
				if math.Abs(bt/float64(r)-1) > 0.01+2*frame.Seconds()/busy.Seconds() {
					t.Errorf("switch tx rate while backlogged %.2f Mbit/s is not within 1%% of %v", bt/1e6, r)
				}
			}

			if why := keptUp(t, lab, p, probe, buf, r); why != "" {
				t.Logf("the emulator did not keep up on this machine (%s): goodput floor not asserted", why)
				return
			}
			if got < 0.97*want {
				t.Errorf("goodput %.2f Mbit/s is not within 3%% of %.2f Mbit/s", got/1e6, want/1e6)
			}
		})
	}
}

// bottleneckBuffer is the s1–s2 buffer TestIperfBottleneck uses at rate r: 4 ms of
// traffic, at least 100 KB. The lab's RTT is about 1.6 ms with the hosts' stacks (1.2 ms
// of propagation), so 100 KB at 500 Mbit/s is one BDP, and two cubic reductions in a row
// (β = 0.7, seen here) leave the window below the BDP: the link idles for TCP's own
// reasons, as it would on a real link (measured: 1.8–3.1% idle, goodput 0.970–0.984 of
// the floor's figure). At 2.5 BDP or more the window stays above the BDP and only the
// emulator (or the machine) can leave the link idle.
func bottleneckBuffer(r units.Rate) units.Bytes {
	return max(100*units.Kilobyte, r.BytesIn(4*units.Millisecond))
}

// keptUp says why the emulator did not keep up during TestIperfBottleneck's run, or
// "" if it did (see the test's doc): the switches' p99 release lateness on every port
// that carried the flow within cover and their longest within the buffer's drain time,
// and the hosts' stalls beyond cover within 1% of the run.
func keptUp(t *testing.T, lab *Lab, p *plan.Plan, probe *stallProbe, buf units.Bytes, r units.Rate) string {
	t.Helper()
	cover, drain := r.TxTime(buf/2), r.TxTime(buf)
	var why []string
	for _, sw := range []string{"s1", "s2"} {
		s, ok := p.SwitchByName(sw)
		if !ok {
			t.Fatalf("no switch %s", sw)
		}
		for i, ps := range readReport(t, lab, sw).Ports {
			peer := s.Config.Ports[i].Peer
			t.Logf("%s→%s: %d frames, release lateness p50 %v p99 %v max %v", sw, peer, ps.Lateness.Count, ps.Lateness.P50, ps.Lateness.P99, ps.Lateness.Max)
			if ps.Lateness.Count > 0 && ps.Lateness.P99 > cover {
				why = append(why, fmt.Sprintf("%s→%s p99 release lateness %v > %v", sw, peer, ps.Lateness.P99, cover))
			}
			if ps.Lateness.Count > 0 && ps.Lateness.Max > drain {
				why = append(why, fmt.Sprintf("%s stalled: %s→%s released a frame %v late, longer than the buffer drains (%v)", sw, sw, peer, ps.Lateness.Max, drain))
			}
		}
	}
	lost, worst, n := probe.lost(time.Duration(cover))
	frac := lost.Seconds() / probe.elapsed.Seconds()
	t.Logf("a thread at iperf3's priority lost %v of %v (%.2f%%) to %d stalls longer than %v (the longest %v)",
		lost, probe.elapsed.Round(time.Millisecond), 100*frac, n, time.Duration(cover), worst)
	if frac > 0.01 {
		why = append(why, fmt.Sprintf("the hosts' processes lost %.2f%% of the run to stalls longer than %v", 100*frac, time.Duration(cover)))
	}
	return strings.Join(why, "; ")
}

// stallProbe is a thread at iperf3's scheduling priority (SCHED_OTHER, nice -10) that
// sleeps 1 ms at a time and records how much longer each sleep took: how long a host's
// process would have waited for a CPU. It costs about 1% of a core.
type stallProbe struct {
	quit, done chan struct{}
	over       []time.Duration
	elapsed    time.Duration
}

func startStallProbe() *stallProbe {
	p := &stallProbe{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		// Never unlocked: the thread, reniced, ends with the goroutine.
		runtime.LockOSThread()
		_ = unix.Setpriority(unix.PRIO_PROCESS, 0, -10) // this thread only
		start := time.Now()
		for {
			select {
			case <-p.quit:
				p.elapsed = time.Since(start)
				return
			default:
			}
			t0 := time.Now()
			_ = unix.Nanosleep(&unix.Timespec{Nsec: int64(time.Millisecond)}, nil)
			p.over = append(p.over, time.Since(t0)-time.Millisecond)
		}
	}()
	return p
}

func (p *stallProbe) stop() { close(p.quit); <-p.done }

// lost returns how much of the stalls exceeded cover in total, the longest stall and
// how many exceeded cover.
func (p *stallProbe) lost(cover time.Duration) (lost, worst time.Duration, n int) {
	for _, o := range p.over {
		worst = max(worst, o)
		if o > cover {
			lost += o - cover
			n++
		}
	}
	return lost, worst, n
}

var rttRE = regexp.MustCompile(`time=([0-9.]+) ms`)

// pingRTTs pings dst from node count times and returns the round-trip times.
func pingRTTs(t *testing.T, ctx context.Context, lab *Lab, node, dst string, count int, interval string) []units.Time {
	t.Helper()
	out, _ := run(ctx, lab, node, "chrt", "-f", "5", "ping", "-n", "-c", strconv.Itoa(count), "-i", interval, "-W", "1", dst)
	var rtts []units.Time
	for _, m := range rttRE.FindAllStringSubmatch(out, -1) {
		ms, _ := strconv.ParseFloat(m[1], 64)
		rtts = append(rtts, units.Time(ms*1e6))
	}
	if len(rtts) == 0 {
		t.Fatalf("no ping replies:\n%s", out)
	}
	slices.Sort(rtts)
	return rtts
}

// TestPingRTTAndQueueDelay checks the base RTT (twice the propagation delays plus the
// serialisation at each switch egress) and that a full buffer adds its drain time: a
// 100 KB buffer at 100 Mbit/s adds 8 ms.
func TestPingRTTAndQueueDelay(t *testing.T) {
	needRoot(t)
	needTool(t, "ping")
	needTool(t, "iperf3")
	name := labName("rt")
	p := planFor(t, fmt.Sprintf(lineTopo, "1ms", "100Mbps", "100KB"), name)
	// Spinning the last 50 µs before each release takes the timer's wakeup latency
	// (30–70 µs here) out of the RTT.
	lab := up(t, p, Options{SwitchdArgs: []string{"--stats-interval", "200ms", "--spin", "50us"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// ping -s 56: 84-byte IP packets in 98-byte frames, serialised at s1→s2 and s2→h2
	// one way, s2→s1 and s1→h1 back.
	const frame = 98
	var prop units.Time
	for _, l := range p.Links {
		prop += l.Delay
	}
	ser := 2 * ((100 * units.Mbps).TxTime(frame) + units.Gbps.TxTime(frame))
	want := 2*prop + ser
	// Other work on the machine (these are VMs on shared hosts) can stall a daemon or a
	// host's kernel, which only ever adds to an RTT, for a while; an error of the
	// emulator's own is there every time. So each RTT gets up to three tries of 30 pings,
	// and one try's median must be within the bound.
	//
	// A ping crosses four switch egresses (two at each switch), and a release the switch
	// made late by its machine is late in the RTT too: the switches measure and report it,
	// so the bound takes in their median lateness at each crossing. An error in the
	// schedule itself (a delay applied twice, a serialisation missed) is not in it.
	const tries = 3
	idleOK := false
	for i := 1; i <= tries && !idleOK; i++ {
		rtts := pingRTTs(t, ctx, lab, "h1", "h2", 30, "0.05")
		med := rtts[len(rtts)/2]
		late := switchLateness(t, lab)
		reported := 2 * (late["s1"].P50 + late["s2"].P50)
		d := med - want
		idleOK = d.Seconds() >= 0 && float64(d) <= 0.05*float64(want)+float64(50*units.Microsecond+reported)
		t.Logf("idle RTT, try %d: median %v, min %v, max %v; want %v (2×%v + %v) + at most 5%% + 50µs + %v of reported lateness; %s",
			i, med, rtts[0], rtts[len(rtts)-1], want, prop, ser, reported, describeLateness(late))
	}
	if !idleOK {
		t.Errorf("no try's median idle RTT was within 5%% + 50µs + the switches' reported median lateness above %v", want)
	}

	// Keep the s1→s2 queue full with UDP at twice its rate (1514-byte frames sent from
	// h1 with AF_PACKET); pings then wait behind a full buffer.
	h1, err := openNS(lab.NS("h1"))
	if err != nil {
		t.Fatal(err)
	}
	defer h1.close()
	fd, err := packetSocket(h1, "eth0")
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf := p.Links[portLink(p)].Buffer
	qdelay := (100 * units.Mbps).TxTime(buf)
	loadedOK := false
	for i := 1; i <= tries && !loadedOK; i++ {
		done := make(chan int)
		go func() { done <- pacedBlast(fd, blastFrame(p, 1514), 200*units.Mbps, 3*time.Second) }()
		time.Sleep(500 * time.Millisecond)
		loaded := pingRTTs(t, ctx, lab, "h1", "h2", 30, "0.05")
		sent := <-done
		lmed := loaded[len(loaded)/2]
		d := lmed - (want + qdelay)
		loadedOK = math.Abs(float64(d)) <= 0.05*float64(want+qdelay)+float64(50*units.Microsecond)
		st := readReport(t, lab, "s1").Ports[portTo(t, p, "s1", "s2")]
		t.Logf("loaded RTT, try %d: median %v (%d replies), min %v, max %v; want ≈ %v + %v (a full %v buffer at 100 Mbit/s); "+
			"blaster sent %d frames in 3s; s1→s2 max queue %v, drops %v; %s",
			i, lmed, len(loaded), loaded[0], loaded[len(loaded)-1], want, qdelay, buf, sent, st.MaxQueueBytes, st.Drops, describeLateness(switchLateness(t, lab)))
	}
	if !loadedOK {
		t.Errorf("no try's median loaded RTT was within 5%% + 50µs of %v", want+qdelay)
	}
}

// switchLateness returns each switch's release lateness so far, at its port with the
// worst p99: whether the machine let the switches keep the schedule.
func switchLateness(t *testing.T, lab *Lab) map[string]switchd.Lateness {
	t.Helper()
	late := map[string]switchd.Lateness{}
	for _, sw := range []string{"s1", "s2"} {
		var worst switchd.Lateness
		for _, pt := range readReport(t, lab, sw).Ports {
			if pt.Lateness.P99 > worst.P99 {
				worst = pt.Lateness
			}
		}
		late[sw] = worst
	}
	return late
}

// describeLateness says what switchLateness returned, for a test's log.
func describeLateness(late map[string]switchd.Lateness) string {
	var out []string
	for _, sw := range []string{"s1", "s2"} {
		l := late[sw]
		out = append(out, fmt.Sprintf("%s release lateness p50 %v p99 %v max %v", sw, l.P50, l.P99, l.Max))
	}
	return strings.Join(out, ", ")
}

// portLink returns the index of the s1–s2 link.
func portLink(p *plan.Plan) int {
	for i, l := range p.Links {
		if !l.A.IsHost && !l.B.IsHost {
			return i
		}
	}
	return -1
}
