package operator

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/operatorkit/operatorkit/framework"
)

// verifyNoLeaks fails the test if goroutines started during the test are
// left after it and its cleanups (registered later, so run before).
func verifyNoLeaks(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// get requests url without keeping the connection open, and returns the
// status code and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// startServer runs s.serve until the test ends, and fails the test if
// serve does not return nil then.
func startServer(t *testing.T, s *server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve() = %v after its context ended, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("serve() did not return after its context ended")
		}
	})
}

// freeAddr returns an address on 127.0.0.1 with a port that was free a
// moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func testGatherer(t *testing.T) prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "operatorkit_test_things_total", Help: "Things."})
	c.Add(3)
	reg.MustRegister(c)
	return reg
}

var testDebug = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, "debug page "+r.URL.Path)
})

func TestServerRoutes(t *testing.T) {
	type route struct {
		path     string
		wantCode int
		wantBody string // substring
	}
	probeRoutes := []route{
		{path: "/healthz", wantCode: 200, wantBody: "ok"},
		{path: "/readyz", wantCode: 200, wantBody: "ok"},
	}
	notFound := func(paths ...string) []route {
		var rs []route
		for _, p := range paths {
			rs = append(rs, route{path: p, wantCode: 404})
		}
		return rs
	}
	join := func(rss ...[]route) []route {
		var all []route
		for _, rs := range rss {
			all = append(all, rs...)
		}
		return all
	}
	metricsRoutes := []route{
		{path: "/metrics", wantCode: 200, wantBody: "operatorkit_test_things_total 3"},
		{path: framework.DebugPath, wantCode: 200, wantBody: "debug page " + framework.DebugPath},
		{path: framework.DebugPath + "/ns/name", wantCode: 200, wantBody: "debug page " + framework.DebugPath + "/ns/name"},
	}
	pprofRoutes := []route{
		{path: "/debug/pprof/", wantCode: 200, wantBody: "goroutine"},
		{path: "/debug/pprof/cmdline", wantCode: 200},
		{path: "/debug/pprof/goroutine?debug=1", wantCode: 200, wantBody: "goroutine profile"},
	}

	tests := []struct {
		name        string
		config      serverConfig
		wantMetrics []route // nil: metricsURL() == ""
		wantProbe   []route // on probeURL(); nil: probeURL() == ""
		probeShared bool    // probeURL() == metricsURL()
	}{{
		name:        "metrics and probes apart",
		config:      serverConfig{metricsAddress: "127.0.0.1:0", probeAddress: freeAddr(t), debug: testDebug},
		wantMetrics: join(metricsRoutes, probeRoutes, notFound("/debug/pprof/", "/debug/pprof/cmdline", "/")),
		wantProbe:   join(probeRoutes, notFound("/metrics", framework.DebugPath, "/debug/pprof/", "/")),
	}, {
		name:        "pprof when asked",
		config:      serverConfig{metricsAddress: "127.0.0.1:0", probeAddress: freeAddr(t), pprof: true},
		wantMetrics: join(pprofRoutes, probeRoutes, notFound(framework.DebugPath)),
		wantProbe:   join(probeRoutes, notFound("/debug/pprof/", "/metrics")),
	}, {
		name:        "probes on the metrics listener when the probe address is off",
		config:      serverConfig{metricsAddress: "127.0.0.1:0", probeAddress: "0", debug: testDebug},
		wantMetrics: join(metricsRoutes, probeRoutes),
		wantProbe:   probeRoutes,
		probeShared: true,
	}, {
		name:        "probes on the metrics listener when the probe address is empty",
		config:      serverConfig{metricsAddress: "127.0.0.1:0", debug: testDebug},
		wantMetrics: join(metricsRoutes, probeRoutes),
		wantProbe:   probeRoutes,
		probeShared: true,
	}, {
		name:      "probes only",
		config:    serverConfig{metricsAddress: "0", probeAddress: "127.0.0.1:0", debug: testDebug, pprof: true},
		wantProbe: join(probeRoutes, notFound("/metrics", framework.DebugPath, "/debug/pprof/")),
	}, {
		name:        "the same address, even with port 0, shares one listener",
		config:      serverConfig{metricsAddress: "127.0.0.1:0", probeAddress: "127.0.0.1:0", debug: testDebug},
		wantMetrics: join(metricsRoutes, probeRoutes),
		wantProbe:   probeRoutes,
		probeShared: true,
	}, {
		name:   "both off",
		config: serverConfig{metricsAddress: "", probeAddress: "0"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verifyNoLeaks(t)
			tt.config.gatherer = testGatherer(t)
			s, err := listen(tt.config)
			if err != nil {
				t.Fatalf("listen() error = %v", err)
			}
			startServer(t, s)
			check := func(base string, want []route, what string) {
				t.Helper()
				if want == nil {
					if base != "" {
						t.Errorf("%s = %q, want \"\" (off)", what, base)
					}
					return
				}
				if !strings.HasPrefix(base, "http://127.0.0.1:") {
					t.Fatalf("%s = %q, want http://127.0.0.1:<port>", what, base)
				}
				for _, r := range want {
					code, body := get(t, base+r.path)
					if code != r.wantCode || !strings.Contains(body, r.wantBody) {
						t.Errorf("GET %s on %s = %d %q, want %d with %q", r.path, what, code, body, r.wantCode, r.wantBody)
					}
				}
			}
			check(s.metricsURL(), tt.wantMetrics, "metricsURL()")
			check(s.probeURL(), tt.wantProbe, "probeURL()")
			if shared := s.probeURL() == s.metricsURL() && s.metricsURL() != ""; shared != tt.probeShared {
				t.Errorf("probeURL() = %q, metricsURL() = %q; shared = %v, want %v", s.probeURL(), s.metricsURL(), shared, tt.probeShared)
			}
		})
	}
}

