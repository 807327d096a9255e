package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/operatorkit/operatorkit/framework"
)

// serverShutdownTimeout is how long serve gives requests in flight once its
// context ended.
const serverShutdownTimeout = 5 * time.Second

// check is one health or readiness check: fn returns nil when it passes, or
// the reason it fails. fn is called for every probe request, possibly
// concurrently, and must be quick.
type check struct {
	name string
	fn   func(*http.Request) error
}

// serverConfig configures the process's HTTP endpoints, opened by listen.
type serverConfig struct {
	// metricsAddress (host:port) serves /metrics, the debug pages, pprof
	// when asked, /healthz and /readyz. "" or "0": off.
	metricsAddress string
	// probeAddress (host:port) serves /healthz and /readyz on a listener
	// of its own. "", "0" or the same string as metricsAddress (even with
	// port 0): the probes are served on the metrics listener only (if that
	// is on).
	probeAddress string
	// metricsField and probeField name the addresses in errors, such as
	// "Config.MetricsAddress" or "--metrics-bind-address". Default to
	// "metrics address" and "health probe address".
	metricsField, probeField string
	// gatherer is served on /metrics. nil: no /metrics.
	gatherer prometheus.Gatherer
	// healthz are the checks of /healthz: the process is alive.
	healthz []check
	// readyz are the checks of /readyz: the process can do its work
	// (caches synced, leading or ready to lead, not shutting down).
	readyz []check
	// debug is served at framework.DebugPath and below. May be nil.
	debug http.Handler
	// pprof serves net/http/pprof under /debug/pprof/ on the metrics
	// listener.
	pprof bool
}

// server is the process's HTTP endpoints: up to two listeners, opened by
// listen and served by serve.
type server struct {
	metrics, probe  *endpoint // nil when off
	shutdownTimeout time.Duration
}

type endpoint struct {
	ln  net.Listener
	srv *http.Server
}

func (e *endpoint) url() string {
	if e == nil {
		return ""
	}
	return "http://" + e.ln.Addr().String()
}

// listen opens the listeners of cfg now, so that a busy or invalid address
// fails at start, with an error of one line naming the field and the
// address (it wraps the listener's error, such as syscall.EADDRINUSE).
// When it fails nothing is left open; when both addresses are off nothing
// is opened and serve only waits.
func listen(cfg serverConfig) (*server, error) {
	if cfg.metricsField == "" {
		cfg.metricsField = "metrics address"
	}
	if cfg.probeField == "" {
		cfg.probeField = "health probe address"
	}
	metricsOn := !addressOff(cfg.metricsAddress)
	probeOn := !addressOff(cfg.probeAddress) && cfg.probeAddress != cfg.metricsAddress
	s := &server{shutdownTimeout: serverShutdownTimeout}
	if metricsOn {
		mux := probeMux(cfg)
		if cfg.gatherer != nil {
			mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.gatherer, promhttp.HandlerOpts{}))
		}
		if cfg.debug != nil {
			mux.Handle(framework.DebugPath, cfg.debug)
			mux.Handle(framework.DebugPath+"/", cfg.debug)
		}
		if cfg.pprof {
			mux.HandleFunc("/debug/pprof/", pprof.Index) // and the profiles by name
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		e, err := openEndpoint(cfg.metricsField, cfg.metricsAddress, mux)
		if err != nil {
			return nil, err
		}
		s.metrics = e
	}
	if probeOn {
		e, err := openEndpoint(cfg.probeField, cfg.probeAddress, probeMux(cfg))
		if err != nil {
			if s.metrics != nil {
				_ = s.metrics.ln.Close()
			}
			return nil, err
		}
		s.probe = e
	}
	return s, nil
}

func openEndpoint(field, addr string, h http.Handler) (*endpoint, error) {
	if err := checkAddress(addr); err != nil {
		return nil, fmt.Errorf("invalid value %q for %s: %s", addr, field, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		var opErr *net.OpError
		if errors.As(err, &opErr) {
			err = opErr.Err // without the repeated address
		}
		return nil, &lineError{msg: fmt.Sprintf("cannot listen on %s for %s", addr, field), err: err}
	}
	return &endpoint{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// probeMux returns a mux serving /healthz and /readyz.
func probeMux(cfg serverConfig) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", checkHandler("healthz", cfg.healthz))
	mux.Handle("GET /readyz", checkHandler("readyz", cfg.readyz))
	return mux
}

// checkHandler answers as the Kubernetes API server's /healthz and /readyz
// do: 200 "ok" when every check passes, else 503 with a line
// "[-]<name> failed: <reason>" per failing check and a last line "<name>
// check failed". With the verbose query parameter it lists every check,
// passing ones as "[+]<name> ok", and ends with "<name> check passed" or
// "<name> check failed".
func checkHandler(name string, checks []check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, verbose := r.URL.Query()["verbose"]
		var body strings.Builder
		failed := false
		for _, c := range checks {
			if err := c.fn(r); err != nil {
				failed = true
				fmt.Fprintf(&body, "[-]%s failed: %s\n", c.name, oneLine(err))
			} else if verbose {
				fmt.Fprintf(&body, "[+]%s ok\n", c.name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case failed:
			fmt.Fprintf(&body, "%s check failed\n", name)
			w.WriteHeader(http.StatusServiceUnavailable)
		case verbose:
			fmt.Fprintf(&body, "%s check passed\n", name)
		default:
			body.WriteString("ok")
		}
		_, _ = io.WriteString(w, body.String())
	})
}

// serve serves the listeners until ctx ends, then shuts them down, giving
// requests in flight up to 5 seconds before their connections are closed.
// It returns nil after a clean stop, and otherwise the error that stopped
// serving (the other listener is then shut down too) or the shutdown's.
// When it returns, its goroutines have ended and the listeners are closed
// (a handler that ignores its request's end may still run). serve is
// called once.
func (s *server) serve(ctx context.Context) error {
	var endpoints []*endpoint
	for _, e := range []*endpoint{s.metrics, s.probe} {
		if e != nil {
			endpoints = append(endpoints, e)
		}
	}
	failed := make(chan error, len(endpoints))
	var wg sync.WaitGroup
	for _, e := range endpoints {
		wg.Go(func() {
			if err := e.srv.Serve(e.ln); !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("serve on %s: %w", e.ln.Addr(), err)
			}
		})
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-failed:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdownTimeout)
	defer cancel()
	shutdownErrs := make([]error, len(endpoints))
	for i, e := range endpoints { // at once, so that every listener closes now
		wg.Go(func() {
			if err := e.srv.Shutdown(sctx); err != nil {
				_ = e.srv.Close() // drop the connections still busy
				shutdownErrs[i] = fmt.Errorf("shut down the server on %s: %w", e.ln.Addr(), err)
			}
		})
	}
	wg.Wait()
	if err != nil {
		return err
	}
	return errors.Join(shutdownErrs...)
}

// metricsURL returns the base URL of the metrics listener, such as
// "http://127.0.0.1:8080", or "" when it is off.
func (s *server) metricsURL() string { return s.metrics.url() }

// probeURL returns the base URL where /healthz and /readyz are served: the
// probe listener's, else the metrics listener's, else "" when both are off.
func (s *server) probeURL() string {
	if s.probe != nil {
		return s.probe.url()
	}
	return s.metrics.url()
}
