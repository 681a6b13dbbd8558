package netns_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"reef/afpacket"
	"reef/emulator"
	"reef/emulator/netns"
	"reef/emulator/plan"
	"reef/emulator/results"
	"reef/emulator/scenario"
	"reef/emulator/topo"
	"reef/internal/testenv"
	"reef/switchd"
	"reef/units"
	"reef/wire"
)

// hpccDoc is a parking lot s1 – s2 – s3 with INT in hpcc mode on s1 and s3 and off on
// s2 (brownfield): h1 and h2 on s1, h3 on s2, h4 on s3. The chain links run at 50 Mbit/s,
// the host links at 100, so the INT ports differ in rate (s1 → s2: 50, s3 → h4: 100) and
// both queue: h1 → h4 (the victim, path s1 s2 s3) shares s1 → s2 with h2 → h3, and s2 → s3
// and s3 → h4 with h3 → h4.
const hpccDoc = `name: %s
defaults: {rate: 100Mbps, delay: 20us, buffer: 1MB, mtu: 1500}
generator: {kind: parking-lot, hops: 3, hosts_per_switch: [2, 1, 1]}
classes:
  chain: {rate: 50Mbps}
switches:
  "*":
    int: {mode: hpcc}
  s2: {int: {mode: "off"}}
`

