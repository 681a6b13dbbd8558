package topo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/parser"

	"reef/emulator/internal/yamlpos"
	"reef/switchd"
	"reef/units"
)

// small is a valid explicit topology; bad cases below are edits of it.
const small = `name: lab
defaults: {rate: 100Mbps, delay: 10us, buffer: 100KB, mtu: 1500}
nodes:
  - {name: h1, kind: host}
  - {name: h2, kind: host}
  - {name: s1, kind: switch}
  - {name: s2, kind: switch}
links:
  - [h1, s1]
  - [h2, s2]
  - {a: s1, b: s2, rate: 1Gbps, delay: 5us, buffer: 200KB}
`

func TestParseValid(t *testing.T) {
	tp, err := Parse("small.yaml", []byte(small))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(tp.Links); got != 3 {
		t.Fatalf("links = %d, want 3", got)
	}
	want := Params{Rate: 100 * units.Mbps, Delay: 10 * units.Microsecond, Buffer: 100 * units.Kilobyte, MTU: 1500}
	if tp.Links[0].Params != want {
		t.Errorf("brief link took %+v, want the defaults %+v", tp.Links[0].Params, want)
	}
	want = Params{Rate: units.Gbps, Delay: 5 * units.Microsecond, Buffer: 200 * units.Kilobyte, MTU: 1500}
	if tp.Links[2].Params != want {
		t.Errorf("long link = %+v, want its own fields over the defaults %+v", tp.Links[2].Params, want)
	}
	if got := tp.Groups["s1"]; len(got) != 1 || got[0] != "h1" {
		t.Errorf("group s1 = %v, want [h1]", got)
	}
	if n, _ := tp.NodeByName("s1"); n.Features != DefaultFeatures {
		t.Errorf("s1 features = %+v, want defaults", n.Features)
	}
}

