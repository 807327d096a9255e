// Package cli holds what the demo command needs beyond package operator
// (which has the flags, the logger, the kubeconfig resolution, the
// start-up checks and the operator binary's command line): one-line
// failures, and the demo's HTTP server for /metrics, /healthz and the debug
// pages.
package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/operatorkit/operatorkit/framework"
)

// oneLine flattens an error message to one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// Fail prints "<cmd>: <msg>" on one line to w and returns code, for
// `os.Exit(cli.Fail(...))`.
func Fail(w io.Writer, cmd string, code int, err error) int {
	fmt.Fprintf(w, "%s: %s\n", cmd, oneLine(err))
	return code
}

// Server serves /metrics (from gatherer), /healthz (healthz nil means
// always healthy) and the framework's debug pages (debug may be nil) on a
// listener opened by Listen.
type Server struct {
	ln  net.Listener
	srv *http.Server
	mux *http.ServeMux
}

// Listen opens addr (host:port; port 0 picks a free one), so that a busy or
// invalid address fails at start, as one line.
func Listen(addr string) (*Server, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("invalid value %q for flag -metrics-address: %s", addr, oneLine(err))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %s", addr, oneLine(err))
	}
	mux := http.NewServeMux()
	return &Server{ln: ln, mux: mux, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// URL returns the server's base URL, such as http://127.0.0.1:8080.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Handle adds a handler to the server's mux.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Serve registers /metrics, /healthz and the debug pages and serves until
// ctx ends, then shuts down, giving requests in flight up to 5 seconds.
func (s *Server) Serve(ctx context.Context, gatherer prometheus.Gatherer, healthz func(*http.Request) error, debug http.Handler) error {
	s.mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if healthz != nil {
			if err := healthz(r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	if debug != nil {
		s.mux.Handle(framework.DebugPath, debug)
		s.mux.Handle(framework.DebugPath+"/", debug)
	}
	done := make(chan error, 1)
	go func() { done <- s.srv.Serve(s.ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	<-done
	return err
}