// TestHPCCRecordsOnNetns is issue 3's check that HPCC's INT records are exact on netns:
// every data packet reaches its receiver with one hop record per INT switch on its path
// (none for s2, whose INT is off), in path order, each record holding what the switch's
// schedule and counters say. Three HPCC flows, every data packet with three hop slots
// (so a record from s2 would show): h1 → h4 (records from s1 and s3), h2 → h3 (s1 only),
// h3 → h4 (s3 only).
//
// Captures of every node show every frame each switch sent, with the Due it carried in
// its release trailer (afpacket). switchd stamps a record when it schedules the
// packet's departure (switchd.Switch.depart), after counting the packet: so at port P
//
//   - TxBytes is P's cumulative transmitted bytes with this packet included: the sum of
//     the lengths (without trailer, what the pipeline counts) of every frame P sent up to
//     and including this one, in departure (Due) order, whatever its flow. Consecutive
//     records of a port differ by exactly the bytes P sent in between (the later packet
//     included), and the last record plus the bytes P sent after it is P's final TxBytes
//     counter, which must also equal the sum over the capture (and TxPackets its count:
//     the capture is complete).
//   - TS is the computed departure on the switch's clock: the carried Due (CLOCK_MONOTONIC)
//     minus P's propagation delay minus the lab's epoch (which switchd logs on start;
//     the run's own time zero comes later), to the nanosecond.
//   - RateKbps is P's configured rate in kbit/s.
//
// Per hop, a frame leaves an INT switch with the records it came in with plus one, and
// leaves s2 (and any switch, for frames without FlagINT such as ACKs) with its records
// untouched. TS is strictly increasing along a packet's path and on a port, and between
// two records of a port it grows by at least the serialisation of the bytes between them
// (less 1 ns of rounding, units.Rate.TxTime rounds up): the rate HPCC derives never
// exceeds the line. Each ACK at a sender echoes exactly the records of the data packet it
// acknowledges. QLen is only logged: it is the backlog at dequeue (the frames that
// arrived by the packet's start, itself excluded), counted when the packet leaves the
// switch, so on netns it misses only frames the daemon read more than a serialisation
// and a link delay late (switchd's exact checks are TestHPCCChain,
// TestHPCCQLenAtDequeue and TestHPCCQLenCountsLateRead, on the same pipeline the sim
// runs).
func TestHPCCRecordsOnNetns(t *testing.T) {
	testenv.RequireRoot(t)
	lab := labName("rhpcc")
	tp, err := topo.Parse(lab+".yaml", []byte(fmt.Sprintf(hpccDoc, lab)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(tp, plan.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	intOn := map[string]bool{"s1": true, "s3": true}
	for _, s := range p.Switches {
		if on := s.Config.INT.Mode == switchd.INTHPCC; on != intOn[s.Config.Name] {
			t.Fatalf("%s: INT mode %q, want hpcc %v", s.Config.Name, s.Config.INT.Mode, intOn[s.Config.Name])
		}
	}
	// The flows stop sending new data 150 ms before the end, so every frame a switch
	// counted has been released (and captured) when the switches stop. W_AI is
	// (1 − η)/10 of the BDP, as in emulator/sim's HPCC fairness case: at the default the
	// first flow on a shared link keeps most of it and the others send few packets.
	const hops = 3
	dur, stop := 600*units.Millisecond, 450*units.Millisecond
	ai := json.RawMessage(`{"AIRatio":0.005}`)
	sc := &scenario.Scenario{Name: "hpcc", Seed: 1, Duration: dur, Warmup: 100 * units.Millisecond,
		SampleInterval: 10 * units.Millisecond, Flows: []scenario.Flow{
			{ID: 1, Name: "victim", Group: "hpcc", Src: "h1", Dst: "h4", CC: "hpcc", CCParams: ai, INTHops: hops, Stop: stop},
			{ID: 2, Name: "x1", Group: "hpcc", Src: "h2", Dst: "h3", CC: "hpcc", CCParams: ai, INTHops: hops, Stop: stop},
			{ID: 3, Name: "x2", Group: "hpcc", Src: "h3", Dst: "h4", CC: "hpcc", CCParams: ai, INTHops: hops, Stop: stop},
		}}
	out := t.TempDir()
	nodes := []string{"s1", "s2", "s3", "h1", "h2", "h3", "h4"}
	// A daemon per switch: the test replays every hop from captures of its veths.
	run, err := netns.Backend{}.Run(context.Background(), p, sc, emulator.RunOptions{OutDir: out, Capture: nodes, Shards: len(p.Switches)})
	if err != nil {
		t.Fatal(err)
	}
	logFidelity(t, run)
	var caps []intFrame
	for _, n := range nodes {
		file := n
		if n[0] == 'h' {
			file += "-eth0"
		}
		c, err := readINTCapture(filepath.Join(out, file+".pcapng"))
		if err != nil {
			t.Fatal(err)
		}
		caps = append(caps, c...)
	}
	// Each switch daemon (a shard) logs its lab epoch when it comes up; the records'
	// TS count from it, and every daemon of a lab shares it.
	logs, err := filepath.Glob(filepath.Join(out, "*.switchd.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no switchd logs in %s (%v)", out, err)
	}
	var epoch units.Time
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		m := epochLog.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s has no \"switchd up\" line with the epoch", l)
		}
		e, err := strconv.ParseInt(string(m[1]), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if epoch != 0 && units.Time(e) != epoch {
			t.Fatalf("%s: epoch %d, another daemon's %d", l, e, epoch)
		}
		epoch = units.Time(e)
	}
	epochs := map[string]units.Time{}
	for _, s := range p.Switches {
		epochs[s.Config.Name] = epoch
	}
	checkHPCC(t, p, run, caps, intOn, epochs, hops)
}

// epochLog finds the lab epoch in switchd's log (cmd/switchd logs it on start).
var epochLog = regexp.MustCompile(`msg="switchd up".* epoch=(\d+)`)

// intFrame is one captured frame with its reef header's INT part.
type intFrame struct {
	due      units.Time // the carried Due (CLOCK_MONOTONIC ns)
	src, dst [6]byte
	n        int // frame bytes without the trailer (what the pipeline counts)
	reef     bool
	key      frameKey
	flags    uint8
	echoTS   int64 // (ack) the acknowledged data packet's TS
	hopCap   uint8
	hops     []wire.Hop
}

// readINTCapture reads a capture written by a run; frames without a release trailer are
// kept (with due 0), so the byte counts stay complete.
func readINTCapture(path string) ([]intFrame, error) {
	frames, err := readFrames(path)
	if err != nil {
		return nil, err
	}
	var out []intFrame
	for _, data := range frames {
		inner, due, _ := afpacket.StripTrailer(data)
		if len(inner) < wire.EthLen {
			continue
		}
		c := intFrame{due: due, src: [6]byte(inner[6:12]), dst: [6]byte(inner[0:6]), n: len(inner)}
		if v, ok := wire.Classify(inner); ok && v.IsReef() {
			var h wire.Header
			if err := h.Decode(inner[v.Reef:]); err == nil {
				c.reef = true
				c.key = frameKey{typ: h.Type, flow: h.FlowID, seq: h.Seq, ts: h.TS}
				c.flags, c.echoTS, c.hopCap = h.Flags, h.EchoTS, h.HopCap
				c.hops = slices.Clone(h.Hops)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// checkHPCC checks the captured records against the switches' schedules and counters
// (see TestHPCCRecordsOnNetns).
func checkHPCC(t *testing.T, p *plan.Plan, run *results.Run, caps []intFrame, intOn map[string]bool, epochs map[string]units.Time, hopCap int) {
	t.Helper()
	type portRef struct {
		sw   *switchd.Config
		port int
	}
	owner := map[[6]byte]portRef{}
	for i := range p.Switches {
		c := &p.Switches[i].Config
		for j, pc := range c.Ports {
			owner[pc.MAC] = portRef{c, j}
		}
	}
	hostOf := map[[6]byte]string{}
	for _, h := range p.Hosts {
		hostOf[h.Config.MAC] = h.Config.Name
	}
	// Every frame a switch port sent (captured where it arrived) and every reef frame a
	// switch received (captured on the switch's own interfaces).
	egress := map[portRef][]intFrame{}
	type swKey struct {
		sw  string
		key frameKey
	}
	ingress := map[swKey]intFrame{}
	for _, c := range caps {
		if from, ok := owner[c.src]; ok {
			egress[from] = append(egress[from], c)
		}
		if to, ok := owner[c.dst]; ok && c.reef {
			if _, dup := ingress[swKey{to.sw.Name, c.key}]; dup {
				t.Errorf("%s received %+v twice", to.sw.Name, c.key)
			}
			ingress[swKey{to.sw.Name, c.key}] = c
		}
	}
	counters := map[string]results.Port{}
	for _, pt := range run.Ports {
		counters[fmt.Sprintf("%s/%d", pt.Switch, pt.Port)] = pt
	}

	var (
		stamped, passed, bad     int
		maxQLen                  uint32
		rec                      = map[swKey]wire.Hop{} // the record switch sw stamped on key
		path                     = map[frameKey][]string{}
		pathDue                  = map[frameKey][]units.Time{}
		nrec                     = map[portRef]int{} // records stamped per port
		completePorts, portsSeen int
	)
	fail := func(format string, args ...any) {
		bad++
		if bad <= 20 {
			t.Errorf(format, args...)
		}
	}
	ports := slices.SortedFunc(maps.Keys(egress), func(a, b portRef) int {
		return cmp.Or(cmp.Compare(a.sw.Name, b.sw.Name), cmp.Compare(a.port, b.port))
	})
	for _, pr := range ports {
		fs := egress[pr]
		pc := pr.sw.Ports[pr.port]
		name := pr.sw.Name + ":" + pc.Name
		slices.SortStableFunc(fs, func(a, b intFrame) int { return cmp.Compare(a.due, b.due) })
		var cum uint64
		var prev *wire.Hop
		var prevDue units.Time
		for i, f := range fs {
			cum += uint64(f.n)
			if f.due == 0 {
				fail("%s: frame %d (%d B) has no release trailer", name, i, f.n)
				continue
			}
			if i > 0 && f.due <= prevDue {
				fail("%s: frame %d: Due %d not after the previous frame's %d", name, i, f.due, prevDue)
			}
			prevDue = f.due
			if !f.reef {
				continue
			}
			path[f.key] = append(path[f.key], pr.sw.Name)
			pathDue[f.key] = append(pathDue[f.key], f.due)
			in, ok := ingress[swKey{pr.sw.Name, f.key}]
			if !ok {
				fail("%s: %+v left without a captured arrival", name, f.key)
				continue
			}
			if f.hopCap != in.hopCap {
				fail("%s: %+v: hop slots %d in, %d out", name, f.key, in.hopCap, f.hopCap)
			}
			stamps := intOn[pr.sw.Name] && f.key.typ == wire.TypeData && f.flags&wire.FlagINT != 0 && len(in.hops) < int(in.hopCap)
			want := len(in.hops)
			if stamps {
				want++
			}
			if len(f.hops) != want || !slices.Equal(f.hops[:min(len(in.hops), len(f.hops))], in.hops) {
				fail("%s: %+v came in with records %+v and left with %+v; want the same plus %d", name, f.key, in.hops, f.hops, want-len(in.hops))
				continue
			}
			if !stamps {
				passed++
				continue
			}
			stamped++
			h := f.hops[len(f.hops)-1]
			rec[swKey{pr.sw.Name, f.key}] = h
			nrec[pr]++
			maxQLen = max(maxQLen, h.QLen)
			if h.TxBytes != cum {
				fail("%s: %+v: record's TxBytes %d, the port had sent %d B with this frame (frame %d, %d B)", name, f.key, h.TxBytes, cum, i, f.n)
			}
			if want := uint32(pc.Rate / units.Kbps); h.RateKbps != want {
				fail("%s: %+v: record's rate %d kbit/s, the port's is %d", name, f.key, h.RateKbps, want)
			}
			if dep := f.due - pc.Delay - epochs[pr.sw.Name]; units.Time(h.TS) != dep {
				fail("%s: %+v: record's TS %d, its computed departure (Due − delay − epoch) %d: off by %v", name, f.key, h.TS, dep, units.Time(h.TS)-dep)
			}
			if prev != nil {
				dts, db := units.Time(h.TS-prev.TS), units.Bytes(h.TxBytes-prev.TxBytes)
				if dts <= 0 || dts < pc.Rate.TxTime(db)-1 {
					fail("%s: %+v: %v and %d B since the port's previous record: faster than %v", name, f.key, dts, db, pc.Rate)
				}
			}
			prev = &h
		}
		// The final counters: the capture must hold every frame the port sent.
		portsSeen++
		ct, ok := counters[fmt.Sprintf("%s/%d", pr.sw.Name, pr.port)]
		if !ok {
			fail("%s: no final counters in the run's results", name)
			continue
		}
		if uint64(ct.TxBytes) != cum || int(ct.TxPackets) != len(fs) {
			fail("%s: final counters %d frames, %d B; the captures hold %d frames, %d B", name, ct.TxPackets, ct.TxBytes, len(fs), cum)
		} else {
			completePorts++
		}
		if prev != nil {
			var after uint64
			for _, f := range fs {
				if f.due > units.Time(prev.TS)+epochs[pr.sw.Name]+pc.Delay {
					after += uint64(f.n)
				}
			}
			if prev.TxBytes+after != uint64(ct.TxBytes) {
				fail("%s: last record's TxBytes %d + %d B sent after it ≠ final counter %d", name, prev.TxBytes, after, ct.TxBytes)
			}
		}
	}
	// Every port with traffic was captured; a port the counters say sent frames but the
	// captures never saw would be missed above.
	for _, pt := range run.Ports {
		sw, _ := p.SwitchByName(pt.Switch)
		if _, ok := egress[portRef{&sw.Config, pt.Port}]; !ok && pt.TxPackets > 0 {
			fail("%s:%s sent %d frames, none captured", pt.Switch, pt.Name, pt.TxPackets)
		}
	}

	// End to end: every data packet at its receiver carries one record per INT switch on
	// its path, in path order, and each ACK at a sender echoes the records of the data
	// packet it acknowledges.
	atRecv := map[frameKey][]wire.Hop{}
	perFlow := map[uint32]int{}
	var acks int
	for _, c := range caps {
		host, toHost := hostOf[c.dst]
		if !toHost || !c.reef || c.key.typ != wire.TypeData {
			continue
		}
		if int(c.hopCap) != hopCap {
			fail("%s: %+v with %d hop slots, want %d", host, c.key, c.hopCap, hopCap)
		}
		var want []wire.Hop
		var ts []int64
		for _, sw := range path[c.key] {
			if intOn[sw] {
				h, ok := rec[swKey{sw, c.key}]
				if !ok {
					fail("%s: %+v crossed INT switch %s (path %v) without its record being checked", host, c.key, sw, path[c.key])
				}
				want = append(want, h)
				ts = append(ts, h.TS)
			}
		}
		if !slices.IsSortedFunc(pathDue[c.key], cmp.Compare) {
			fail("%s: %+v crossed %v at Dues %v, out of order", host, c.key, path[c.key], pathDue[c.key])
		}
		if !slices.Equal(c.hops, want) {
			fail("%s: %+v (path %v) arrived with records %+v, want %+v", host, c.key, path[c.key], c.hops, want)
		}
		for j := 1; j < len(ts); j++ {
			if ts[j] <= ts[j-1] {
				fail("%s: %+v: record %d's TS %d not after record %d's %d", host, c.key, j, ts[j], j-1, ts[j-1])
			}
		}
		atRecv[c.key] = c.hops
		perFlow[c.key.flow]++
	}
	for _, c := range caps {
		host, toHost := hostOf[c.dst]
		if !toHost || !c.reef || c.key.typ != wire.TypeAck {
			continue
		}
		data, ok := atRecv[frameKey{typ: wire.TypeData, flow: c.key.flow, seq: c.key.seq, ts: c.echoTS}]
		if !ok {
			continue // acknowledges a data packet whose copy at the receiver was not captured
		}
		acks++
		if int(c.hopCap) != len(data) || !slices.Equal(c.hops, data) {
			fail("%s: ACK %+v echoes %d slots %+v; the data packet arrived with %+v", host, c.key, c.hopCap, c.hops, data)
		}
	}
	perPort := map[string]int{}
	for pr, n := range nrec {
		perPort[pr.sw.Name+":"+pr.sw.Ports[pr.port].Name] = n
	}
	t.Logf("%d records stamped and checked, %d reef frames through a switch unstamped; largest QLen %d B; records per port %v",
		stamped, passed, maxQLen, perPort)
	t.Logf("data packets at receivers per flow %v; %d ACKs checked; %d of %d ports' captures complete; %d mismatches",
		perFlow, acks, completePorts, portsSeen, bad)
	// Enough of each kind of path (records from s1 and s3, s1 only, s3 only) and of
	// records on each INT port for the check to say something. HPCC shares the links
	// unevenly (the victim crosses both bottlenecks), so the floors are well below the
	// 450 ms × 50 Mbit/s ≈ 1850 full-size frames each bottleneck carries.
	for _, f := range []uint32{1, 2, 3} {
		if perFlow[f] < 100 {
			t.Errorf("flow %d: %d data packets checked at its receiver, want ≥ 100", f, perFlow[f])
		}
	}
	for _, hop := range [][2]string{{"s1", "s2:"}, {"s3", "h4:"}} { // the INT ports
		sw, _ := p.SwitchByName(hop[0])
		for _, pc := range sw.Config.Ports {
			if strings.HasPrefix(pc.Peer, hop[1]) {
				if n := perPort[hop[0]+":"+pc.Name]; n < 500 {
					t.Errorf("%s:%s: %d records checked, want ≥ 500", hop[0], pc.Name, n)
				}
			}
		}
	}
	if acks < 500 {
		t.Errorf("%d ACKs checked, want ≥ 500", acks)
	}
	if maxQLen == 0 {
		t.Error("no record saw a queue: the INT ports never queued")
	}
}