// TestParseErrors feeds bad documents and checks that every expected problem is
// reported with file:line: field.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want []string
	}{
		{"unknown top-level field", "name: lab\nfoo: 1\n" + small[len("name: lab\n"):],
			[]string{`f.yaml:2:1: foo: unknown field "foo"`}},
		{"unknown link field", strings.Replace(small, "buffer: 200KB}", "bufer: 200KB}", 1),
			[]string{`f.yaml:11:`, `unknown field "bufer"`}},
		{"every unknown field and what else is wrong", "name: lab\nfoo: 1\n" + strings.Replace(strings.Replace(small[len("name: lab\n"):],
			"buffer: 200KB}", "bufer: 200KB}", 1), "[h2, s2]", "[h2, s9]", 1),
			[]string{`f.yaml:2:1: foo: unknown field "foo"`, `f.yaml:12:`, `links[2].bufer: unknown field "bufer"`,
				`f.yaml:11: links[1].b: node "s9" is not defined`}},
		{"unknown feature field", small + "switches:\n  s1: {ecn: {mode: step, kk: 1KB}}\n",
			[]string{`f.yaml:13:`, `unknown field "kk"`}},
		{"brief link with three names", strings.Replace(small, "[h1, s1]", "[h1, s1, s2]", 1),
			[]string{`f.yaml:9:`, "want exactly two"}},
		{"link to a missing node", strings.Replace(small, "[h2, s2]", "[h2, s9]", 1),
			[]string{`f.yaml:10: links[1].b: node "s9" is not defined`}},
		{"zero rate", strings.Replace(small, "rate: 1Gbps", "rate: 0Mbps", 1),
			[]string{`f.yaml:11: links[2].rate: must be > 0, got "0Mbps"`}},
		{"negative rate default", strings.Replace(small, "rate: 100Mbps", "rate: -5Mbps", 1),
			[]string{`f.yaml:2: defaults.rate: must be > 0, got "-5Mbps"`}},
		{"rate without unit", strings.Replace(small, "rate: 1Gbps", "rate: 1000", 1),
			[]string{`f.yaml:11: links[2].rate: rate "1000": want a number with a unit`}},
		{"negative delay", strings.Replace(small, "delay: 5us", "delay: -5us", 1),
			[]string{`f.yaml:11: links[2].delay: must be ≥ 0, got "-5us"`}},
		{"buffer below MTU", strings.Replace(small, "buffer: 200KB", "buffer: 1000B", 1),
			[]string{`f.yaml:11: links[2].buffer: link s1–s2: buffer 1KB holds no full frame (the MTU, 1500 B, with an Ethernet header and a VLAN tag); want buffer ≥ 1518 B`}},
		// a buffer of one MTU but not one frame passed here and failed in switchd at run time
		{"buffer of one MTU", strings.Replace(small, "buffer: 200KB", "buffer: 1500B", 1),
			[]string{`f.yaml:11: links[2].buffer: link s1–s2: buffer 1.5KB holds no full frame`, `want buffer ≥ 1518 B`}},
		{"mtu out of range", strings.Replace(small, "mtu: 1500", "mtu: 100", 1),
			[]string{`f.yaml:2: defaults.mtu: must be in [576, 9216] bytes, got 100`}},
		// above what a switch port takes: refused at load, not by switchd at run time
		{"mtu above a switch's", strings.Replace(small, "buffer: 200KB}", "buffer: 200KB, mtu: 9217}", 1),
			[]string{`f.yaml:11: links[2].mtu: must be in [576, 9216] bytes, got 9217`}},
		{"duplicate node", strings.Replace(small, "{name: h2, kind: host}", "{name: h1, kind: host}", 1),
			[]string{`f.yaml:5: nodes[1].name: duplicate node name "h1" (first defined at line 4 by nodes[0])`}},
		{"bad node kind", strings.Replace(small, "{name: s2, kind: switch}", "{name: s2, kind: router}", 1),
			[]string{`f.yaml:7: nodes[3].kind: "router": want host or switch`}},
		{"host with two links", small + "  - [h1, s2]\n",
			[]string{`f.yaml:4: nodes[0]: host h1 has 2 links (links[0], links[3]); a host has exactly one link`}},
		{"disconnected graph", strings.Replace(small, "  - {a: s1, b: s2, rate: 1Gbps, delay: 5us, buffer: 200KB}\n", "", 1),
			[]string{`f.yaml:5: nodes[1]: graph is disconnected: h2, s2 cannot reach h1`}},
		{"host without link", strings.Replace(small, "  - [h2, s2]\n", "", 1),
			[]string{`f.yaml:5: nodes[1]: host h2 has no link`}},
		{"host to host", strings.Replace(small, "[h2, s2]", "[h2, h1]", 1),
			[]string{`links[1]: links host h2 to host h1`}},
		{"self loop", small + "  - [s1, s1]\n",
			[]string{`f.yaml:12: links[3]: links s1 to itself`}},
		{"bad lab name", strings.Replace(small, "name: lab", "name: My_Lab_Is_Long", 1),
			[]string{`f.yaml:1: name: "My_Lab_Is_Long": want [a-z0-9-], at most 12 characters`}},
		{"bad ecn mode", small + "switches:\n  \"*\": {ecn: {mode: fancy}}\n",
			[]string{`f.yaml:13: switches["*"].ecn.mode: "fancy": want off, step or red`}},
		{"step without k", small + "switches:\n  s1: {ecn: {mode: step}}\n",
			[]string{`f.yaml:13: switches.s1.ecn: mode step needs k`}},
		{"red with bad pmax and max", small + "switches:\n  s1:\n    ecn: {mode: red, min: 10KB, max: 5KB, pmax: 2}\n",
			[]string{`f.yaml:14: switches.s1.ecn.max: must be above min (10KB), got 5KB`, `f.yaml:14: switches.s1.ecn.pmax: must be in (0, 1], got 2`}},
		{"negative mpd unit", small + "switches:\n  s1:\n    int:\n      mode: mpd\n      mpd_unit: -1ns\n",
			[]string{`f.yaml:16: switches.s1.int.mpd_unit: must be > 0, got "-1ns"`}},
		{"flowlet without gap", small + "switches:\n  s1: {lb: {mode: flowlet}}\n",
			[]string{`f.yaml:13: switches.s1.lb: mode flowlet needs flowlet_gap`}},
		{"bad lb mode", small + "switches:\n  s1: {lb: {mode: random}}\n",
			[]string{`switches.s1.lb.mode: "random": want ecmp, spray, adaptive or flowlet`}},
		{"switches entry for a host", small + "switches:\n  h1: {lb: {mode: spray}}\n",
			[]string{`f.yaml:13: switches.h1: h1 is a host`}},
		{"switches glob matching nothing", small + "switches:\n  \"tor*\": {lb: {mode: spray}}\n",
			[]string{`f.yaml:13: switches["tor*"]: matches no switch`}},
		{"pfc xon above xoff", strings.Replace(small, "buffer: 200KB}", "buffer: 200KB, pfc: {xoff: 10KB, xon: 20KB}}", 1),
			[]string{`f.yaml:11: links[2].pfc.xon: must be below xoff (10KB), got 20KB`}},
		{"undefined class", strings.Replace(small, "{a: s1, b: s2,", "{a: s1, b: s2, class: fast,", 1),
			[]string{`f.yaml:11: links[2].class: class "fast" is not defined under classes`}},
		{"several problems at once", strings.Replace(strings.Replace(small, "rate: 1Gbps", "rate: 0bps", 1), "delay: 10us", "delay: -1us", 1),
			[]string{`f.yaml:2: defaults.delay: must be ≥ 0`, `f.yaml:11: links[2].rate: must be > 0`}},
		{"generator unknown kind", "name: g\ngenerator: {kind: ring}\n",
			[]string{`f.yaml:2: generator.kind: "ring": want one of dumbbell`}},
		{"generator param of another kind", "name: g\ngenerator:\n  kind: fat-tree\n  k: 4\n  spines: 2\n",
			[]string{`f.yaml:5: generator.spines: not a parameter of generator fat-tree; want k`}},
		{"fat-tree odd k", "name: g\ngenerator:\n  kind: fat-tree\n  k: 5\n",
			[]string{`f.yaml:4: generator.k: must be even, got 5`}},
		{"parking lot one hop", "name: g\ngenerator: {kind: parking-lot, hops: 1}\n",
			[]string{`f.yaml:2: generator.hops: must be in [2, 100000], got 1`}},
		{"dumbbell beyond the address plan", "name: g\ngenerator:\n  kind: dumbbell\n  hosts: 100000\n",
			[]string{`f.yaml:4: generator.hosts: gives 200000 hosts; the address plan (198.18.0.0/15) has 131070 host addresses`}},
		{"dumbbell one side beyond the address plan", "name: g\ngenerator:\n  kind: dumbbell\n  hosts_left: 100000\n  hosts_right: 40000\n",
			[]string{`f.yaml:4: generator.hosts_left: gives 140000 hosts; the address plan (198.18.0.0/15) has 131070 host addresses`}},
		{"fat-tree beyond the MACs", "name: g\ngenerator:\n  kind: fat-tree\n  k: 64\n",
			[]string{`f.yaml:4: generator.k: gives 70656 nodes; the address plan numbers at most 65536 nodes`}},
		{"parking lot beyond the address plan", "name: g\ngenerator:\n  kind: parking-lot\n  hops: 2\n  hosts_per_switch: [70000, 70000]\n",
			[]string{`f.yaml:5: generator.hosts_per_switch: gives 140000 hosts`}},
		{"reverse path beyond the MACs", "name: g\ngenerator:\n  kind: reverse-path\n  reverse_senders: 40000\n  bottleneck: core\n",
			[]string{`f.yaml:4: generator.reverse_senders: gives 80004 nodes; the address plan numbers at most 65536 nodes`}},
		{"leaf-spine beyond the MACs", "name: g\ngenerator:\n  kind: leaf-spine\n  leaves: 1000\n  hosts_per_leaf: 66\n",
			[]string{`f.yaml:2: generator: gives 67002 nodes`}},
		{"parking lot wrong list", "name: g\ngenerator:\n  kind: parking-lot\n  hops: 3\n  hosts_per_switch: [1, 2]\n",
			[]string{`f.yaml:5: generator.hosts_per_switch: has 2 entries; want one per switch (hops = 3)`}},
		{"override matching nothing", "name: g\ngenerator: {kind: dumbbell}\noverrides:\n  - {a: s1, b: s9, delay: 1ms}\n",
			[]string{`f.yaml:4: overrides[0]: matches no link`}},
		{"class not used", "name: g\ngenerator: {kind: fat-tree, k: 4}\nclasses:\n  bottleneck: {rate: 1Gbps}\n",
			[]string{`f.yaml:4: classes.bottleneck: class "bottleneck" is used by no link (generated classes: host, tor-agg, agg-core)`}},
		{"generated buffer below mtu", "name: g\ngenerator: {kind: fat-tree, k: 4}\nclasses:\n  agg-core: {buffer: 1KB}\n",
			[]string{`f.yaml:2: generator.buffer: class agg-core: buffer 1KB holds no full frame`}},
		{"leaf-spine both rate forms", "name: g\ngenerator: {kind: leaf-spine, oversubscription: 2}\nclasses:\n  uplink: {rate: 1Gbps}\n",
			[]string{`f.yaml:2: generator.oversubscription: set either oversubscription or classes.uplink.rate`}},
		{"duplicate generated and explicit node", "name: g\ngenerator: {kind: dumbbell}\nnodes:\n  - {name: s1, kind: switch}\n",
			[]string{`f.yaml:4: nodes[0].name: duplicate node name "s1" (first defined at line 2 by generator)`}},
		{"nothing", "name: g\n", []string{`f.yaml:1: no nodes, links or generator`}},
		{"syntax error", "name: [g\n", []string{`f.yaml:1:`}},
		{"wrong type", "name: g\nnodes: 3\n", []string{`f.yaml:2:`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(c.doc))
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nlacks %q", err, w)
				}
			}
		})
	}
}

