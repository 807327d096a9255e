package operator

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/informer"
)

// TestRunCacheNeverSyncs: a resource the API server does not serve (a CRD
// not installed) never syncs; Run returns an error naming the informer
// after CacheSyncTimeout, instead of waiting until its context ends and
// then returning nil.
func TestRunCacheNeverSyncs(t *testing.T) {
	o := notServingOperator(t, Config{Name: "nosync", CacheSyncTimeout: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := o.Run(ctx)
	if !errors.Is(err, informer.ErrNotSynced) || !strings.Contains(err.Error(), "CacheSyncTimeout (300ms)") || !strings.Contains(err.Error(), "things") {
		t.Fatalf("Run() = %v, want an error matching informer.ErrNotSynced that names the informer and CacheSyncTimeout", err)
	}
	if ctx.Err() != nil {
		t.Error("Run returned only when its context ended")
	}
}

// TestRunStopsWhenTheHTTPServerFails: a listener that fails while Run runs
// stops the operator with the server's error; it was only logged, and the
// replica ran on without probes or metrics.
func TestRunStopsWhenTheHTTPServerFails(t *testing.T) {
	verifyNoLeaks(t)
	o := notServingOperator(t, Config{Name: "httpfails", MetricsAddress: "127.0.0.1:0", CacheSyncTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return o.srv.Load() != nil, nil
	}); err != nil {
		t.Fatalf("waiting for the HTTP server to listen: %v", err)
	}
	_ = o.srv.Load().metrics.ln.Close()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "operator httpfails: HTTP server stopped: serve on 127.0.0.1:") || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Run() = %v, want the HTTP server's error", err)
	}
	if ctx.Err() != nil {
		t.Error("Run returned only when its context ended")
	}
}

// notServingOperator is an Operator of config, with a Framework of things,
// over an API server that serves nothing (notServingAPIServer).
func notServingOperator(t *testing.T, config Config) *Operator {
	t.Helper()
	config.RESTConfig, config.Registry = &rest.Config{Host: notServingAPIServer(t).URL}, prometheus.NewRegistry()
	o, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.NewFramework(thingsConfig(t, o)); err != nil {
		t.Fatal(err)
	}
	return o
}

// notServingAPIServer is an API server that answers every request with 404:
// nothing is served, so no cache ever syncs.
func notServingAPIServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}
