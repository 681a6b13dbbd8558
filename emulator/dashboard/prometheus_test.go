package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"reef/emulator/expect"
	"reef/internal/testenv"
	"reef/units"
)

// boardQueries returns every PromQL expression ("expr") and every template variable
// query ("label_values(metric, label)") in the Grafana boards under dir.
func boardQueries(t *testing.T, dir string) (exprs, vars []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no boards in %s (%v)", dir, err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if e, ok := x["expr"].(string); ok {
				exprs = append(exprs, e)
			}
			if d, ok := x["definition"].(string); ok && strings.HasPrefix(d, "label_values(") {
				vars = append(vars, d)
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		walk(v)
	}
	sort.Strings(exprs)
	return exprs, vars
}

// grafanaVars stands in for what Grafana substitutes before querying.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$switch", ".*", "$group", ".*")

// freePort returns a loopback port nobody holds right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// A real Prometheus (Debian's) scrapes a dashboard server fed by a running sim: every
// query the Grafana boards in dashboards/ use returns data, and so does every board
// variable.
func TestPrometheusScrapesBoards(t *testing.T) {
	prom := testenv.RequireProgram(t, "prometheus")
	exprs, vars := boardQueries(t, "../../dashboards")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// the lab: two DCTCP flows through the dumbbell, shown live for about 20 s
	p, s := dumbbellSim(t, 400*units.Millisecond, 0, units.Millisecond)
	f := NewFeed("prometheus")
	f.Begin("dumbbell (prometheus test)", p)
	f.Decide(expect.Result{Name: "runs", Check: "true", Pass: true})
	simDone := make(chan error, 1)
	go func() { simDone <- RunSim(ctx, s, f, 400*units.Millisecond, units.Millisecond, 50*time.Millisecond) }()
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, stopSrv := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- NewServer(f, Options{}).ServeListener(srvCtx, ln) }()
	defer func() { stopSrv(); <-served; cancel(); <-simDone }()

	dir := t.TempDir()
	port := freePort(t)
	cfg := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: reef\n    static_configs: [{targets: [%q]}]\n", ln.Addr().String())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--log.level=warn")
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", b)
		}
	}()
	api := fmt.Sprintf("http://127.0.0.1:%d/api/v1/", port)
	query := func(path string) (int, error) {
		r, err := http.Get(api + path)
		if err != nil {
			return 0, err
		}
		defer r.Body.Close()
		var out struct {
			Status string          `json:"status"`
			Error  string          `json:"error"`
			Data   json.RawMessage `json:"data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&out); err != nil {
			return 0, err
		}
		if out.Status != "success" {
			return 0, fmt.Errorf("%s", out.Error)
		}
		var vec struct {
			Result []json.RawMessage `json:"result"`
		}
		if json.Unmarshal(out.Data, &vec) == nil && vec.Result != nil {
			return len(vec.Result), nil
		}
		var labels []string
		if err := json.Unmarshal(out.Data, &labels); err != nil {
			return 0, err
		}
		return len(labels), nil
	}
	pending := map[string]string{} // what to ask → what the board says
	for _, e := range exprs {
		pending["query?query="+url.QueryEscape(grafanaVars.Replace(e))] = e
	}
	lv := regexp.MustCompile(`^label_values\((\w+),\s*(\w+)\)$`)
	for _, v := range vars {
		m := lv.FindStringSubmatch(v)
		if m == nil {
			t.Fatalf("board variable %q: not label_values(metric, label)", v)
		}
		pending["label/"+m[2]+"/values?match[]="+m[1]] = v
	}
	errs := map[string]error{}
	deadline := time.Now().Add(90 * time.Second)
	for len(pending) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		for q, e := range pending {
			n, err := query(q)
			errs[e] = err
			if err == nil && n > 0 {
				delete(pending, q)
			}
		}
	}
	for _, e := range pending {
		t.Errorf("no data for %q (%v)", e, errs[e])
	}
	t.Logf("%d board queries and %d variables return data", len(exprs), len(vars))
}

// docker-compose.yml is valid for docker-compose, and what it mounts exists.
func TestComposeFile(t *testing.T) {
	dc := testenv.RequireProgram(t, "docker-compose")
	out, err := exec.Command(dc, "-f", "../../docker-compose.yml", "config").CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	for _, path := range []string{"deploy/prometheus.yml", "deploy/grafana/provisioning", "dashboards"} {
		if !strings.Contains(string(out), path) {
			t.Errorf("compose file does not mount %s", path)
		}
		if _, err := os.Stat(filepath.Join("../..", path)); err != nil {
			t.Error(err)
		}
	}
	// the provisioned Prometheus scrapes the dashboard's default address, on loopback
	b, err := os.ReadFile("../../deploy/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), DefaultAddr) {
		t.Errorf("deploy/prometheus.yml does not scrape %s", DefaultAddr)
	}
	if strings.Contains(string(out), "0.0.0.0") {
		t.Error("compose file binds 0.0.0.0; loopback only")
	}
}
