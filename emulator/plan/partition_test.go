package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"reef/emulator/topo"
)

func loadPlan(t *testing.T, file string) *Plan {
	t.Helper()
	path := filepath.Join("..", "..", "topologies", file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Parse(path, b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(tp, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Every switch is in exactly one shard, the shards are balanced, and on the fabrics
// with a natural split the cut is the smallest one: a fat-tree splits by pods.
func TestPartition(t *testing.T) {
	for _, tc := range []struct {
		file    string
		n       int
		shards  int
		maxCut  int
		podWise bool
	}{
		{"fat-tree-k4.yaml", 2, 2, 8, true},  // two pods each, cores split: 4 cores x 2 links
		{"fat-tree-k4.yaml", 4, 4, 12, true}, // a pod each, a core each: 3 of its 4 links cut
		{"fat-tree-k4.yaml", 1, 1, 0, false},
		{"fat-tree-k8.yaml", 2, 2, 64, true}, // 16 cores, 4 of 8 links cut each
		{"dumbbell.yaml", 2, 2, 1, false},
		{"parking-lot.yaml", 2, 2, 1, false},    // a chain: two runs, one link cut
		{"leaf-spine.yaml", 2, 2, 16, false},    // each spine joins both leaves: half its links cut
		{"dumbbell.yaml", 8, 2, 1, false},       // never more shards than switches
		{"fat-tree-k4.yaml", 20, 20, 32, false}, // one per switch: every link cut
	} {
		p := loadPlan(t, tc.file)
		part := p.Partition(tc.n)
		t.Logf("%s n=%d: %s", tc.file, tc.n, part.String(p))
		if len(part.Shards) != tc.shards {
			t.Errorf("%s n=%d: %d shards, want %d", tc.file, tc.n, len(part.Shards), tc.shards)
		}
		if part.Cut > tc.maxCut {
			t.Errorf("%s n=%d: %d links cut, want at most %d", tc.file, tc.n, part.Cut, tc.maxCut)
		}
		seen := make([]int, len(p.Switches))
		fewest, most := len(p.Switches), 0
		for k, sh := range part.Shards {
			for _, i := range sh {
				seen[i]++
				if part.Of[i] != k {
					t.Errorf("%s: switch %d in shard %d but Of says %d", tc.file, i, k, part.Of[i])
				}
			}
			fewest, most = min(fewest, len(sh)), max(most, len(sh))
		}
		for i, c := range seen {
			if c != 1 {
				t.Errorf("%s: switch %s in %d shards", tc.file, p.Switches[i].Config.Name, c)
			}
		}
		if tc.podWise {
			for _, l := range p.Links {
				a, _ := p.SwitchByName(l.A.Node)
				b, _ := p.SwitchByName(l.B.Node)
				if a == nil || b == nil || (!strings.HasPrefix(l.A.Node, "tor") && !strings.HasPrefix(l.B.Node, "tor")) {
					continue
				}
				if part.Of[index(p, l.A.Node)] != part.Of[index(p, l.B.Node)] {
					t.Errorf("%s n=%d: pod link %s-%s cut", tc.file, tc.n, l.A.Node, l.B.Node)
				}
			}
		}
		if len(part.Shards) > 1 && most > 2*fewest+1 {
			t.Errorf("%s n=%d: unbalanced shards (%d to %d switches)", tc.file, tc.n, fewest, most)
		}
	}
}

func index(p *Plan, name string) int {
	for i, s := range p.Switches {
		if s.Config.Name == name {
			return i
		}
	}
	return -1
}
