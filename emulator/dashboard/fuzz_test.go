package dashboard

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"reef/emulator/plan"
	"reef/emulator/results"
)

// Whatever a results directory's results.json and plan.json hold, once decoded the page,
// the API and the metrics show it without panicking: links naming
// unknown nodes, ports on no link, samples out of order, invalid UTF-8 names.
func FuzzRunDir(f *testing.F) {
	f.Add([]byte(`{"flows":[{"name":"a","samples":[{"t":"1us","acked":"10"},{"t":"2us","acked":"5"}]}],"ports":[{"switch":"s1","port":3,"rate":"1Gbps","samples":[{"t":"0ns"},{"t":"0ns","tx_bytes":9}]}]}`),
		[]byte(`{"hosts":[{"config":{"name":"h1"},"link":0}],"switches":[{"config":{"name":"s1","ports":[{"name":"p1"}]}}],"links":[{"A":{"node":"h1","is_host":true,"port":-1},"B":{"node":"s1","port":0},"rate":"1Gbps","buffer":"100KB"}]}`))
	f.Add([]byte(`{"flows":[{"name":"\xff","group":"\xfe"}],"ports":[{"switch":"s9","port":-1}]}`), []byte(`{"links":[{"A":{"node":"x"},"B":{"node":"x"}}]}`))
	f.Add([]byte(`{}`), []byte(`{`))
	f.Fuzz(func(t *testing.T, resultsJSON, planJSON []byte) {
		var run results.Run
		if json.Unmarshal(resultsJSON, &run) != nil {
			return
		}
		rd := &RunDir{snap: Snapshot{Title: "fuzz", Run: &run}}
		var p plan.Plan
		if json.Unmarshal(planJSON, &p) == nil {
			rd.snap.Plan = &p
		}
		srv := NewServer(rd, Options{})
		for _, u := range []string{"/api/topology", "/api/state", "/api/series?flow=0", "/api/series?port=0&from=-5",
			"/api/series?flow=0&from=99999", "/metrics"} {
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, u, nil))
			if w.Code >= 500 {
				t.Fatalf("%s: %d %s", u, w.Code, w.Body)
			}
		}
		_ = testutil.CollectAndCount(NewCollector(rd)) // panics on a bad metric
	})
}
