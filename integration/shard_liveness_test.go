//go:build linux

package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	operatorpkg "github.com/operatorkit/operatorkit/operator"
)

// leaseWatchStall holds back the events of the Lease watches made through
// the configs it wraps while it is stalled: a watch that lags (an
// overloaded API server's watch cache, a connection that hangs) delivers
// nothing, and then everything it held.
type leaseWatchStall struct {
	mu      sync.Mutex
	stalled bool
	resume  chan struct{} // closed by unstall
}

func newLeaseWatchStall() *leaseWatchStall {
	return &leaseWatchStall{resume: make(chan struct{})}
}

func (s *leaseWatchStall) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err == nil && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/leases") && req.URL.Query().Get("watch") == "true" {
				resp.Body = &stalledBody{ReadCloser: resp.Body, s: s, closed: make(chan struct{})}
			}
			return resp, err
		})
	})
	return out
}

func (s *leaseWatchStall) stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled, s.resume = true, make(chan struct{})
}

func (s *leaseWatchStall) unstall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled {
		s.stalled = false
		close(s.resume)
	}
}

// wait returns once the stall is over or done is closed.
func (s *leaseWatchStall) wait(done <-chan struct{}) {
	s.mu.Lock()
	stalled, resume := s.stalled, s.resume
	s.mu.Unlock()
	if !stalled {
		return
	}
	select {
	case <-resume:
	case <-done:
	}
}

// stalledBody is a watch stream whose data is held back while its stall
// lasts.
type stalledBody struct {
	io.ReadCloser
	s         *leaseWatchStall
	closeOnce sync.Once
	closed    chan struct{}
}

func (b *stalledBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.s.wait(b.closed)
	return n, err
}

func (b *stalledBody) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return b.ReadCloser.Close()
}