func TestServerSameAddress(t *testing.T) {
	verifyNoLeaks(t)
	addr := freeAddr(t)
	// The same address for both: one listener, no "address in use".
	s, err := listen(serverConfig{metricsAddress: addr, probeAddress: addr})
	if err != nil {
		t.Fatalf("listen() error = %v", err)
	}
	startServer(t, s)
	if want := "http://" + addr; s.metricsURL() != want || s.probeURL() != want {
		t.Errorf("metricsURL(), probeURL() = %q, %q, want both %q", s.metricsURL(), s.probeURL(), want)
	}
	if code, _ := get(t, s.probeURL()+"/readyz"); code != 200 {
		t.Errorf("GET /readyz = %d, want 200", code)
	}
}

func TestListenErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyAddr := busy.Addr().String()

	tests := []struct {
		name      string
		config    serverConfig
		wantErr   string // the whole message, or its start when it ends with ": "
		wantErrIs error
	}{{
		name:    "metrics address without port",
		config:  serverConfig{metricsAddress: "localhost", metricsField: "--metrics-bind-address"},
		wantErr: `invalid value "localhost" for --metrics-bind-address: want host:port (missing port in address)`,
	}, {
		name:    "probe address with a bad port",
		config:  serverConfig{metricsAddress: "127.0.0.1:0", probeAddress: "127.0.0.1:x", metricsField: "Config.MetricsAddress", probeField: "Config.HealthProbeAddress"},
		wantErr: `invalid value "127.0.0.1:x" for Config.HealthProbeAddress: want host:port with a port number from 0 to 65535`,
	}, {
		name:    "default field names",
		config:  serverConfig{probeAddress: "nonsense"},
		wantErr: `invalid value "nonsense" for health probe address: want host:port (missing port in address)`,
	}, {
		name:      "busy metrics port",
		config:    serverConfig{metricsAddress: busyAddr, metricsField: "Config.MetricsAddress"},
		wantErr:   "cannot listen on " + busyAddr + " for Config.MetricsAddress: ",
		wantErrIs: syscall.EADDRINUSE,
	}, {
		name:      "busy probe port",
		config:    serverConfig{metricsAddress: "127.0.0.1:0", probeAddress: busyAddr, probeField: "--health-probe-bind-address"},
		wantErr:   "cannot listen on " + busyAddr + " for --health-probe-bind-address: ",
		wantErrIs: syscall.EADDRINUSE,
	}, {
		name:    "host that cannot be bound",
		config:  serverConfig{metricsAddress: "192.0.2.1:0", metricsField: "Config.MetricsAddress"},
		wantErr: "cannot listen on 192.0.2.1:0 for Config.MetricsAddress: ",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := listen(tt.config)
			if err == nil {
				t.Fatalf("listen() = %+v, want error %q", s, tt.wantErr)
			}
			msg := err.Error()
			if strings.HasSuffix(tt.wantErr, ": ") {
				if !strings.HasPrefix(msg, tt.wantErr) || len(msg) == len(tt.wantErr) {
					t.Errorf("listen() error = %q, want %q and a reason", msg, tt.wantErr)
				}
			} else if msg != tt.wantErr {
				t.Errorf("listen() error = %q, want %q", msg, tt.wantErr)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("listen() error has several lines: %q", msg)
			}
			if tt.wantErrIs != nil && !errors.Is(err, tt.wantErrIs) {
				t.Errorf("listen() error = %v, want it to match %v", err, tt.wantErrIs)
			}
		})
	}
}

