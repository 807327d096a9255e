package framework

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/operatorkit/operatorkit/informer/informertest"
)

// TestDisableFinalizersWithoutClientAndALeftoverFinalizer: an operator that
// ran with finalizers and now runs with DisableFinalizers and no Client
// (New allows it) finds its finalizer on an object in deletion. Its delete
// chain runs; with no client to remove the finalizer the reconciliation must
// not panic on a nil client (and be retried, the delete chain with it, for
// ever): it ends with a permanent error naming the finalizer.
func TestDisableFinalizersWithoutClientAndALeftoverFinalizer(t *testing.T) {
	obj, _ := deletingThing("a")
	del := &deleteFunc{name: "cleaner"}
	reg := prometheus.NewRegistry()
	f, err := New(Config{Name: "op", Informer: informertest.New(obj), ResourceRouter: testRouter(t, nil, del),
		DisableFinalizers: true, Registerer: reg, BackOffFactory: fastBackOff})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "a reconciliation of a", func() bool { return len(f.Traces("ns/a")) > 0 })
	if n := testutil.ToFloat64(f.metrics.panics); n != 0 {
		t.Errorf("panics_total = %v, want 0", n)
	}
	first := f.Traces("ns/a")[0]
	if first.Result != ResultPermanent || !strings.Contains(first.Error, FinalizerPrefix+"op") {
		t.Errorf("result = %q (error %q), want %q naming the finalizer", first.Result, first.Error, ResultPermanent)
	}
}
