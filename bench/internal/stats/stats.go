// Package stats is the small protocol between a contender and the driver.
//
// A contender serves it on a loopback HTTP listener and announces the
// listener's address as the first line of its standard output, in the form
// "LISTEN 127.0.0.1:PORT". The endpoints are:
//
//	GET  /readyz       200 once caches are synced and workers run, 503 before
//	GET  /stats        the current [Stats] as JSON
//	POST /enqueue-all  enqueues every cached Item through the contender's
//	                   own framework API and answers the number enqueued
//	GET  /heap         a heap profile of the live heap (after a collection)
//
// Process figures (CPU time, RSS) are not part of it: the driver reads them
// from /proc/<pid>.
package stats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/operatorkit/operatorkit/requestcount"
)

// Stats is what a contender reports about itself.
type Stats struct {
	// Reconciles counts the reconciliations its workers ran (one per key
	// taken from the work queue and handed to the reconcile code).
	Reconciles int64 `json:"reconciles"`
	// Requests counts the requests it sent to the API server.
	Requests requestcount.Snapshot `json:"requests"`
	// CPUSeconds is the process's user plus system CPU time from
	// getrusage(RUSAGE_SELF), which has microsecond resolution where
	// /proc/<pid>/stat counts 10 ms clock ticks.
	CPUSeconds float64 `json:"cpuSeconds"`
}

// Contender is what a contender plugs into a [Server].
type Contender interface {
	// Ready reports whether caches are synced and workers run.
	Ready() bool
	// Reconciles returns the number of reconciliations run so far.
	Reconciles() int64
	// EnqueueAll enqueues every cached Item and returns how many.
	EnqueueAll() int
}

// Server serves the protocol for one contender.
type Server struct {
	counter *requestcount.Counter
	c       atomic.Pointer[Contender]
	srv     *http.Server
	ln      net.Listener
}

// Listen opens a loopback listener on addr ("127.0.0.1:0" for any port) for
// a contender whose requests counter counts. The contender itself is set
// later with [Server.SetContender]; until then /readyz answers 503.
func Listen(addr string, counter *requestcount.Counter) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := &Server{counter: counter, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /stats", s.stats)
	mux.HandleFunc("POST /enqueue-all", s.enqueueAll)
	mux.HandleFunc("GET /heap", heap)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return s, nil
}

// Mux returns the server's handler, to add debug endpoints to it.
func (s *Server) Mux() *http.ServeMux { return s.srv.Handler.(*http.ServeMux) }

// Addr returns the listener's address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Announce writes the "LISTEN addr" line to w (the contender's stdout).
func (s *Server) Announce(w io.Writer) error {
	_, err := fmt.Fprintf(w, "LISTEN %s\n", s.Addr())
	return err
}

// SetContender plugs c in.
func (s *Server) SetContender(c Contender) { s.c.Store(&c) }

// Serve serves until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(shutdownCtx)
	}()
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) contender() Contender {
	if p := s.c.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if c := s.contender(); c != nil && c.Ready() {
		_, _ = io.WriteString(w, "ok")
		return
	}
	http.Error(w, "not ready", http.StatusServiceUnavailable)
}

func (s *Server) stats(w http.ResponseWriter, _ *http.Request) {
	st := Stats{}
	if s.counter != nil {
		st.Requests = s.counter.Snapshot()
	}
	if c := s.contender(); c != nil {
		st.Reconciles = c.Reconciles()
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		st.CPUSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

func (s *Server) enqueueAll(w http.ResponseWriter, _ *http.Request) {
	c := s.contender()
	if c == nil || !c.Ready() {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, strconv.Itoa(c.EnqueueAll()))
}

// heap writes a heap profile of the live heap now: after a collection, so
// that it counts no garbage of the cycle before (a profile shows the heap
// as of the last completed collection). benchrun takes it when a run's
// last phase ended, while the contender's caches are still in use.
func heap(w http.ResponseWriter, _ *http.Request) {
	runtime.GC()
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := pprof.Lookup("heap").WriteTo(w, 0); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// Fatalf prints an error to stderr and exits with status 1.
func Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "contender: "+format+"\n", args...)
	os.Exit(1)
}