func TestListenClosesMetricsWhenProbeFails(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	metrics := freeAddr(t)
	if _, err := listen(serverConfig{metricsAddress: metrics, probeAddress: busy.Addr().String()}); err == nil {
		t.Fatal("listen() on a busy probe port succeeded")
	}
	ln, err := net.Listen("tcp", metrics)
	if err != nil {
		t.Fatalf("the metrics listener was left open: %v", err)
	}
	_ = ln.Close()
}

func TestCheckHandler(t *testing.T) {
	pass := check{name: "ping", fn: func(*http.Request) error { return nil }}
	failCaches := check{name: "caches", fn: func(*http.Request) error { return errors.New("cache of pods\nnot synced") }}
	failLease := check{name: "leader-election", fn: func(*http.Request) error { return errors.New("not campaigning") }}
	tests := []struct {
		name     string
		checks   []check
		query    string
		wantCode int
		wantBody string
	}{
		{name: "no checks", wantCode: 200, wantBody: "ok"},
		{name: "passing", checks: []check{pass}, wantCode: 200, wantBody: "ok"},
		{name: "passing verbose", checks: []check{pass, pass}, query: "?verbose", wantCode: 200, wantBody: "[+]ping ok\n[+]ping ok\nreadyz check passed\n"},
		{name: "verbose with a value", checks: []check{pass}, query: "?verbose=1", wantCode: 200, wantBody: "[+]ping ok\nreadyz check passed\n"},
		{name: "one failing", checks: []check{pass, failCaches}, wantCode: 503, wantBody: "[-]caches failed: cache of pods not synced\nreadyz check failed\n"},
		{name: "two failing", checks: []check{failCaches, pass, failLease}, wantCode: 503, wantBody: "[-]caches failed: cache of pods not synced\n[-]leader-election failed: not campaigning\nreadyz check failed\n"},
		{name: "failing verbose", checks: []check{pass, failLease}, query: "?verbose", wantCode: 503, wantBody: "[+]ping ok\n[-]leader-election failed: not campaigning\nreadyz check failed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			checkHandler("readyz", tt.checks).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz"+tt.query, nil))
			if rec.Code != tt.wantCode || rec.Body.String() != tt.wantBody {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type = %q, want text/plain", ct)
			}
		})
	}
}

