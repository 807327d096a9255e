// Package cli holds what the example's commands share: the go-kit logger
// with a level flag, the kubeconfig resolution, the start-up checks that
// turn a bad kubeconfig or a missing permission into one clear line, and
// the HTTP server for /metrics, /healthz and the debug pages.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/operatorkit/operatorkit/framework"
)

// NewLogger returns a logfmt logger on w with a timestamp, the caller and a
// level filter: lvl is debug, info, warn or error.
func NewLogger(w io.Writer, lvl string) (log.Logger, error) {
	var opt level.Option
	switch lvl {
	case "debug":
		opt = level.AllowDebug()
	case "info":
		opt = level.AllowInfo()
	case "warn":
		opt = level.AllowWarn()
	case "error":
		opt = level.AllowError()
	default:
		return nil, fmt.Errorf("invalid value %q for flag -log-level: want debug, info, warn or error", lvl)
	}
	logger := log.NewLogfmtLogger(log.NewSyncWriter(w))
	logger = level.NewFilter(logger, opt)
	return log.With(logger, "ts", log.DefaultTimestampUTC, "caller", log.DefaultCaller), nil
}

// RESTConfig resolves the cluster to talk to: the kubeconfig file given
// (the --kubeconfig flag), else the KUBECONFIG variable, else the in-cluster
// configuration of a pod, else ~/.kube/config. The error says which source
// failed and why, on one line.
func RESTConfig(kubeconfig string) (*rest.Config, string, error) {
	load := func(path string) (*rest.Config, string, error) {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
		if path == "" {
			rules = clientcmd.NewDefaultClientConfigLoadingRules()
		}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, "", fmt.Errorf("cannot load kubeconfig %s: %s", describe(path), oneLine(err))
		}
		return cfg, describe(path), nil
	}
	switch {
	case kubeconfig != "":
		return load(kubeconfig)
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		return load("")
	}
	if cfg, err := rest.InClusterConfig(); err == nil {
		return cfg, "in-cluster configuration", nil
	} else if !errors.Is(err, rest.ErrNotInCluster) {
		return nil, "", fmt.Errorf("cannot use the in-cluster configuration: %s", oneLine(err))
	}
	home := clientcmd.RecommendedHomeFile
	if _, err := os.Stat(home); err != nil {
		return nil, "", fmt.Errorf("no cluster configured: pass --kubeconfig, set KUBECONFIG, or run in a pod (and %s does not exist)", home)
	}
	return load(home)
}

func describe(path string) string {
	if path == "" {
		return "from $" + clientcmd.RecommendedConfigPathEnvVar + " (" + os.Getenv(clientcmd.RecommendedConfigPathEnvVar) + ")"
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

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
