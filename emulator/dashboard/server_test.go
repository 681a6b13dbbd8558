package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"reef/emulator/expect"
	"reef/units"
)

func get(t *testing.T, url string, v any) int {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if v != nil && r.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v in %s", url, err, b)
		}
	}
	return r.StatusCode
}

// The JSON API over a live feed: topology once, state and series as the run grows.
func TestServerAPI(t *testing.T) {
	p, s := dumbbellSim(t, 2*units.Millisecond, 0)
	f := NewFeed("x")
	f.Begin("dumbbell", p)
	srv := httptest.NewServer(NewServer(f, Options{MinInterval: time.Millisecond}))
	defer srv.Close()

	var top Topology
	get(t, srv.URL+"/api/topology", &top)
	if len(top.Nodes) != 18 || len(top.Links) != 17 {
		t.Fatalf("topology: %d nodes, %d links; want 18, 17", len(top.Nodes), len(top.Links))
	}
	var st State
	get(t, srv.URL+"/api/state", &st)
	if len(st.Links) != 17 || len(st.Flows) != 0 || !st.Live {
		t.Fatalf("state before samples: %+v", st)
	}
	s.RunUntil(units.Millisecond)
	f.Push(s.Now(), s.Results())
	get(t, srv.URL+"/api/state", &st)
	if len(st.Flows) != 1 || st.Flows[0].N == 0 || st.Now != int64(units.Millisecond) {
		t.Fatalf("state after 1ms: flows %+v now %v", st.Flows, st.Now)
	}
	var se Series
	get(t, srv.URL+"/api/series?flow=0", &se)
	if se.From != 0 || se.Next != st.Flows[0].N || len(se.Rows) != se.Next || len(se.Rows[0]) != len(se.Columns) {
		t.Fatalf("series: from %d next %d rows %d", se.From, se.Next, len(se.Rows))
	}
	s.RunUntil(2 * units.Millisecond)
	f.Push(s.Now(), s.Results())
	var more Series
	get(t, srv.URL+"/api/series?flow=0&from="+itoa(se.Next), &more)
	if more.From != se.Next || len(more.Rows) == 0 || more.Rows[0][0] <= se.Rows[len(se.Rows)-1][0] {
		t.Fatalf("incremental series: from %d, %d rows", more.From, len(more.Rows))
	}
	get(t, srv.URL+"/api/state", &st)
	var ps Series
	port := st.Links[linkBetween(t, p, "s1", "s2")].Ports[0]
	get(t, srv.URL+"/api/series?port="+itoa(port), &ps)
	if len(ps.Rows) == 0 || !strings.HasPrefix(ps.Name, "port s") {
		t.Fatalf("port series %q: %d rows", ps.Name, len(ps.Rows))
	}
	for _, bad := range []string{"/api/series", "/api/series?flow=9", "/api/series?port=-1", "/api/series?flow=x", "/nope"} {
		if code := get(t, srv.URL+bad, nil); code < 400 {
			t.Errorf("%s: status %d, want an error", bad, code)
		}
	}
	r, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(b), "<title>reef · dumbbell</title>") || !strings.Contains(string(b), "/static/app.js") {
		t.Fatalf("page: %.200s", b)
	}
	for _, asset := range []string{"/static/app.js", "/static/style.css"} {
		if code := get(t, srv.URL+asset, nil); code != http.StatusOK {
			t.Errorf("%s: %d", asset, code)
		}
	}
}

// /events sends the state at once and again on every update.
func TestServerEvents(t *testing.T) {
	f := NewFeed("x")
	f.Begin("dumbbell", loadPlan(t, "dumbbell"))
	srv := httptest.NewServer(NewServer(f, Options{MinInterval: time.Millisecond}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/events", nil)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if ct := r.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(nil, 1<<20)
	next := func() State {
		t.Helper()
		ev := ""
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "event: ") {
				ev = line[7:]
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok && ev == "state" {
				var st State
				if err := json.Unmarshal([]byte(d), &st); err != nil {
					t.Fatal(err)
				}
				return st
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return State{}
	}
	first := next()
	f.Decide(expect.Result{Name: "fair", Pass: true})
	second := next()
	if second.Version <= first.Version || len(second.Verdicts) != 1 || second.Verdicts[0].Label != "fair" {
		t.Fatalf("second event %+v after %+v", second, first)
	}
	if second.PlanGen != first.PlanGen {
		t.Fatal("plan generation changed without a new plan")
	}
	f.Begin("other", loadPlan(t, "parking-lot"))
	if third := next(); third.PlanGen == second.PlanGen {
		t.Fatal("a new plan did not change the plan generation")
	}
}

// The server listens on loopback only.
func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:80", "nonsense"} {
		if ln, err := Listen(addr); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) accepted", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := Listen(addr)
		if err != nil {
			t.Fatalf("Listen(%q): %v", addr, err)
		}
		ln.Close()
	}
}

// Serve stops when its context is cancelled, also with a stream open.
func TestServeStops(t *testing.T) {
	f := NewFeed("x")
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(f, Options{}).ServeListener(ctx, ln) }()
	r, err := http.Get("http://" + ln.Addr().String() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
}