func TestServerChecksFlip(t *testing.T) {
	verifyNoLeaks(t)
	var synced, alive atomic.Bool
	alive.Store(true)
	s, err := listen(serverConfig{
		metricsAddress: "127.0.0.1:0",
		probeAddress:   freeAddr(t),
		healthz: []check{{name: "ping", fn: func(*http.Request) error {
			if !alive.Load() {
				return errors.New("stuck")
			}
			return nil
		}}},
		readyz: []check{{name: "caches", fn: func(*http.Request) error {
			if !synced.Load() {
				return errors.New("caches not synced yet")
			}
			return nil
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, s)
	steps := []struct {
		name              string
		synced, alive     bool
		wantReady, wantUp int
		wantReadyBody     string
	}{
		{name: "starting", synced: false, alive: true, wantReady: 503, wantUp: 200, wantReadyBody: "[-]caches failed: caches not synced yet\nreadyz check failed\n"},
		{name: "synced", synced: true, alive: true, wantReady: 200, wantUp: 200, wantReadyBody: "ok"},
		{name: "stuck", synced: true, alive: false, wantReady: 200, wantUp: 503, wantReadyBody: "ok"},
		{name: "recovered", synced: true, alive: true, wantReady: 200, wantUp: 200, wantReadyBody: "ok"},
	}
	for _, st := range steps {
		synced.Store(st.synced)
		alive.Store(st.alive)
		for _, base := range []string{s.metricsURL(), s.probeURL()} {
			if code, body := get(t, base+"/readyz"); code != st.wantReady || body != st.wantReadyBody {
				t.Errorf("%s: GET %s/readyz = %d %q, want %d %q", st.name, base, code, body, st.wantReady, st.wantReadyBody)
			}
			if code, _ := get(t, base+"/healthz"); code != st.wantUp {
				t.Errorf("%s: GET %s/healthz = %d, want %d", st.name, base, code, st.wantUp)
			}
		}
	}
}

func TestServeShutdown(t *testing.T) {
	tests := []struct {
		name            string
		shutdownTimeout time.Duration
		release         bool // the request in flight ends on its own
		wantErr         error
	}{
		{name: "request in flight finishes", shutdownTimeout: 5 * time.Second, release: true},
		{name: "request in flight outlasts the timeout", shutdownTimeout: 100 * time.Millisecond, wantErr: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verifyNoLeaks(t)
			entered, release := make(chan struct{}), make(chan struct{})
			s, err := listen(serverConfig{
				metricsAddress: "127.0.0.1:0",
				probeAddress:   freeAddr(t),
				debug: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					close(entered)
					select {
					case <-release:
						_, _ = io.WriteString(w, "done")
					case <-r.Context().Done(): // the connection was closed
					}
				}),
			})
			if err != nil {
				t.Fatal(err)
			}
			s.shutdownTimeout = tt.shutdownTimeout
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- s.serve(ctx) }()

			type response struct {
				code int
				body string
				err  error
			}
			responses := make(chan response, 1)
			go func() {
				client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
				resp, err := client.Get(s.metricsURL() + framework.DebugPath)
				if err != nil {
					responses <- response{err: err}
					return
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				responses <- response{code: resp.StatusCode, body: string(body), err: err}
			}()
			<-entered
			cancel()
			refused := func(when string) {
				t.Helper()
				if c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.probeURL(), "http://"), time.Second); err == nil {
					_ = c.Close()
					t.Errorf("probe listener accepts connections %s", when)
				}
			}
			if tt.release {
				select {
				case err := <-served:
					t.Fatalf("serve() = %v before the request in flight finished", err)
				case <-time.After(200 * time.Millisecond):
				}
				refused("while serve waits for the request in flight")
				close(release)
			}
			select {
			case err := <-served:
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
					t.Errorf("serve() = %v, want %v", err, tt.wantErr)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("serve() did not return")
			}
			refused("after serve returned")
			r := <-responses
			if tt.release && (r.err != nil || r.code != 200 || r.body != "done") {
				t.Errorf("request in flight = %d %q %v, want 200 done", r.code, r.body, r.err)
			}
			if !tt.release && r.err == nil {
				t.Errorf("request in flight = %d %q, want its connection closed", r.code, r.body)
			}
		})
	}
}

func TestServeBothOff(t *testing.T) {
	verifyNoLeaks(t)
	s, err := listen(serverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if s.metricsURL() != "" || s.probeURL() != "" {
		t.Errorf("metricsURL(), probeURL() = %q, %q, want both off", s.metricsURL(), s.probeURL())
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.serve(ctx) }()
	select {
	case err := <-served:
		t.Fatalf("serve() = %v before its context ended", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve() = %v, want nil", err)
	}
}

func TestServeFails(t *testing.T) {
	verifyNoLeaks(t)
	s, err := listen(serverConfig{metricsAddress: "127.0.0.1:0", probeAddress: freeAddr(t)})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.metrics.ln.Close() // Serve fails at once
	done := make(chan error, 1)
	go func() { done <- s.serve(context.Background()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "serve on 127.0.0.1:") || !errors.Is(err, net.ErrClosed) {
			t.Errorf("serve() = %v, want the listener's error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve() did not return when a listener failed")
	}
	// The other listener was shut down too.
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.probeURL(), "http://"), time.Second); err == nil {
		_ = c.Close()
		t.Errorf("probe listener still accepts connections after serve failed")
	}
}
