package operator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/router"
)

// stuckOps: GetCurrentState blocks, ignoring its context, until release.
type stuckOps struct {
	changeOps
	entered chan struct{}
	release chan struct{}
}

func (b stuckOps) GetCurrentState(context.Context, any) (any, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return nil, nil
}

// TestFenceStaysArmedPastShutdownTimeout: a clean stop whose reconciliation
// runs past ShutdownTimeout returns, and the caller goes on holding the
// Lease until the reconciliation ends; if the Lease is lost meanwhile, the
// fence must still close (it was disarmed when runFrameworks returned).
func TestFenceStaysArmedPastShutdownTimeout(t *testing.T) {
	cfg, _, _ := apiServer(t, "ns/a")
	o, err := New(Config{RESTConfig: cfg, Name: "fence", Registry: prometheus.NewRegistry(), ShutdownTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ops := stuckOps{entered: make(chan struct{}, 1), release: make(chan struct{})}
	released := false
	defer func() {
		if !released {
			close(ops.release)
		}
	}()
	config := stuckConfig(t, o, ops)
	f, err := o.NewFramework(config)
	if err != nil {
		t.Fatal(err)
	}
	infCtx, stopInf := context.WithCancel(context.Background())
	defer stopInf()
	go o.order[0].inf.Run(infCtx)
	if err := o.order[0].inf.WaitForCacheSync(t.Context()); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	lost, loseLease := context.WithCancel(context.Background())
	defer loseLease()
	type result struct {
		err      error
		finished <-chan struct{}
	}
	out := make(chan result, 1)
	go func() {
		err, fin := o.runFrameworks(ctx, []*framework.Framework{f}, lost, "test lease", nil)
		out <- result{err, fin}
	}()
	select {
	case <-ops.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the reconciliation did not start within 30 s")
	}
	cancel() // a clean stop; the reconciliation ignores it
	res := <-out
	if res.err == nil {
		t.Fatal("runFrameworks past ShutdownTimeout returned no error")
	}
	loseLease() // lost while the caller waits for finished
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return o.fence.err() != nil, nil
	}); err != nil {
		t.Fatal("the Lease was lost while a reconciliation still ran, and the fence stayed open")
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "test.operatorkit.io/v1", "kind": "Thing", "metadata": map[string]any{"name": "x", "namespace": "ns"}}}
	if _, err := o.Dynamic().Resource(things).Namespace("ns").Create(context.Background(), obj, metav1.CreateOptions{}); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("write after the loss: %v, want ErrLeaseLost", err)
	}
	close(ops.release)
	released = true
	select {
	case <-res.finished:
	case <-time.After(30 * time.Second):
		t.Fatal("finished not closed within 30 s of the reconciliation's end")
	}
}

// stuckConfig returns thingsConfig(t, o) without finalizers, with one
// resource set, v1 (things labelled v=1), of a crud resource over ops.
func stuckConfig(t *testing.T, o *Operator, ops crud.Ops) framework.Config {
	t.Helper()
	config := thingsConfig(t, o)
	r, err := crud.New(crud.Config{Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: router.LabelIs("v", "1", false), Resources: []resource.Interface{r}})
	if err != nil {
		t.Fatal(err)
	}
	if config.ResourceRouter, err = router.New(router.Config{ResourceSets: []*router.ResourceSet{set}}); err != nil {
		t.Fatal(err)
	}
	config.DisableFinalizers = true
	return config
}
