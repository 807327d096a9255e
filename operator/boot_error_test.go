package operator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/operatorkit/operatorkit/informer/informertest"
)

// failingInformer is an informertest.Informer whose Run and
// WaitForCacheSync fail with err once fail is closed: the Boot of its
// Framework fails then.
type failingInformer struct {
	*informertest.Informer
	fail chan struct{}
	err  error
}

func (i failingInformer) Run(ctx context.Context) error {
	<-i.fail
	return i.err
}

func (i failingInformer) WaitForCacheSync(ctx context.Context) error {
	<-i.fail
	return i.err
}

// TestRunReportsTheBootErrorPastShutdownTimeout: one Framework fails to
// boot while another's reconciliation, which ignores its context, runs past
// ShutdownTimeout. Run's error says both: the Boot error (the cause of the
// stop) and the reconciliations still running. It said only the latter, and
// the operator's real cause of failure was lost.
func TestRunReportsTheBootErrorPastShutdownTimeout(t *testing.T) {
	cfg, _, _ := apiServer(t, "ns/a")
	o, err := New(Config{RESTConfig: cfg, Name: "booterr", Registry: prometheus.NewRegistry(), ShutdownTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ops := stuckOps{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(ops.release)
	if _, err := o.NewFramework(stuckConfig(t, o, ops)); err != nil {
		t.Fatal(err)
	}
	bootErr := errors.New("watch of things refused")
	inf := failingInformer{Informer: informertest.New(), fail: make(chan struct{}), err: bootErr}
	config := thingsConfig(t, o)
	config.Name, config.Informer = "failing", inf
	if _, err := o.NewFramework(config); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out := make(chan error, 1)
	go func() { out <- o.Run(ctx) }()
	select {
	case <-ops.entered:
	case <-ctx.Done():
		t.Fatal("the reconciliation did not start within a minute")
	}
	close(inf.fail) // the second Framework's Boot fails now
	select {
	case err = <-out:
	case <-ctx.Done():
		t.Fatal("Run did not return within a minute")
	}
	if !errors.Is(err, bootErr) || !strings.Contains(err.Error(), "framework failing") || !strings.Contains(err.Error(), "ShutdownTimeout") {
		t.Fatalf("Run() = %v; want the Boot error of Framework failing (errors.Is) and the reconciliations past ShutdownTimeout", err)
	}
}
