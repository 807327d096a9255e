package operator

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestJoinEndedByItsContextDeletesTheLeaseItCreated: the member Lease's
// create reaches the API server, but the context of Run ends before the
// answer. join gives up, and the Lease it created must not stay behind:
// the other replicas' assigner would count a member that is gone, and
// give it objects, until the Lease expired. It is deleted on the way out.
func TestJoinEndedByItsContextDeletesTheLeaseItCreated(t *testing.T) {
	o, err := New(Config{RESTConfig: restConfig(), Name: "op", Registry: prometheus.NewRegistry(),
		Sharding: &Sharding{Resources: []schema.GroupVersionResource{things}, Ring: "r", Identity: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	s := o.shard
	cs := fake.NewClientset()
	leases := coordinationv1.SchemeGroupVersion.WithResource("leases")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs.PrependReactor("create", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		obj := action.(k8stesting.CreateAction).GetObject()
		if err := cs.Tracker().Create(leases, obj, action.GetNamespace()); err != nil {
			return true, nil, err
		}
		cancel() // the context ends while the answer is on its way
		return true, nil, context.Canceled
	})
	s.kube = cs
	done := make(chan error, 1)
	go func() { done <- s.join(ctx) }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("join did not return within a minute of its context's end")
	}
	if err == nil {
		t.Fatal("join() = nil after its context ended, want its error")
	}
	if _, err := cs.Tracker().Get(leases, s.namespace, s.leaseName); !apierrors.IsNotFound(err) {
		t.Fatalf("member Lease %s/%s after a join ended by its context: %v; want it deleted (not found)", s.namespace, s.leaseName, err)
	}
}
