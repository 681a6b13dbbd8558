package plan

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"reef/emulator/topo"
	"reef/switchd"
	"reef/units"
)

func mustTopo(t testing.TB, doc string) *topo.Topology {
	t.Helper()
	tp, err := topo.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func mustPlan(t testing.TB, doc string) *Plan {
	t.Helper()
	p, err := Build(mustTopo(t, doc), Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const fatTree4 = "name: ft\ndefaults: {rate: 1Gbps, delay: 10us, buffer: 100KB, mtu: 1500}\ngenerator: {kind: fat-tree, k: 4}\n"

// routeTo returns switch sw's route ports for host h.
func routeTo(t *testing.T, p *Plan, sw, h string) []int {
	t.Helper()
	s, ok := p.SwitchByName(sw)
	if !ok {
		t.Fatalf("no switch %s", sw)
	}
	addr, _ := p.HostAddr(h)
	for _, r := range s.Config.Routes {
		if r.Prefix == netip.PrefixFrom(addr, 32) {
			return r.Ports
		}
	}
	t.Fatalf("%s has no route to %s", sw, h)
	return nil
}

// peers names the far ends of ports of switch sw.
func peers(p *Plan, sw string, ports []int) []string {
	s, _ := p.SwitchByName(sw)
	var out []string
	for _, i := range ports {
		out = append(out, strings.Split(s.Config.Ports[i].Peer, ":")[0])
	}
	return out
}

func TestFatTreeRoutes(t *testing.T) {
	p := mustPlan(t, fatTree4)
	// Fat tree k=4: tor1, tor2 and agg1, agg2 form pod 1 (hosts h1…h4); h1, h2 on tor1.
	cases := []struct {
		sw, host string
		want     []string // next hops, in port order
		why      string
	}{
		{"tor1", "h1", []string{"h1"}, "a host under the same ToR is reached directly"},
		{"tor1", "h2", []string{"h2"}, "a host under the same ToR is reached directly"},
		{"tor1", "h3", []string{"agg1", "agg2"}, "another ToR of the pod: 2-way ECMP up"},
		{"tor1", "h16", []string{"agg1", "agg2"}, "a remote pod: 2-way ECMP up"},
		{"agg1", "h3", []string{"tor2"}, "down to the ToR is deterministic"},
		{"agg1", "h5", []string{"core1", "core2"}, "a remote pod: 2-way ECMP up to the cores"},
		{"core1", "h1", []string{"agg1"}, "a core has one way down into each pod"},
		{"core1", "h16", []string{"agg7"}, "a core has one way down into each pod"},
		{"core4", "h9", []string{"agg6"}, "core4 hangs off each pod's second agg"},
	}
	for _, c := range cases {
		if got := peers(p, c.sw, routeTo(t, p, c.sw, c.host)); !slices.Equal(got, c.want) {
			t.Errorf("%s → %s via %v, want %v (%s)", c.sw, c.host, got, c.want, c.why)
		}
	}
	// Every core has exactly one port per pod, and routes to a pod's hosts use it.
	for i := 1; i <= 4; i++ {
		core := fmt.Sprintf("core%d", i)
		s, _ := p.SwitchByName(core)
		if len(s.Config.Ports) != 4 {
			t.Errorf("%s has %d ports, want 4 (one per pod)", core, len(s.Config.Ports))
		}
		pods := map[int]bool{}
		for h := 1; h <= 16; h++ {
			ports := routeTo(t, p, core, fmt.Sprintf("h%d", h))
			if len(ports) != 1 {
				t.Errorf("%s → h%d uses %d ports, want 1", core, h, len(ports))
			}
			pods[ports[0]] = true
		}
		if len(pods) != 4 {
			t.Errorf("%s uses %d distinct ports for 16 hosts, want 4 (one per pod)", core, len(pods))
		}
	}
	for _, s := range p.Switches {
		if len(s.Config.Routes) != 16 {
			t.Errorf("%s has %d routes, want one per host (16)", s.Config.Name, len(s.Config.Routes))
		}
	}
	// A switch keeps one copy of each distinct port list: tor1's routes to the 14 hosts
	// of other ToRs share one, which an append to one route's ports does not change.
	tor1, _ := p.SwitchByName("tor1")
	lists := map[*int]bool{}
	for _, r := range tor1.Config.Routes {
		lists[&r.Ports[0]] = true
		if cap(r.Ports) != len(r.Ports) {
			t.Fatalf("tor1's route to %v: ports %v with room to append into the shared list", r.Prefix, r.Ports)
		}
	}
	if len(lists) != 3 {
		t.Errorf("tor1's 16 routes use %d port lists, want 3 (h1, h2, the uplinks)", len(lists))
	}
}

func TestPortsAndHosts(t *testing.T) {
	p := mustPlan(t, fatTree4)
	if len(p.Hosts) != 16 || len(p.Switches) != 20 || len(p.Links) != 48 {
		t.Fatalf("plan has %d hosts, %d switches, %d links", len(p.Hosts), len(p.Switches), len(p.Links))
	}
	macs := map[[6]byte]string{}
	addMAC := func(m [6]byte, who string) {
		if m[0]&0x02 == 0 || m[0]&0x01 != 0 {
			t.Errorf("%s MAC %x is not locally administered unicast", who, m)
		}
		if prev, dup := macs[m]; dup {
			t.Errorf("%s and %s share MAC %x", who, prev, m)
		}
		macs[m] = who
	}
	for i, h := range p.Hosts {
		c := h.Config
		addMAC(c.MAC, c.Name)
		if want := netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}); c.Addr != want {
			t.Errorf("%s addr %v, want %v", c.Name, c.Addr, want)
		}
		if !AddrPrefix.Contains(c.Addr) {
			t.Errorf("%s addr %v outside %v", c.Name, c.Addr, AddrPrefix)
		}
		if c.Iface != "eth0" || c.Rate != units.Gbps || c.MTU != 1500 {
			t.Errorf("%s config %+v", c.Name, c)
		}
		l := p.Links[h.Link]
		sw, _ := p.SwitchByName(l.B.Node)
		port := sw.Config.Ports[l.B.Port]
		if c.GatewayMAC != port.MAC || port.PeerMAC != c.MAC || !port.PeerIsHost || port.Peer != c.Name+":eth0" {
			t.Errorf("%s gateway %x; switch port %+v", c.Name, c.GatewayMAC, port)
		}
		if port.IngressDelay != 10*units.Microsecond || port.Delay != 10*units.Microsecond || port.MTU != 1500 {
			t.Errorf("host-facing port %s:%s: ingress delay %v delay %v MTU %d; want 10µs, 10µs, 1500",
				sw.Config.Name, port.Name, port.IngressDelay, port.Delay, port.MTU)
		}
	}
	seeds := map[uint64]bool{}
	for _, s := range p.Switches {
		seeds[s.Config.Seed] = true
		for i, port := range s.Config.Ports {
			addMAC(port.MAC, s.Config.Name+":"+port.Name)
			if port.Name != fmt.Sprintf("p%d", i+1) {
				t.Errorf("%s port %d named %s", s.Config.Name, i, port.Name)
			}
			if !port.PeerIsHost && (port.MTU != 1500+DefaultINTHeadroom || port.IngressDelay != 0) {
				t.Errorf("fabric port %s:%s MTU %d ingress delay %v; want %d, 0",
					s.Config.Name, port.Name, port.MTU, port.IngressDelay, 1500+DefaultINTHeadroom)
			}
		}
		if s.Config.LB.Mode != "ecmp" {
			t.Errorf("%s LB %q, want the default ecmp", s.Config.Name, s.Config.LB.Mode)
		}
	}
	if len(seeds) != len(p.Switches) {
		t.Errorf("%d distinct seeds for %d switches", len(seeds), len(p.Switches))
	}
	// Link endpoints agree with the switch ports.
	for i, l := range p.Links {
		for _, e := range []Endpoint{l.A, l.B} {
			if e.IsHost {
				continue
			}
			s, _ := p.SwitchByName(e.Node)
			if s.Config.Ports[e.Port].MAC != e.MAC || s.Config.Ports[e.Port].Name != e.Iface {
				t.Errorf("link %d end %s:%s disagrees with the switch port", i, e.Node, e.Iface)
			}
		}
	}
	again := mustPlan(t, fatTree4)
	if !reflect.DeepEqual(p, again) {
		t.Error("two builds of the same topology and seed differ")
	}
	other, _ := Build(mustTopo(t, fatTree4), Options{Seed: 8})
	if other.Switches[0].Config.Seed == p.Switches[0].Config.Seed {
		t.Error("switch seed does not depend on the plan seed")
	}
}

func TestFeaturesAndPFC(t *testing.T) {
	p := mustPlan(t, `name: f
generator: {kind: dumbbell, hosts: 1}
classes:
  bottleneck: {pfc: {xoff: 60KB, xon: 30KB}}
switches:
  s1: {ecn: {mode: step, k: 30KB}, int: {mode: mpd, mpd_unit: 1us}, lb: {mode: spray}}
`)
	s1, _ := p.SwitchByName("s1")
	if s1.Config.ECN.K != 30*units.Kilobyte || s1.Config.INT.MPDUnit != units.Microsecond || s1.Config.LB.Mode != "spray" {
		t.Errorf("s1 features: %+v %+v %+v", s1.Config.ECN, s1.Config.INT, s1.Config.LB)
	}
	s2, _ := p.SwitchByName("s2")
	if s2.Config.ECN.Mode != "off" {
		t.Errorf("s2 ECN %+v, want off", s2.Config.ECN)
	}
	// s1: p1 = h1, p2 = s2 (the bottleneck, lossless).
	if pfc := s1.Config.Ports[1].PFC; !pfc.Enabled || pfc.XOff != 60*units.Kilobyte || pfc.XOn != 30*units.Kilobyte {
		t.Errorf("bottleneck PFC %+v", pfc)
	}
	if s1.Config.Ports[0].PFC.Enabled {
		t.Error("host port has PFC though its link sets none")
	}
}

func TestPaths(t *testing.T) {
	p := mustPlan(t, fatTree4)
	cases := []struct {
		src, dst    string
		paths, hops int
	}{
		{"h1", "h2", 1, 2},  // same ToR
		{"h1", "h3", 2, 4},  // same pod: via either agg
		{"h1", "h16", 4, 6}, // other pod: (k/2)² = 4
	}
	for _, c := range cases {
		paths, err := p.Paths(c.src, c.dst)
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != c.paths {
			t.Errorf("%s→%s: %d paths, want %d", c.src, c.dst, len(paths), c.paths)
		}
		seen := map[string]bool{}
		for _, path := range paths {
			if len(path) != c.hops {
				t.Errorf("%s→%s path of %d hops, want %d", c.src, c.dst, len(path), c.hops)
			}
			if path[0].From != c.src || path[len(path)-1].To != c.dst {
				t.Errorf("%s→%s path runs %s→%s", c.src, c.dst, path[0].From, path[len(path)-1].To)
			}
			var key []string
			for i, h := range path {
				if i > 0 && h.From != path[i-1].To {
					t.Errorf("path breaks between %v and %v", path[i-1], h)
				}
				l := p.Links[h.Link]
				if (h.Forward && (l.A.Node != h.From || l.B.Node != h.To)) || (!h.Forward && (l.B.Node != h.From || l.A.Node != h.To)) {
					t.Errorf("hop %+v disagrees with link %s–%s", h, l.A.Node, l.B.Node)
				}
				key = append(key, h.To)
			}
			seen[strings.Join(key, ",")] = true
		}
		if len(seen) != len(paths) {
			t.Errorf("%s→%s: %d distinct of %d paths", c.src, c.dst, len(seen), len(paths))
		}
	}
	if _, err := p.Paths("h1", "h99"); err == nil {
		t.Error("path to a missing host: no error")
	}
	if _, err := p.Paths("h1", "h1"); err == nil {
		t.Error("path to itself: no error")
	}
}

func TestBaseRTTDumbbell(t *testing.T) {
	p := mustPlan(t, `name: d
defaults: {rate: 100Mbps, delay: 10us, buffer: 100KB}
generator: {kind: dumbbell, hosts: 2}
classes:
  bottleneck: {rate: 10Mbps, delay: 100us}
`)
	got, err := p.BaseRTT("h1", "h3", 1500)
	if err != nil {
		t.Fatal(err)
	}
	// By hand: h1→s1→s2→h3 is 100 Mbps/10 µs, 10 Mbps/100 µs, 100 Mbps/10 µs.
	// Data 1500 B: 120 µs + 1200 µs + 120 µs of serialisation, 120 µs of propagation.
	// ACK 98 B back: 7.84 µs + 78.4 µs + 7.84 µs, 120 µs of propagation.
	want := units.Time(120000+1200000+120000+120000) + units.Time(7840+78400+7840+120000)
	if got != want {
		t.Errorf("BaseRTT = %v, want %v", got, want)
	}
	// Same switch: two links each way.
	got, _ = p.BaseRTTAck("h1", "h2", 1000, 64)
	if want := units.Time(2*(80000+10000) + 2*(5120+10000)); got != want {
		t.Errorf("BaseRTT same switch = %v, want %v", got, want)
	}
}

// parkingLot builds the Poseidon §6.6 chain for M green and N blue flows and returns
// the plan and the flows (victim first).
func parkingLot(t *testing.T, m, n int) (*Plan, []Flow) {
	doc := fmt.Sprintf("name: pl\ndefaults: {rate: 200Gbps}\ngenerator: {kind: parking-lot, hops: 3, hosts_per_switch: [%d, %d, 1]}\n", 1+m, m+n)
	p := mustPlan(t, doc)
	h := func(i int) string { return fmt.Sprintf("h%d", i) }
	last := h(2 + 2*m + n)
	flows := []Flow{{Src: "h1", Dst: last}}
	for i := range m { // s1 hosts h2… → their own sinks on s2
		flows = append(flows, Flow{Src: h(2 + i), Dst: h(2 + m + i)})
	}
	for i := range n { // s2 hosts → the victim's destination
		flows = append(flows, Flow{Src: h(2 + 2*m + i), Dst: last})
	}
	return p, flows
}

func near(a units.Rate, b float64) bool { return math.Abs(float64(a)-b) <= 1 }

func TestMaxMinParkingLot(t *testing.T) {
	const c = 200e9
	for _, mn := range [][2]int{{0, 2}, {2, 2}, {2, 9}, {9, 2}, {9, 9}, {5, 9}, {1, 0}} {
		m, n := mn[0], mn[1]
		t.Run(fmt.Sprintf("M%d_N%d", m, n), func(t *testing.T) {
			p, flows := parkingLot(t, m, n)
			got, err := MaxMin(p, flows)
			if err != nil {
				t.Fatal(err)
			}
			// Victim: min(C/(M+1), C/(N+1)); the others share what the victim leaves.
			v := min(c/float64(m+1), c/float64(n+1))
			if !near(got[0], v) {
				t.Errorf("victim %v, want %v", got[0], units.Rate(v))
			}
			for i := 1; i <= m; i++ {
				if !near(got[i], (c-v)/float64(m)) {
					t.Errorf("green %d: %v, want %v", i, got[i], units.Rate((c-v)/float64(m)))
				}
			}
			for i := m + 1; i <= m+n; i++ {
				if !near(got[i], (c-v)/float64(n)) {
					t.Errorf("blue %d: %v, want %v", i, got[i], units.Rate((c-v)/float64(n)))
				}
			}
		})
	}
}

func TestMaxMinOracle(t *testing.T) {
	dumbbell := mustPlan(t, "name: d\ndefaults: {rate: 1Gbps}\ngenerator: {kind: dumbbell, hosts: 4}\nclasses:\n  bottleneck: {rate: 300Mbps}\n")
	ls := mustPlan(t, "name: ls\ndefaults: {rate: 1Gbps}\ngenerator: {kind: leaf-spine, spines: 2, leaves: 2, hosts_per_leaf: 1, oversubscription: 1}\n")
	ls2 := mustPlan(t, "name: ls\ndefaults: {rate: 1Gbps}\ngenerator: {kind: leaf-spine, spines: 2, leaves: 2, hosts_per_leaf: 2}\nclasses:\n  uplink: {rate: 500Mbps}\n")
	cases := []struct {
		name  string
		p     *Plan
		flows []Flow
		want  []float64
	}{
		{"three flows share the bottleneck", dumbbell,
			[]Flow{{Src: "h1", Dst: "h5"}, {Src: "h2", Dst: "h6"}, {Src: "h3", Dst: "h7"}},
			[]float64{100e6, 100e6, 100e6}},
		{"a capped flow leaves its share to the others", dumbbell,
			[]Flow{{Src: "h1", Dst: "h5", Demand: 20 * units.Mbps}, {Src: "h2", Dst: "h6"}, {Src: "h3", Dst: "h7"}},
			[]float64{20e6, 140e6, 140e6}},
		{"opposite directions do not share", dumbbell,
			[]Flow{{Src: "h1", Dst: "h5"}, {Src: "h6", Dst: "h2"}},
			[]float64{300e6, 300e6}},
		{"incast at a receiver's downlink", dumbbell,
			[]Flow{{Src: "h1", Dst: "h2"}, {Src: "h3", Dst: "h2"}, {Src: "h4", Dst: "h2"}, {Src: "h4", Dst: "h1"}},
			[]float64{1e9 / 3, 1e9 / 3, 1e9 / 3, 2e9 / 3}},
		// Leaf-spine with 1 Gbps hosts and two 500 Mbps uplinks per leaf.
		{"single path: one uplink", ls, []Flow{{Src: "h1", Dst: "h2"}}, []float64{500e6}},
		{"sprayed: both uplinks", ls, []Flow{{Src: "h1", Dst: "h2", Spray: true}}, []float64{1e9}},
		// Two hosts per leaf, 500 Mbps uplinks: the sprayed flow puts half its rate on
		// leaf1→spine1, where the single-path flow runs whole: 1.5·r = 500 Mbps.
		{"sprayed and single-path share an uplink", ls2,
			[]Flow{{Src: "h1", Dst: "h3", Spray: true}, {Src: "h2", Dst: "h4"}},
			[]float64{500e6 / 1.5, 500e6 / 1.5}},
		{"sprayed flows over both uplinks", ls2,
			[]Flow{{Src: "h1", Dst: "h3", Spray: true}, {Src: "h2", Dst: "h4", Spray: true}},
			[]float64{500e6, 500e6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := MaxMin(c.p, c.flows)
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.want {
				if !near(got[i], c.want[i]) {
					t.Errorf("flow %d (%s→%s): %v, want %v", i, c.flows[i].Src, c.flows[i].Dst, got[i], units.Rate(c.want[i]))
				}
			}
		})
	}
	if _, err := MaxMin(dumbbell, []Flow{{Src: "h1", Dst: "nope"}}); err == nil {
		t.Error("flow to a missing host: no error")
	}
}

func TestMaxMinReversePath(t *testing.T) {
	p := mustPlan(t, "name: rp\ndefaults: {rate: 1Gbps}\ngenerator: {kind: reverse-path, reverse_senders: 4}\n")
	flows := []Flow{{Src: "h1", Dst: "h2"}}
	for i := 3; i <= 6; i++ {
		flows = append(flows, Flow{Src: fmt.Sprintf("h%d", i), Dst: "h1"})
	}
	got, err := MaxMin(p, flows)
	if err != nil {
		t.Fatal(err)
	}
	// ACKs are not counted: the victim keeps line rate, the reverse flows split h1's
	// downlink. (This is the rate Poseidon should reach, §6.7; Swift falls below it.)
	want := []float64{1e9, 250e6, 250e6, 250e6, 250e6}
	for i := range want {
		if !near(got[i], want[i]) {
			t.Errorf("flow %d: %v, want %v", i, got[i], units.Rate(want[i]))
		}
	}
}

func TestLeafSpinePaths(t *testing.T) {
	p := mustPlan(t, "name: ls\ngenerator: {kind: leaf-spine, spines: 16, leaves: 2, hosts_per_leaf: 1}\n")
	paths, err := p.Paths("h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 16 {
		t.Fatalf("%d paths between leaves, want one per spine (16)", len(paths))
	}
	for i, path := range paths {
		if want := fmt.Sprintf("spine%d", i+1); path[1].To != want {
			t.Errorf("path %d via %s, want %s (port order)", i, path[1].To, want)
		}
	}
}

// TestPlanJSON: daemons get their configs as JSON; a plan survives the round trip and
// still answers path queries.
func TestPlanJSON(t *testing.T) {
	p := mustPlan(t, fatTree4)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var q Plan
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, &q) {
		t.Fatal("plan changed in a JSON round trip")
	}
	a, _ := p.BaseRTT("h1", "h16", 1500)
	c, err := q.BaseRTT("h1", "h16", 1500)
	if err != nil || a != c {
		t.Errorf("BaseRTT after JSON = %v, %v; want %v", c, err, a)
	}
}