// TestShardingLaggingLeaseWatchMovesNothing: the assigner's watch of the
// member Leases stops delivering events (it lags) while the other replica
// renews its member Lease as usual. That replica is alive and reconciling:
// the assigner must not take its Lease for expired and relabel its objects
// under it (two replicas would reconcile them at once). It must read the
// Lease from the API server before it moves anything.
func TestShardingLaggingLeaseWatchMovesNothing(t *testing.T) {
	t.Parallel() // a namespace and Leases of its own
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	// shardConfig's timings: shorter ones starve the replicas out of the
	// ring on a machine busy with the other tests (both lost their member
	// Leases in a CI run with a 4 s Lease).
	const lease = shardLease
	dones := map[string]<-chan error{}
	replica := func(id string, cfg *rest.Config) {
		config := shardConfig(cfg, ns, id)
		op, err := operatorpkg.New(config)
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Add(operatorFramework(t, op, ns, "widgets-lag", newOwnedConfigMapOps("lag", op.OwnWrites()))); err != nil {
			t.Fatal(err)
		}
		stop, done := runOperator(op)
		t.Cleanup(func() {
			if err := stop(); err != nil {
				t.Errorf("replica %s: Run() = %v", id, err)
			}
		})
		dones[id] = done
	}
	stall := newLeaseWatchStall()
	t.Cleanup(stall.unstall)
	// a starts first and alone: it becomes the assigner.
	replica("a", stall.wrap(env.Config()))
	leases := kubeClient(t).CoordinationV1().Leases(ns)
	poll(t, "a to lead", func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, shardRing, metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && strings.HasPrefix(*l.Spec.HolderIdentity, "a_"), nil
	})
	replica("b", env.Config())
	const n = 20
	for i := range n {
		createWidget(t, newWidget(ns, "w"+string(rune('a'+i)), "", map[string]string{"k": "v"}))
	}
	owners := func(ctx context.Context) (map[string]string, error) {
		list, err := widgetClient(t, ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, w := range list.Items {
			out[w.GetName()] = w.GetLabels()[shardLabel]
		}
		return out, nil
	}
	var before map[string]string
	poll(t, "every widget assigned, b owning some", func(ctx context.Context) (bool, error) {
		o, err := owners(ctx)
		if err != nil || len(o) != n {
			return false, nil
		}
		ofB := 0
		for _, owner := range o {
			switch owner {
			case "a":
			case "b":
				ofB++
			default:
				return false, nil
			}
		}
		before = o
		return ofB > 0, nil
	})

	stall.stall()
	stalled := time.Now()
	// b renews its Lease for 1.5 lease durations, which a's assigner does
	// not see; then a widget is created, and must be assigned all the
	// same: both replicas are alive.
	renewedFor := func(d time.Duration) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			l, err := leases.Get(ctx, shardRing+"-b", metav1.GetOptions{})
			return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.Sub(stalled) > d, nil
		}
	}
	poll(t, "b to renew its member Lease for 1.5 lease durations", renewedFor(3*lease/2))
	createWidget(t, newWidget(ns, "late", "", map[string]string{"k": "v"}))
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 3*lease, true, func(ctx context.Context) (bool, error) {
		w, err := widgetClient(t, ns).Get(ctx, "late", metav1.GetOptions{})
		return err == nil && (w.GetLabels()[shardLabel] == "a" || w.GetLabels()[shardLabel] == "b"), nil
	}); err != nil {
		t.Errorf("a widget created while the assigner's Lease watch lagged was not assigned within %s: the assigner took its live members for dead", 3*lease)
	}
	after, err := owners(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, owner := range before {
		if owner == "b" && after[name] != "b" {
			t.Errorf("widget %s of b, alive and renewing its Lease, was relabelled %q while the assigner's Lease watch lagged", name, after[name])
		}
	}
	// The lag ends: the watch delivers what it held, in order.
	stall.unstall()
	poll(t, "the late widget to be assigned", func(ctx context.Context) (bool, error) {
		w, err := widgetClient(t, ns).Get(ctx, "late", metav1.GetOptions{})
		return err == nil && w.GetLabels()[shardLabel] != "", nil
	})
	poll(t, "b to renew its member Lease for 1 lease duration more", renewedFor(time.Since(stalled)+lease))
	after, err = owners(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, owner := range before {
		if owner == "b" && after[name] != "b" {
			t.Errorf("widget %s of b, alive and renewing its Lease, was relabelled %q after the assigner's Lease watch lagged", name, after[name])
		}
	}
	for id, done := range dones {
		select {
		case err := <-done:
			t.Errorf("replica %s: Run() = %v while the test ran", id, err)
		default:
		}
	}
}

// TestShardingDeletesTheLeaseOfADeadReplica: a replica that died (killed,
// its node lost) leaves its member Lease behind, and with the default
// identities (the pod name and a random suffix) no replica ever renews it
// again: the assigner moves its objects and deletes the Lease, so that
// Leases do not pile up in the namespace with every crash.
func TestShardingDeletesTheLeaseOfADeadReplica(t *testing.T) {
	t.Parallel() // a namespace and Leases of its own
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	leases := kubeClient(t).CoordinationV1().Leases(ns)
	// The Lease a replica "gone" left when it died an hour ago, and its
	// widget.
	long := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	_, err := leases.Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: shardRing + "-gone", Labels: map[string]string{operatorpkg.RingLabel: shardRing},
			Annotations: map[string]string{operatorpkg.InstanceAnnotation: "dead"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("gone"), LeaseDurationSeconds: ptr(int32(10)), AcquireTime: &long, RenewTime: &long},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := newWidget(ns, "orphan", "", map[string]string{"k": "v"})
	w.SetLabels(map[string]string{shardLabel: "gone"})
	createWidget(t, w)

	op, err := operatorpkg.New(shardConfig(env.Config(), ns, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Add(operatorFramework(t, op, ns, "widgets-dead", newOwnedConfigMapOps("dead", op.OwnWrites()))); err != nil {
		t.Fatal(err)
	}
	stop, _ := runOperator(op)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run() = %v", err)
		}
	})
	poll(t, "the dead replica's widget to move to a", func(ctx context.Context) (bool, error) {
		w, err := widgetClient(t, ns).Get(ctx, "orphan", metav1.GetOptions{})
		return err == nil && w.GetLabels()[shardLabel] == "a", nil
	})
	// The assigner deletes it when it finds it dead, before it moves the
	// widget; a few renew periods are plenty.
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*shardRetry, true, func(ctx context.Context) (bool, error) {
		_, err := leases.Get(ctx, shardRing+"-gone", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Errorf("the member Lease of the dead replica is still there %s after its widget moved", 20*shardRetry)
	}
	if _, err := leases.Get(t.Context(), shardRing+"-a", metav1.GetOptions{}); err != nil {
		t.Errorf("the live replica's member Lease: %v", err)
	}
}
