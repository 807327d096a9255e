package operator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// leaseServer is an API server that serves the thing ns/a (as apiServer)
// and one Lease, kept in memory; with failing set, it refuses the Lease's
// writes.
type leaseServer struct {
	mu      sync.Mutex
	lease   []byte // the Lease as last written; nil before
	ctype   string // its content type
	failing bool
}

func (s *leaseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if strings.Contains(r.URL.Path, "/leases") {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case r.Method == http.MethodGet && s.lease == nil:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", s.ctype)
			_, _ = w.Write(s.lease)
		case s.failing:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500}`)
		default: // POST or PUT
			body, _ := io.ReadAll(r.Body)
			s.lease, s.ctype = body, r.Header.Get("Content-Type")
			w.Header().Set("Content-Type", s.ctype)
			_, _ = w.Write(body)
		}
		return
	}
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/things") {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		return
	}
	item := map[string]any{"apiVersion": "test.operatorkit.io/v1", "kind": "Thing",
		"metadata": map[string]any{"namespace": "ns", "name": "a", "resourceVersion": "1", "labels": map[string]any{"v": "1"}}}
	if r.URL.Query().Get("watch") != "true" {
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "test.operatorkit.io/v1", "kind": "ThingList",
			"metadata": map[string]any{"resourceVersion": "1"}, "items": []any{item}})
		return
	}
	w.WriteHeader(http.StatusOK)
	if r.URL.Query().Get("sendInitialEvents") == "true" { // a streaming list
		enc := json.NewEncoder(w)
		_ = enc.Encode(map[string]any{"type": "ADDED", "object": item})
		_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{"apiVersion": "test.operatorkit.io/v1", "kind": "Thing",
			"metadata": map[string]any{"resourceVersion": "1", "annotations": map[string]any{"k8s.io/initial-events-end": "true"}}}})
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// stuckApplyOps is stuckOps whose update, once released, writes nothing.
type stuckApplyOps struct{ stuckOps }

func (stuckApplyOps) ApplyUpdateChange(context.Context, any, any) error { return nil }

// TestNotReadyWhileShuttingDown: once Run's shutdown began (its context
// ended, or the leader election Lease was lost), /readyz fails with the
// check "shutdown" saying why, while Run still waits for the
// reconciliation in flight; /healthz still answers 200. /readyz answered
// 200 until Run returned: "campaigning" was never cleared.
func TestNotReadyWhileShuttingDown(t *testing.T) {
	for _, tt := range []struct {
		name           string
		leaderElection bool
		loseLease      bool
		want           string
	}{
		{name: "context ended", want: "[-]shutdown failed: stopping: the context of Run ended\n"},
		{name: "leader election, context ended", leaderElection: true, want: "[-]shutdown failed: stopping: the context of Run ended\n"},
		{name: "leader election, Lease lost", leaderElection: true, loseLease: true, want: "[-]shutdown failed: stopping: lost the Lease: the leader election Lease ns/ready\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := &leaseServer{}
			ts := httptest.NewServer(api)
			defer ts.Close()
			o, err := New(Config{RESTConfig: &rest.Config{Host: ts.URL}, Name: "ready", Registry: prometheus.NewRegistry(),
				MetricsAddress: "127.0.0.1:0", ShutdownTimeout: time.Minute,
				LeaderElection: tt.leaderElection, LeaderElectionNamespace: "ns",
				LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ops := stuckApplyOps{stuckOps{entered: make(chan struct{}, 1), release: make(chan struct{})}}
			released := false
			defer func() {
				if !released {
					close(ops.release)
				}
			}()
			config := stuckConfig(t, o, ops)
			if _, err := o.NewFramework(config); err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- o.Run(ctx) }()
			select {
			case <-ops.entered: // leading, reconciling ns/a
			case err := <-done:
				t.Fatalf("Run() = %v before it reconciled", err)
			case <-time.After(30 * time.Second):
				t.Fatal("no reconciliation within 30 s")
			}
			probes := o.srv.Load().probeURL()
			if code, body := get(t, probes+"/readyz"); code != http.StatusOK {
				t.Fatalf("GET /readyz while reconciling = %d %q, want 200", code, body)
			}

			if tt.loseLease {
				api.mu.Lock()
				api.failing = true
				api.mu.Unlock()
			} else {
				cancel()
			}
			var code int
			var body string
			err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				code, body = get(t, probes+"/readyz")
				return code != http.StatusOK, nil
			})
			if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, tt.want) {
				t.Errorf("GET /readyz while Run shuts down = %d %q, want 503 with %q", code, body, tt.want)
			}
			if !tt.loseLease { // a leader that lost its Lease may be unhealthy
				if code, body := get(t, probes+"/healthz"); code != http.StatusOK {
					t.Errorf("GET /healthz while Run shuts down = %d %q, want 200", code, body)
				}
			}
			select {
			case err := <-done:
				t.Fatalf("Run() = %v before the reconciliation in flight ended", err)
			default:
			}
			close(ops.release)
			released = true
			if err := <-done; tt.loseLease != errors.Is(err, ErrLeaseLost) || !tt.loseLease && err != nil {
				t.Errorf("Run() = %v", err)
			}
		})
	}
}
