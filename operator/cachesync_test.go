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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/framework"
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

// TestRunAndPlanBoundTheScopeCheckByCacheSyncTimeout: the discovery that
// checks the scope of an informer with a Namespace is part of the wait
// that CacheSyncTimeout bounds. Against an API server that does not
// answer, Run and Plan waited in that discovery until their context ended
// (and Run then returned nil) instead of failing after CacheSyncTimeout as
// they do when the informers' lists do not answer.
func TestRunAndPlanBoundTheScopeCheckByCacheSyncTimeout(t *testing.T) {
	verifyNoLeaks(t)
	newOperator := func(t *testing.T) (*Operator, *framework.Framework) {
		t.Helper()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // never answers
		}))
		t.Cleanup(srv.Close)
		o, err := New(Config{Name: "silent", CacheSyncTimeout: 300 * time.Millisecond, RESTConfig: &rest.Config{Host: srv.URL}, Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.Informer(informer.Config{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "demo"}); err != nil {
			t.Fatal(err)
		}
		f, err := o.NewFramework(thingsConfig(t, o))
		if err != nil {
			t.Fatal(err)
		}
		return o, f
	}
	check := func(t *testing.T, what string, ctx context.Context, err error) {
		t.Helper()
		if ctx.Err() != nil {
			t.Fatalf("%s returned only when its context ended (%v), not after CacheSyncTimeout", what, err)
		}
		if !errors.Is(err, informer.ErrNotSynced) || !strings.Contains(err.Error(), "CacheSyncTimeout (300ms)") {
			t.Fatalf("%s = %v, want an error matching informer.ErrNotSynced naming CacheSyncTimeout", what, err)
		}
	}
	t.Run("Run", func(t *testing.T) {
		o, _ := newOperator(t)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		err := o.Run(ctx)
		check(t, "Run()", ctx, err)
	})
	t.Run("Plan", func(t *testing.T) {
		o, f := newOperator(t)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		_, err := o.Plan(ctx, PlanConfig{Framework: f})
		check(t, "Plan()", ctx, err)
	})
}
