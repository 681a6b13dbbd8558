package netns

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"reef/emulator/plan"
	"reef/internal/testenv"
	"reef/internal/testlab"
	"reef/switchd"
	"reef/units"
)

// needRoot and needTool state the tests' prerequisites (reef/internal/testenv: a skip
// outside CI, a failure in CI).
func needRoot(t testing.TB) { t.Helper(); testenv.RequireRoot(t) }

func needTool(t testing.TB, name string) { t.Helper(); testenv.RequireProgram(t, name) }

var (
	switchdOnce sync.Once
	switchdBin  string
	switchdErr  error
)

// testSwitchd builds switchd once per test binary.
func testSwitchd(t testing.TB) string {
	t.Helper()
	switchdOnce.Do(func() { switchdBin, switchdErr = buildSwitchd() })
	if switchdErr != nil {
		t.Fatal(switchdErr)
	}
	return switchdBin
}

// labName returns a unique lab name (topology names are at most 12 characters).
func labName(prefix string) string { return testlab.Name(prefix) }

// planFor parses a topology document whose name is %s and plans it.
func planFor(t testing.TB, doc, lab string) *plan.Plan {
	t.Helper()
	return testlab.Plan(t, lab, fmt.Sprintf(doc, lab))
}

// up brings p up and tears it down when the test ends.
func up(t testing.TB, p *plan.Plan, o Options) *Lab {
	t.Helper()
	needRoot(t)
	if o.Switchd == "" {
		o.Switchd = testSwitchd(t)
	}
	t0 := time.Now()
	lab, err := Up(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lab %s up in %v", lab.Name, time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() {
		if _, err := os.Stat(lab.Dir); err == nil {
			if err := Down(context.Background(), lab.Name); err != nil {
				t.Errorf("down: %v", err)
			}
		}
	})
	return lab
}

// run runs argv in node and returns its combined output.
func run(ctx context.Context, lab *Lab, node string, argv ...string) (string, error) {
	var out bytes.Buffer
	err := Exec(ctx, lab.Name, node, argv, Stdio{Out: &out, Err: &out})
	return out.String(), err
}

// report is the part of switchd's stats file the tests read.
type report struct {
	Time  units.Time          `json:"time"`
	Ports []switchd.PortStats `json:"ports"`
}

func readReport(t testing.TB, lab *Lab, node string) report {
	t.Helper()
	r, err := loadReport(lab, node)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// loadReport is readReport for a goroutine other than the test's, where t.Fatal may
// not be called.
func loadReport(lab *Lab, node string) (report, error) {
	var r report
	b, err := os.ReadFile(lab.StatsPath(node))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s stats: %w", node, err)
	}
	return r, nil
}

// portTo returns the index of sw's port whose peer is node.
func portTo(t testing.TB, p *plan.Plan, sw, node string) int {
	t.Helper()
	s, ok := p.SwitchByName(sw)
	if !ok {
		t.Fatalf("no switch %s", sw)
	}
	for i, pc := range s.Config.Ports {
		if strings.HasPrefix(pc.Peer, node+":") {
			return i
		}
	}
	t.Fatalf("%s has no port to %s", sw, node)
	return -1
}