func TestBuildRejectsInvalid(t *testing.T) {
	tp := mustTopo(t, fatTree4)
	tp.Links[0].Rate = 0
	if _, err := Build(tp, Options{}); err == nil {
		t.Error("Build accepted a zero-rate link")
	}
	if _, err := Build(nil, Options{}); err == nil {
		t.Error("Build accepted nil")
	}
}

func TestHostAddr(t *testing.T) {
	for _, c := range []struct {
		i    int
		want string
	}{{1, "198.18.0.1"}, {255, "198.18.0.255"}, {256, "198.18.1.0"}, {MaxHosts, "198.19.255.254"}} {
		a, err := HostAddr(c.i)
		if err != nil || a.String() != c.want {
			t.Errorf("HostAddr(%d) = %v, %v; want %s", c.i, a, err, c.want)
		}
	}
	for _, i := range []int{0, MaxHosts + 1} {
		if _, err := HostAddr(i); err == nil {
			t.Errorf("HostAddr(%d): no error", i)
		}
	}
}

func BenchmarkBuildFatTreeK8(b *testing.B) {
	tp := mustTopo(b, "name: ft8\ngenerator: {kind: fat-tree, k: 8}\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(tp, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadAndBuildFatTreeK8(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		tp, err := topo.Parse("ft8.yaml", []byte("name: ft8\ngenerator: {kind: fat-tree, k: 8}\n"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Build(tp, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMaxMinFatTreeK8Permutation(b *testing.B) {
	p := mustPlan(b, "name: ft8\ngenerator: {kind: fat-tree, k: 8}\n")
	var flows []Flow
	for i := range 128 {
		flows = append(flows, Flow{Src: fmt.Sprintf("h%d", i+1), Dst: fmt.Sprintf("h%d", (i+37)%128+1), Spray: true})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MaxMin(p, flows); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzBuild: whatever topology the loader accepts, the planner plans without panicking,
// and every host can reach every other.
func FuzzBuild(f *testing.F) {
	for _, doc := range []string{fatTree4,
		"name: a\ngenerator: {kind: parking-lot, hops: 3, hosts: 1}\n",
		"name: a\ngenerator: {kind: reverse-path, reverse_senders: 2, bottleneck: core}\n",
		"name: a\nnodes: [{name: h1, kind: host}, {name: s1, kind: switch}, {name: h2, kind: host}]\nlinks: [[h1, s1], [s1, h2]]\n",
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tp, err := topo.Parse("fuzz.yaml", b)
		if err != nil || len(tp.Hosts()) > 64 {
			return
		}
		p, err := Build(tp, Options{})
		if err != nil {
			t.Fatalf("Build rejected a loaded topology: %v", err)
		}
		for _, a := range p.Hosts {
			for _, c := range p.Hosts {
				if a.Config.Name != c.Config.Name {
					if _, err := p.Paths(a.Config.Name, c.Config.Name); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	})
}

// A switch-to-switch port gets the link's MTU plus as much INT headroom as switchd takes:
// issue 21's jumbo link (mtu 9000) got 9256 and switchd refused it at run time.
func TestPortMTU(t *testing.T) {
	for _, c := range []struct {
		mtu, headroom int
		buffer        units.Bytes
		want          int
	}{
		{1500, DefaultINTHeadroom, 4 * units.Megabyte, 1756},
		{9000, DefaultINTHeadroom, 4 * units.Megabyte, switchd.MaxMTU},
		{switchd.MaxMTU, DefaultINTHeadroom, 4 * units.Megabyte, switchd.MaxMTU},
		{1500, 0, 4 * units.Megabyte, 1500},
		// a buffer of one full frame and a bit: the headroom fits in what is left
		{1500, DefaultINTHeadroom, units.Bytes(switchd.MaxFrame(1600)), 1600},
		{1500, DefaultINTHeadroom, units.Bytes(switchd.MaxFrame(1500)), 1500},
	} {
		got := PortMTU(c.mtu, c.headroom, c.buffer)
		if got != c.want {
			t.Errorf("PortMTU(%d, %d, %v) = %d, want %d", c.mtu, c.headroom, c.buffer, got, c.want)
		}
	}
}

// Every link MTU the topology accepts, jumbo frames included, plans into switches that
// switchd accepts, whatever the buffer the topology accepts with it.
func TestJumboPlansValidSwitches(t *testing.T) {
	for _, c := range []struct {
		mtu    int
		buffer string
	}{{9000, "4MB"}, {9216, "4MB"}, {9000, "9018B"}, {1500, "1518B"}, {topo.MinMTU, "1MB"}} {
		t.Run(fmt.Sprintf("mtu=%d,buffer=%s", c.mtu, c.buffer), func(t *testing.T) {
			p := mustPlan(t, fmt.Sprintf("name: j\ndefaults: {rate: 10Gbps, delay: 1us, buffer: %s, mtu: %d}\ngenerator: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}\n", c.buffer, c.mtu))
			for _, sw := range p.Switches {
				if err := sw.Config.Validate(); err != nil {
					t.Errorf("%s: %v", sw.Config.Name, err)
				}
			}
			for _, h := range p.Hosts {
				if h.Config.MTU != c.mtu {
					t.Errorf("host %s: mtu %d, want the link's %d", h.Config.Name, h.Config.MTU, c.mtu)
				}
			}
		})
	}
}