func TestGenerators(t *testing.T) {
	cases := []struct {
		gen                     string
		hosts, switches, links  int
		wantGroups              map[string]int
		firstLink, lastLinkEnds [2]string
	}{
		{"{kind: dumbbell, hosts: 3}", 6, 2, 7, map[string]int{"left": 3, "right": 3, "s1": 3},
			[2]string{"h1", "s1"}, [2]string{"s1", "s2"}},
		{"{kind: dumbbell, hosts_left: 4, hosts_right: 1}", 5, 2, 6, map[string]int{"left": 4, "right": 1},
			[2]string{"h1", "s1"}, [2]string{"s1", "s2"}},
		{"{kind: parking-lot, hops: 4, hosts: 2}", 8, 4, 11, map[string]int{"s1": 2, "s4": 2},
			[2]string{"h1", "s1"}, [2]string{"s3", "s4"}},
		{"{kind: parking-lot, hops: 3, hosts_per_switch: [10, 18, 1]}", 29, 3, 31, map[string]int{"s1": 10, "s2": 18, "s3": 1},
			[2]string{"h1", "s1"}, [2]string{"s2", "s3"}},
		{"{kind: reverse-path, reverse_senders: 4}", 6, 2, 7,
			map[string]int{"victim-src": 1, "victim-dst": 1, "reverse-src": 4, "reverse-dst": 1},
			[2]string{"h1", "s1"}, [2]string{"s1", "s2"}},
		{"{kind: reverse-path, reverse_senders: 3, bottleneck: core}", 8, 2, 9,
			map[string]int{"reverse-src": 3, "reverse-dst": 3, "s1": 4, "s2": 4},
			[2]string{"h1", "s1"}, [2]string{"s1", "s2"}},
		{"{kind: leaf-spine, spines: 4, leaves: 3, hosts_per_leaf: 5}", 15, 7, 15 + 12, map[string]int{"leaf1": 5},
			[2]string{"h1", "leaf1"}, [2]string{"leaf3", "spine4"}},
		{"{kind: fat-tree, k: 4}", 16, 20, 48, map[string]int{"pod1": 4, "pod4": 4, "tor1": 2},
			[2]string{"h1", "tor1"}, [2]string{"agg8", "core4"}},
		{"{kind: fat-tree, k: 8}", 128, 80, 128 + 128 + 128, map[string]int{"pod8": 16, "tor32": 4},
			[2]string{"h1", "tor1"}, [2]string{"agg32", "core16"}},
		{"{kind: fat-tree, k: 2}", 2, 5, 2 + 2 + 2, nil, [2]string{"h1", "tor1"}, [2]string{"agg2", "core1"}},
	}
	for _, c := range cases {
		t.Run(c.gen, func(t *testing.T) {
			tp, err := Parse("g.yaml", []byte("name: g\ngenerator: "+c.gen+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if h, s := len(tp.Hosts()), len(tp.Switches()); h != c.hosts || s != c.switches {
				t.Errorf("hosts, switches = %d, %d; want %d, %d", h, s, c.hosts, c.switches)
			}
			if len(tp.Links) != c.links {
				t.Errorf("links = %d, want %d", len(tp.Links), c.links)
			}
			for g, n := range c.wantGroups {
				if len(tp.Groups[g]) != n {
					t.Errorf("group %s = %v, want %d hosts", g, tp.Groups[g], n)
				}
			}
			first, last := tp.Links[0], tp.Links[len(tp.Links)-1]
			if [2]string{first.A, first.B} != c.firstLink || [2]string{last.A, last.B} != c.lastLinkEnds {
				t.Errorf("first, last link = %s–%s, %s–%s; want %v, %v", first.A, first.B, last.A, last.B, c.firstLink, c.lastLinkEnds)
			}
		})
	}
}

func TestRename(t *testing.T) {
	tp, err := Parse("r.yaml", []byte("name: r\ngenerator:\n  kind: reverse-path\n  reverse_senders: 1\n  names: {h1: vsrc, h2: vdst, s1: tor-a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := tp.Groups["victim-src"]; len(got) != 1 || got[0] != "vsrc" {
		t.Errorf("victim-src = %v, want [vsrc]", got)
	}
	if got := tp.Groups["tor-a"]; len(got) != 1 || got[0] != "vsrc" {
		t.Errorf("group tor-a = %v, want [vsrc]", got)
	}
	if l := tp.Links[0]; l.A != "vsrc" || l.B != "tor-a" {
		t.Errorf("first link %s–%s, want vsrc–tor-a", l.A, l.B)
	}
	_, err = Parse("r.yaml", []byte("name: r\ngenerator:\n  kind: dumbbell\n  names:\n    h9: x\n    h1: h2\n"))
	for _, want := range []string{`r.yaml:5: generator.names.h9: no generated node "h9" to rename`, `duplicate node name "h2"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad rename: %v; want %q", err, want)
		}
	}
}

func TestFatTreeWiring(t *testing.T) {
	tp, err := Parse("g.yaml", []byte("name: g\ngenerator: {kind: fat-tree, k: 4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	deg := map[string]int{}
	for _, l := range tp.Links {
		deg[l.A]++
		deg[l.B]++
	}
	for _, s := range tp.Switches() {
		if deg[s] != 4 {
			t.Errorf("%s has %d links; every switch of a k=4 fat tree has k=4", s, deg[s])
		}
	}
	// core1 must reach agg1 of every pod (agg1, agg3, agg5, agg7), core3 the second aggs.
	for _, l := range tp.Links {
		if l.B == "core1" && l.A != "agg1" && l.A != "agg3" && l.A != "agg5" && l.A != "agg7" {
			t.Errorf("core1 linked to %s; want first aggs of each pod", l.A)
		}
		if l.B == "core3" && l.A != "agg2" && l.A != "agg4" && l.A != "agg6" && l.A != "agg8" {
			t.Errorf("core3 linked to %s; want second aggs of each pod", l.A)
		}
	}
}

func TestInheritance(t *testing.T) {
	doc := `name: inh
defaults: {rate: 100Mbps, delay: 10us, buffer: 100KB}
generator: {kind: dumbbell, hosts: 2}
classes:
  bottleneck: {rate: 50Mbps, delay: 1ms}
overrides:
  - {a: "h*", b: s1, buffer: 50KB}
  - {a: s2, b: s1, delay: 2ms}
`
	tp, err := Parse("i.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range tp.Links {
		want := Params{Rate: 100 * units.Mbps, Delay: 10 * units.Microsecond, Buffer: 100 * units.Kilobyte, MTU: 1500}
		switch {
		case l.Class == "bottleneck":
			want.Rate, want.Delay = 50*units.Mbps, 2*units.Millisecond // class, then override
		case l.B == "s1":
			want.Buffer = 50 * units.Kilobyte
		}
		if l.Params != want {
			t.Errorf("%s–%s = %+v, want %+v", l.A, l.B, l.Params, want)
		}
	}
}

func TestLeafSpineOversubscription(t *testing.T) {
	tp, err := Parse("l.yaml", []byte(`name: ls
defaults: {rate: 1Gbps}
generator: {kind: leaf-spine, spines: 2, leaves: 2, hosts_per_leaf: 4, oversubscription: 4}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range tp.Links {
		// 1 Gbps × 4 hosts / (2 spines × 4) = 500 Mbps per uplink.
		if l.Class == "uplink" && l.Rate != 500*units.Mbps {
			t.Fatalf("uplink %s–%s = %v, want 500Mbps", l.A, l.B, l.Rate)
		}
	}
}

func TestFeatures(t *testing.T) {
	doc := `name: f
generator: {kind: fat-tree, k: 4}
switches:
  tor1: {lb: {mode: flowlet, flowlet_gap: 50us}}
  "*": {ecn: {mode: step, k: 30KB}, int: {mode: mpd}, lb: {mode: spray}}
  "core*": {ecn: {mode: red, min: 10KB, max: 40KB, pmax: 0.1}, int: {mode: hpcc}}
`
	tp, err := Parse("f.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	get := func(n string) Features { x, _ := tp.NodeByName(n); return x.Features }
	step := switchd.ECNConfig{Mode: "step", K: 30 * units.Kilobyte}
	mpd := switchd.INTConfig{Mode: "mpd", MPDUnit: DefaultMPDUnit}
	cases := []struct {
		node string
		want Features
	}{
		// The exact name applies after the globs even though it comes first in the file.
		{"tor1", Features{ECN: step, INT: mpd, LB: switchd.LBConfig{Mode: "flowlet", FlowletGap: 50 * units.Microsecond}}},
		{"tor2", Features{ECN: step, INT: mpd, LB: switchd.LBConfig{Mode: "spray"}}},
		// core* comes after "*": its ecn and int replace those blocks; lb stays.
		{"core2", Features{ECN: switchd.ECNConfig{Mode: "red", Min: 10 * units.Kilobyte, Max: 40 * units.Kilobyte, PMax: 0.1},
			INT: switchd.INTConfig{Mode: "hpcc"}, LB: switchd.LBConfig{Mode: "spray"}}},
	}
	for _, c := range cases {
		if got := get(c.node); got != c.want {
			t.Errorf("%s features = %+v, want %+v", c.node, got, c.want)
		}
	}
	if n, _ := tp.NodeByName("h1"); n.Features != (Features{}) {
		t.Errorf("host h1 has features %+v", n.Features)
	}
}

// TestEmbedded decodes a topology that sits inside another document, from its AST node
// and from its bytes with a line offset: both report positions in the outer file.
func TestEmbedded(t *testing.T) {
	outer := `# experiment
experiment: x
topology:
  name: emb
  generator: {kind: dumbbell}
  classes:
    bottleneck: {rate: 0bps}
`
	f, err := parser.ParseBytes([]byte(outer), 0)
	if err != nil {
		t.Fatal(err)
	}
	node := yamlpos.Entries(f.Docs[0].Body)[1].Value
	_, err = DecodeNode("exp.yaml", node)
	if err == nil || !strings.Contains(err.Error(), `exp.yaml:7: classes.bottleneck.rate: must be > 0`) {
		t.Errorf("DecodeNode error = %v; want exp.yaml:7: classes.bottleneck.rate", err)
	}
	inner := "name: emb\ngenerator: {kind: dumbbell}\nclasses:\n  bottleneck: {rate: 0bps}\n"
	_, err = ParseAt("exp.yaml", []byte(inner), 4)
	if err == nil || !strings.Contains(err.Error(), `exp.yaml:7: classes.bottleneck.rate: must be > 0`) {
		t.Errorf("ParseAt error = %v; want exp.yaml:7: classes.bottleneck.rate", err)
	}
	if _, err := ParseAt("exp.yaml", []byte("name: emb\nfoo: 1\n"), 10); err == nil || !strings.Contains(err.Error(), "exp.yaml:11:1: foo: unknown field") {
		t.Errorf("ParseAt unknown field = %v; want exp.yaml:11:1", err)
	}
}

func TestShippedTopologies(t *testing.T) {
	files, err := filepath.Glob("../../topologies/*.yaml")
	if err != nil || len(files) < 6 {
		t.Fatalf("topologies: %v %v", files, err)
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func TestValidateInCode(t *testing.T) {
	p := DefaultParams
	tp := &Topology{Name: "code", Nodes: []Node{{Name: "h1", Kind: Host}, {Name: "s1", Kind: Switch, Features: DefaultFeatures}},
		Links: []Link{{A: "h1", B: "s1", Params: p}}}
	if err := tp.Validate(); err != nil {
		t.Fatalf("valid topology: %v", err)
	}
	tp.Links[0].Rate = 0
	if err := tp.Validate(); err == nil || !strings.Contains(err.Error(), "rate: link h1–s1: must be > 0") {
		t.Errorf("zero rate: %v", err)
	}
}

func TestScale(t *testing.T) {
	tp, err := Parse("s.yaml", []byte("name: s\ndefaults: {rate: 200Gbps, delay: 245ns}\ngenerator: {kind: dumbbell}\nswitches:\n  \"*\": {int: {mode: mpd}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := tp.Scale(200)
	if l := s.Links[0]; l.Rate != units.Gbps || l.Delay != 49*units.Microsecond {
		t.Errorf("scaled link = %v %v, want 1Gbps 49µs", l.Rate, l.Delay)
	}
	if n, _ := s.NodeByName("s1"); n.Features.INT.MPDUnit != 51200*units.Nanosecond {
		t.Errorf("scaled MPD unit = %v, want 51.2µs", n.Features.INT.MPDUnit)
	}
	if tp.Links[0].Rate != 200*units.Gbps {
		t.Errorf("Scale changed the original")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(small))
	files, _ := filepath.Glob("../../topologies/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: g\ngenerator: {kind: parking-lot, hops: 3, hosts_per_switch: [1, -2, 3]}\n"))
	f.Add([]byte("name: g\nlinks: [[a], {a: 1}]\nswitches: {\"[\": {}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tp, err := Parse("fuzz.yaml", b)
		if err == nil && tp == nil {
			t.Fatal("nil topology without error")
		}
		if err == nil {
			if err := tp.Validate(); err != nil {
				t.Fatalf("Parse accepted a topology Validate rejects: %v", err)
			}
		}
	})
}

// TestAddressPlanLimitsInCode: a topology with more nodes than the address plan numbers
// (one switch, 65,536 hosts) names the first node past the limit and the switch with
// more ports than a MAC can number.
func TestAddressPlanLimitsInCode(t *testing.T) {
	tp := &Topology{Name: "big", File: "big.yaml", Nodes: []Node{{Name: "s1", Kind: Switch, Features: DefaultFeatures, Line: 2, Field: "nodes[0]"}}}
	for i := 1; i <= MaxNodes; i++ {
		name := "h" + strconv.Itoa(i)
		tp.Nodes = append(tp.Nodes, Node{Name: name, Kind: Host, Line: 2 + i, Field: "nodes[" + strconv.Itoa(i) + "]"})
		tp.Links = append(tp.Links, Link{A: name, B: "s1", Params: DefaultParams, Line: 70000 + i, Field: "links[" + strconv.Itoa(i-1) + "]"})
	}
	err := tp.Validate()
	for _, want := range []string{
		"big.yaml:65538: nodes[65536]: node h65536 is node 65537 and host 65536: the topology gives 65537 nodes; the address plan numbers at most 65536 nodes",
		"big.yaml:135536: links[65535]: node s1 has more than 65535 links; a switch has at most 65535 ports",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
}
