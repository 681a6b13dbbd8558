package swarm

import (
	"net/netip"
	"strings"
	"testing"

	"reef/emulator/plan"
	"reef/internal/testlab"
)

func loadPlan(t *testing.T, file string) *plan.Plan {
	t.Helper()
	return testlab.PlanFile(t, "../../topologies/"+file)
}

func machines(n int) []Machine {
	var ms []Machine
	for i := range n {
		ms = append(ms, Machine{Name: "m" + string(rune('1'+i)), Engine: "unix:///x", Addr: netip.AddrFrom4([4]byte{10, 77, 0, byte(1 + i)})})
	}
	return ms
}

func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		file     string
		machines int
		place    map[string]string
		cut      int    // links between machines
		err      string // "" when placement must succeed
	}{
		{file: "dumbbell.yaml", machines: 2, cut: 1},
		{file: "dumbbell.yaml", machines: 1, cut: 0},
		{file: "dumbbell.yaml", machines: 2, place: map[string]string{"shard2": "m1"}, cut: 0},
		{file: "dumbbell.yaml", machines: 2, place: map[string]string{"shard2": "m9"}, err: `no machine "m9"`},
		{file: "dumbbell.yaml", machines: 2, place: map[string]string{"shard7": "m1"}, err: `no shard "shard7"`},
		{file: "fat-tree-k4.yaml", machines: 2, cut: 8},
		{file: "parking-lot.yaml", machines: 2, cut: 1},
	} {
		p := loadPlan(t, tc.file)
		pl, err := Place(p, machines(tc.machines), tc.place)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s on %d: err %v; want %q", tc.file, tc.machines, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s on %d: %v", tc.file, tc.machines, err)
		}
		if len(pl.Cut) != tc.cut {
			t.Errorf("%s on %d machines: %d links cut; want %d", tc.file, tc.machines, len(pl.Cut), tc.cut)
		}
		// Every host is on its ToR's machine, and every cut link joins two switches.
		for _, h := range p.Hosts {
			l := p.Links[h.Link]
			if pl.Node[l.A.Node] != pl.Node[l.B.Node] {
				t.Errorf("%s: host %s is not on its ToR's machine", tc.file, h.Config.Name)
			}
		}
		vnis := map[uint32]bool{}
		for i, vni := range pl.Cut {
			l := p.Links[i]
			if l.A.IsHost || l.B.IsHost || pl.Node[l.A.Node] == pl.Node[l.B.Node] {
				t.Errorf("%s: link %d is cut but joins %s and %s", tc.file, i, l.A.Node, l.B.Node)
			}
			if vni == 0 || vni >= 1<<24 || vnis[vni] {
				t.Errorf("%s: link %d: VNI %d is zero, too large or used twice", tc.file, i, vni)
			}
			vnis[vni] = true
		}
		// Each machine's slice has both ends' tunnels with swapped addresses.
		for i := range pl.Cut {
			l := p.Links[i]
			a, b := pl.Slice(p, pl.Node[l.A.Node]), pl.Slice(p, pl.Node[l.B.Node])
			if a.Tunnels[i].Local != b.Tunnels[i].Remote || a.Tunnels[i].Remote != b.Tunnels[i].Local || a.Tunnels[i].VNI != b.Tunnels[i].VNI {
				t.Errorf("%s: link %d: tunnel ends disagree: %+v and %+v", tc.file, i, a.Tunnels[i], b.Tunnels[i])
			}
		}
	}
}

func TestCutDelaysMoveToIngress(t *testing.T) {
	p := loadPlan(t, "dumbbell.yaml")
	pl, err := Place(p, machines(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	var cut int
	for i := range pl.Cut {
		cut = i
	}
	l := p.Links[cut]
	sw, _ := p.SwitchByName(l.A.Node)
	before := sw.Config.Ports[l.A.Port]
	if before.Delay != l.Delay || before.IngressDelay != 0 {
		t.Fatalf("before: port delay %v ingress %v; want %v and 0", before.Delay, before.IngressDelay, l.Delay)
	}
	CutDelays(p, pl)
	for _, e := range []plan.Endpoint{l.A, l.B} {
		sw, _ := p.SwitchByName(e.Node)
		pc := sw.Config.Ports[e.Port]
		if pc.Delay != 0 || pc.IngressDelay != l.Delay {
			t.Errorf("%s:%s after: delay %v ingress %v; want 0 and %v", e.Node, e.Iface, pc.Delay, pc.IngressDelay, l.Delay)
		}
	}
}

func TestLabVNIBasesDiffer(t *testing.T) {
	if labVNIBase("a") == labVNIBase("b") {
		t.Error("two labs share a VNI base")
	}
	for _, lab := range []string{"a", "dumbbell", "fat-tree-k4"} {
		if b := labVNIBase(lab); b == 0 || b+4096 > 1<<24 {
			t.Errorf("%s: VNI base %d out of range", lab, b)
		}
	}
}

// TestPlaceByCPUs gives a machine with four times the CPUs four times the shards (a
// k=4 fat-tree has four pods, so it gets three of the four).
func TestPlaceByCPUs(t *testing.T) {
	p := loadPlan(t, "fat-tree-k4.yaml")
	ms := machines(2)
	ms[0].CPUs, ms[1].CPUs = 2, 8
	pl, err := Place(p, ms, nil)
	if err != nil {
		t.Fatal(err)
	}
	per := map[int]int{}
	for _, mi := range pl.ShardMachine {
		per[mi]++
	}
	if per[0] != 1 || per[1] != len(pl.Partition.Shards)-1 || per[1] < 3 {
		t.Errorf("shards per machine %v of %d; want 1 on the 2-CPU machine and the rest (3 or more) on the 8-CPU one", per, len(pl.Partition.Shards))
	}
	sw := map[int]int{}
	for _, s := range p.Switches {
		sw[pl.Node[s.Config.Name]]++
	}
	if sw[1] <= 2*sw[0] {
		t.Errorf("switches per machine %v; want most on the larger machine", sw)
	}
}
