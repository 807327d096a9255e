package integration

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/router"
)

// stubbornResource ignores the end of its context: its first
// reconciliation blocks until release is closed, then creates the ConfigMap
// <object>-late with context.Background() through kube, and sends the
// error to result.
type stubbornResource struct {
	kube    kubernetes.Interface
	once    sync.Once
	started chan struct{}
	release chan struct{}
	result  chan error
}

func (r *stubbornResource) Name() string { return "stubborn" }

func (r *stubbornResource) EnsureCreated(_ context.Context, obj any) error {
	first := false
	r.once.Do(func() { first = true; close(r.started) })
	if !first {
		return nil
	}
	<-r.release
	w := obj.(*unstructured.Unstructured)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.GetName() + "-late", Namespace: w.GetNamespace()}}
	_, err := r.kube.CoreV1().ConfigMaps(cm.Namespace).Create(context.Background(), cm, metav1.CreateOptions{})
	r.result <- err
	return err
}

func (r *stubbornResource) EnsureDeleted(context.Context, any) error { return nil }

// TestOperatorFencesWritesAfterLeaseLoss: a resource that ignores the end
// of its context still runs when its replica loses the leader election
// Lease, or with sharding its member Lease; its write through the
// Operator's clientset after the loss fails unsent, with an error matching
// ErrLeaseLost, and is counted, so that it cannot write beside the replica
// that took over.
func TestOperatorFencesWritesAfterLeaseLoss(t *testing.T) {
	// Parallel, with the sharding tests' long renew deadline, so that a
	// machine busy with the other tests does not make a replica lose its
	// Lease before the test takes it; nothing here is timed.
	t.Parallel()
	ensureWidgetCRD(t)
	for _, sharded := range []bool{false, true} {
		name := "leader election"
		if sharded {
			name = "sharding"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			registry := prometheus.NewRegistry()
			config := operatorpkg.Config{
				RESTConfig:              env.Config(),
				Name:                    "op-fence",
				Logger:                  log.NewNopLogger(),
				Registry:                registry,
				LeaderElection:          !sharded,
				LeaderElectionNamespace: ns,
				LeaseDuration:           shardLease,
				RenewDeadline:           shardRenew,
				RetryPeriod:             shardRetry,
				ShutdownTimeout:         time.Second,
			}
			lease := "op-fence"
			if sharded {
				config.Sharding = &operatorpkg.Sharding{Resources: []schema.GroupVersionResource{widgetGVR}, Identity: "a"}
				lease = "op-fence-a" // the member Lease: <ring>-<identity>
			}
			testFence(t, config, ns, lease)
		})
	}
}

// newStubbornOperator returns the Operator of config with one Framework,
// named name, whose only resource is a stubbornResource over the widgets of
// ns (without finalizers), and creates the widget w for it to reconcile.
func newStubbornOperator(t *testing.T, config operatorpkg.Config, ns, name string) (*operatorpkg.Operator, *stubbornResource) {
	t.Helper()
	op, err := operatorpkg.New(config)
	if err != nil {
		t.Fatal(err)
	}
	res := &stubbornResource{kube: op.Kubernetes(), started: make(chan struct{}), release: make(chan struct{}), result: make(chan error, 1)}
	inf, err := op.Informer(informer.Config{GVR: widgetGVR, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "", res)}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.New(framework.Config{Name: name, Informer: inf, ResourceRouter: rt, Client: op.Dynamic(), Resource: widgetGVR, Registerer: config.Registry, DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Add(f); err != nil {
		t.Fatal(err)
	}
	createWidget(t, newWidget(ns, "w", "", nil))
	return op, res
}

// testFence runs the operator of config with a stubbornResource over the
// widgets of ns, lets it start reconciling widget w, takes its Lease, and
// checks that its write after the loss is refused.
func testFence(t *testing.T, config operatorpkg.Config, ns, lease string) {
	op, res := newStubbornOperator(t, config, ns, "fence") // w is reconciled as soon as the replica leads
	stop, done := runOperator(op)
	released := false
	t.Cleanup(func() {
		if !released {
			close(res.release)
		}
		_ = stop()
	})
	select {
	case <-res.started:
	case err := <-done:
		t.Fatalf("Run returned before reconciling w: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("w was not reconciled within 60 s")
	}

	stealLease(t, ns, lease)
	select {
	case err := <-done:
		if !errors.Is(err, operatorpkg.ErrLeaseLost) {
			t.Fatalf("Run() = %v, want ErrLeaseLost", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the replica still runs 60 s after its Lease was taken")
	}

	// The resource goes on as if nothing happened.
	close(res.release)
	released = true
	select {
	case err := <-res.result:
		if !errors.Is(err, operatorpkg.ErrLeaseLost) {
			t.Fatalf("the write after the loss returned %v, want an error matching ErrLeaseLost", err)
		}
		t.Logf("the write after the loss: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the resource did not write within 60 s of its release")
	}
	if _, err := kubeClient(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "w-late", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get w-late = %v, want NotFound: the write after the loss reached the API server", err)
	}
	if got := metricSum(t, config.Registry, "operatorkit_operator_refused_writes_total", map[string]string{"operator": config.Name}); got < 1 {
		t.Errorf("operatorkit_operator_refused_writes_total = %v, want at least 1", got)
	}
}
