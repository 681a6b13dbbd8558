package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"reef/emulator/plan"
	"reef/units"
)

//go:embed static
var static embed.FS

var page = template.Must(template.ParseFS(static, "static/index.html"))

// DefaultAddr is where the dashboard listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8080"

// Options tune a Server.
type Options struct {
	// MinInterval is the shortest time between two updates sent to one page (default
	// 250 ms): a fast run is shown at that pace, not at its own.
	MinInterval time.Duration
	// Log receives the server's events (default slog.Default()).
	Log *slog.Logger
}

// Server serves the page, its JSON API, the update stream and /metrics for one Source.
//
//	GET /                       the page
//	GET /api/topology           the graph (Topology)
//	GET /api/state              the latest State (a finished run's over its measurement window)
//	GET /api/state?at=NS        the State as of emulated time NS (the samples up to it)
//	GET /api/state?view=window  the State over the measurement window
//	GET /api/series?flow=I&from=K, ?port=I&from=K   a flow's or port's samples from K (Series)
//	GET /events                 server-sent events: "state" with a State on every update
//	GET /metrics                Prometheus metrics (Collector)
type Server struct {
	src Source
	opt Options
	mux *http.ServeMux

	mu       sync.Mutex
	lastPlan *plan.Plan
	planGen  uint64
	cacheVer uint64
	cacheOK  bool
	cache    []byte
}

// NewServer returns a server for src.
func NewServer(src Source, o Options) *Server {
	if o.MinInterval <= 0 {
		o.MinInterval = 250 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	s := &Server{src: src, opt: o, mux: http.NewServeMux()}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(src))
	sub, _ := fs.Sub(static, "static") // static is embedded: cannot fail
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(sub)))
	s.mux.HandleFunc("GET /api/topology", s.topology)
	s.mux.HandleFunc("GET /api/state", s.state)
	s.mux.HandleFunc("GET /api/series", s.series)
	s.mux.HandleFunc("GET /events", s.events)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Listen opens a listener on addr, which must be a loopback address ("127.0.0.1:8080",
// "[::1]:0", "localhost:8080"): the dashboard never listens on a real network.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard: address %q: %w", addr, err)
	}
	if host == "localhost" {
		addr = net.JoinHostPort("127.0.0.1", addr[len(host)+1:])
	} else if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("dashboard: address %q: want a loopback address (127.0.0.1 or ::1)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	return ln, nil
}

// Serve serves src on addr (a loopback address, see Listen) until ctx is cancelled.
func Serve(ctx context.Context, addr string, src Source, o Options) error {
	ln, err := Listen(addr)
	if err != nil {
		return err
	}
	return NewServer(src, o).ServeListener(ctx, ln)
}

// ServeListener serves on ln until ctx is cancelled, then closes it. A Source that is a
// Runner runs for as long.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r, ok := s.src.(Runner); ok {
		go r.Run(ctx.Done())
	}
	hs := &http.Server{Handler: s, BaseContext: func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 2*time.Second)
		defer c()
		_ = hs.Shutdown(sctx)
	}()
	s.opt.Log.Info("dashboard: serving", "url", "http://"+ln.Addr().String()+"/")
	err := hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("dashboard: %w", err)
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := page.Execute(w, struct{ Title string }{s.src.Snapshot().Title}); err != nil {
		s.opt.Log.Debug("dashboard: page", "err", err)
	}
}

func (s *Server) topology(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, topologyOf(s.src.Snapshot()))
}

// stateJSON encodes snap's State once per version, whoever asks.
func (s *Server) stateJSON(snap *Snapshot) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cacheOK && s.cacheVer == snap.Version && s.lastPlan == snap.Plan {
		return s.cache
	}
	if snap.Plan != s.lastPlan {
		s.lastPlan = snap.Plan
		s.planGen++
	}
	b, err := json.Marshal(stateOf(snap, s.planGen))
	if err != nil {
		b = []byte(`{}`) // plain data: cannot fail
	}
	s.cache, s.cacheVer, s.cacheOK = b, snap.Version, true
	return b
}

func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	snap := s.src.Snapshot()
	switch {
	case q.Get("at") != "":
		at, err := strconv.ParseInt(q.Get("at"), 10, 64)
		if err != nil || at < 0 {
			http.Error(w, fmt.Sprintf("at=%q: want a time in ns, 0 or more", q.Get("at")), http.StatusBadRequest)
			return
		}
		writeJSON(w, s.stateIn(snap, view{to: units.Time(at)}))
	case q.Get("view") == "window":
		if snap.Window[1] <= snap.Window[0] {
			http.Error(w, "no measurement window is known (yet)", http.StatusNotFound)
			return
		}
		writeJSON(w, s.stateIn(snap, view{window: true, from: snap.Window[0], to: snap.Window[1]}))
	case q.Get("view") != "" && q.Get("view") != "latest":
		http.Error(w, fmt.Sprintf("view=%q: want window or latest", q.Get("view")), http.StatusBadRequest)
	case q.Get("view") == "latest":
		writeJSON(w, s.stateIn(snap, latest))
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.stateJSON(snap))
	}
}

// stateIn is snap's State in view v (not cached: the page asks for these one by one,
// as its user moves through the run).
func (s *Server) stateIn(snap *Snapshot, v view) *State {
	s.mu.Lock()
	gen := s.planGen
	s.mu.Unlock()
	return stateIn(snap, gen, v)
}

func (s *Server) series(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, _ := strconv.Atoi(q.Get("from"))
	snap := s.src.Snapshot()
	if snap.Run == nil {
		http.Error(w, "no samples yet", http.StatusNotFound)
		return
	}
	if v := q.Get("flow"); v != "" {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i >= len(snap.Run.Flows) {
			http.Error(w, fmt.Sprintf("no flow %q", v), http.StatusNotFound)
			return
		}
		writeJSON(w, flowSeries(&snap.Run.Flows[i], from))
		return
	}
	if v := q.Get("port"); v != "" {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i >= len(snap.Run.Ports) {
			http.Error(w, fmt.Sprintf("no port %q", v), http.StatusNotFound)
			return
		}
		writeJSON(w, portSeries(&snap.Run.Ports[i], from))
		return
	}
	http.Error(w, "want ?flow=I or ?port=I", http.StatusBadRequest)
}

// events streams a "state" event whenever the source changes, at most every
// MinInterval, with a comment every 15 s to keep idle connections open.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	ctx := r.Context()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	sent, first := uint64(0), true
	for {
		ch := s.src.Changed()
		snap := s.src.Snapshot()
		if first || snap.Version != sent {
			first, sent = false, snap.Version
			if _, err := fmt.Fprintf(w, "event: state\ndata: %s\n\n", s.stateJSON(snap)); err != nil {
				return
			}
			fl.Flush()
		}
		select {
		case <-ctx.Done():
			return
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			fl.Flush()
			continue
		case <-ch:
		}
		t := time.NewTimer(s.opt.MinInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
