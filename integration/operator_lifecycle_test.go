package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/framework"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
)

// TestOperatorStopsAsTheLeaseIsAcquired: Run's context ends while the
// replica's create of the leader election Lease is answered, and Run gives
// up campaigning before the elector reports the Lease acquired. The replica
// never led: Run returns nil without booting a Framework (it booted them
// after its context had ended, concurrently with the release of the Lease,
// and could return while the elector's callback still went on booting
// them), and the Lease is released.
func TestOperatorStopsAsTheLeaseIsAcquired(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var intercepted atomic.Bool
	cfg := env.Config()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/namespaces/"+ns+"/leases") {
				return rt.RoundTrip(req)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil || resp.StatusCode != http.StatusCreated {
				return resp, err
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				return nil, err
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			// The Lease is this replica's: Run's context ends now, and
			// Run stops campaigning (the request's context ends) before
			// the elector learns that it acquired the Lease.
			cancel()
			select {
			case <-req.Context().Done():
				intercepted.Store(true)
			case <-time.After(30 * time.Second):
			}
			return resp, nil
		})
	})
	op, err := operatorpkg.New(operatorpkg.Config{
		RESTConfig:              cfg,
		Name:                    "op-acquired",
		Logger:                  log.NewNopLogger(),
		Registry:                prometheus.NewRegistry(),
		LeaderElection:          true,
		LeaderElectionNamespace: ns,
		LeaseDuration:           shardLease,
		RenewDeadline:           shardRenew,
		RetryPeriod:             shardRetry,
	})
	if err != nil {
		t.Fatal(err)
	}
	ops := newOwnedConfigMapOps("acquired", op.OwnWrites())
	f := operatorFramework(t, op, ns, "widgets-acquired", ops)
	if err := op.Add(f); err != nil {
		t.Fatal(err)
	}
	createWidget(t, newWidget(ns, "w", "", map[string]string{"k": "v"}))
	done := make(chan error, 1)
	go func() { done <- op.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run() = %v, want nil", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return within 60 s of its context ending")
	}
	if !intercepted.Load() {
		t.Fatal("the Lease's create was not answered as Run stopped campaigning: the test forced nothing")
	}
	select {
	case <-f.Booted():
		t.Error("the Framework booted although Run's context ended before the replica led")
	default:
	}
	if got := ops.reconciles("w"); got != 0 {
		t.Errorf("w reconciled %d times, want 0", got)
	}
	l, err := kubeClient(t).CoordinationV1().Leases(ns).Get(t.Context(), "op-acquired", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the Lease is still held by %q after Run returned: not released", *h)
	}
}

// TestOperatorShutdownPastTimeoutKeepsTheLease: Run's context ends while a
// resource that ignores it is mid-reconciliation. Run returns at
// ShutdownTimeout with an error (it waited for that reconciliation for
// ever with leader election or sharding, past the timeout meant to end it
// before the pod's SIGKILL), and the Lease (or the member Lease) stays this
// replica's, renewed, until the reconciliation ends: its write still lands,
// and only then is the Lease released (the member Lease deleted).
func TestOperatorShutdownPastTimeoutKeepsTheLease(t *testing.T) {
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
			config := operatorpkg.Config{
				RESTConfig:              env.Config(),
				Name:                    "op-past",
				Logger:                  log.NewNopLogger(),
				Registry:                prometheus.NewRegistry(),
				LeaderElection:          !sharded,
				LeaderElectionNamespace: ns,
				LeaseDuration:           shardLease,
				RenewDeadline:           shardRenew,
				RetryPeriod:             shardRetry,
				ShutdownTimeout:         500 * time.Millisecond,
			}
			lease := "op-past"
			if sharded {
				config.Sharding = &operatorpkg.Sharding{Resources: []schema.GroupVersionResource{widgetGVR}, Identity: "a"}
				lease = "op-past-a" // the member Lease: <ring>-<identity>
			}
			op, res := newStubbornOperator(t, config, ns, "past")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- op.Run(ctx) }()
			released := false
			t.Cleanup(func() {
				if !released {
					close(res.release)
				}
				cancel()
				<-done
			})
			select {
			case <-res.started:
			case err := <-done:
				t.Fatalf("Run returned before reconciling w: %v", err)
			case <-time.After(60 * time.Second):
				t.Fatal("w was not reconciled within 60 s")
			}

			cancel()
			select {
			case err := <-done:
				done <- err // for the cleanup
				if err == nil || !strings.Contains(err.Error(), "ShutdownTimeout") {
					t.Fatalf("Run() = %v, want the error of a shutdown past ShutdownTimeout", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("Run did not return within 30 s of its context ending (ShutdownTimeout %s)", config.ShutdownTimeout)
			}
			returned := time.Now()
			leases := kubeClient(t).CoordinationV1().Leases(ns)
			poll(t, "the Lease renewed after Run returned", func(ctx context.Context) (bool, error) {
				l, err := leases.Get(ctx, lease, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				if h := l.Spec.HolderIdentity; h == nil || *h == "" {
					return false, fmt.Errorf("the Lease was released while a reconciliation still ran")
				}
				return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(returned), nil
			})

			close(res.release)
			released = true
			select {
			case err := <-res.result:
				if err != nil {
					t.Fatalf("the write of the reconciliation still holding the Lease: %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the resource did not write within 60 s of its release")
			}
			poll(t, "the Lease released once the reconciliation ended", func(ctx context.Context) (bool, error) {
				l, err := leases.Get(ctx, lease, metav1.GetOptions{})
				switch {
				case apierrors.IsNotFound(err):
					return sharded, nil
				case err != nil:
					return false, nil
				}
				return !sharded && (l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == ""), nil
			})
		})
	}
}

// TestOperatorLeaseRenewalsHangFencesBeforeTakeover: the leader's Lease
// renewals hang (an API server that takes the requests but does not
// answer), and another replica takes the Lease once it expired. By then
// the leader must have stopped, its writes refused: it counted the Lease
// as held until client-go's elector had also given up releasing it, up to
// RenewDeadline after its renewal failed, past LeaseDuration with
// client-go's usual timings, so that both replicas wrote at once.
func TestOperatorLeaseRenewalsHangFencesBeforeTakeover(t *testing.T) {
	// Not parallel: it races the leader's loss against the takeover, as
	// TestOperatorLeaderElection measures its failover.
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	const (
		lease  = 4 * time.Second
		renew  = 3 * time.Second
		period = 500 * time.Millisecond
	)
	var blackhole atomic.Bool
	replica := func(hang bool) (*operatorpkg.Operator, *framework.Framework) {
		cfg := env.Config()
		if hang {
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
					if blackhole.Load() && req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/namespaces/"+ns+"/leases/op-hang") {
						<-req.Context().Done()
						return nil, req.Context().Err()
					}
					return rt.RoundTrip(req)
				})
			})
		}
		op, err := operatorpkg.New(operatorpkg.Config{
			RESTConfig:              cfg,
			Name:                    "op-hang",
			Logger:                  log.NewNopLogger(),
			Registry:                prometheus.NewRegistry(),
			LeaderElection:          true,
			LeaderElectionNamespace: ns,
			LeaseDuration:           lease,
			RenewDeadline:           renew,
			RetryPeriod:             period,
			ShutdownTimeout:         time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		f := operatorFramework(t, op, ns, "widgets-hang", newOwnedConfigMapOps("hang", op.OwnWrites()))
		if err := op.Add(f); err != nil {
			t.Fatal(err)
		}
		return op, f
	}
	opA, fA := replica(true)
	stopA, doneA := runOperator(opA)
	t.Cleanup(func() { _ = stopA() })
	select {
	case <-fA.Booted():
	case err := <-doneA:
		t.Fatalf("replica A returned before leading: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("replica A did not lead within 60 s")
	}
	opB, fB := replica(false)
	stopB, doneB := runOperator(opB)
	t.Cleanup(func() { _ = stopB() })

	blackhole.Store(true)
	select {
	case <-fB.Booted():
	case err := <-doneB:
		t.Fatalf("replica B returned before leading: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("replica B did not take the Lease within 60 s of A's renewals hanging")
	}
	// B leads: A's writes must be refused by now.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a-after-takeover", Namespace: ns}}
	_, err := opA.Kubernetes().CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	if !errors.Is(err, operatorpkg.ErrLeaseLost) {
		t.Errorf("replica A's write once B leads: %v, want an error matching ErrLeaseLost (both replicas wrote at once)", err)
	}
	select {
	case err := <-doneA:
		if !errors.Is(err, operatorpkg.ErrLeaseLost) {
			t.Errorf("replica A: Run() = %v, want ErrLeaseLost", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("replica A still runs 60 s after its Lease was taken")
	}
}

// TestShardingLeavesOnlyItsOwnMemberLease: another instance takes a
// replica's member Lease (a second process given its identity, once the
// Lease looked expired to it); the replica, unable to renew, stops with
// ErrLeaseLost and leaves the ring, but the Lease is not its own any more:
// it must stay, held by the other instance, whose objects would otherwise
// move away while it reconciles them (the replica deleted the Lease
// whoever held it).
func TestShardingLeavesOnlyItsOwnMemberLease(t *testing.T) {
	t.Parallel() // a namespace and Leases of its own
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	op, err := operatorpkg.New(shardConfig(env.Config(), ns, "a"))
	if err != nil {
		t.Fatal(err)
	}
	f := operatorFramework(t, op, ns, "widgets-own", newOwnedConfigMapOps("own", op.OwnWrites()))
	if err := op.Add(f); err != nil {
		t.Fatal(err)
	}
	stop, done := runOperator(op)
	t.Cleanup(func() { _ = stop() })
	select {
	case <-f.Booted():
	case err := <-done:
		t.Fatalf("Run returned before the replica joined: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the replica did not join within 60 s")
	}
	lease := shardRing + "-a"
	stealLease(t, ns, lease)
	select {
	case err := <-done:
		if !errors.Is(err, operatorpkg.ErrLeaseLost) {
			t.Fatalf("Run() = %v, want ErrLeaseLost", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the replica still runs 60 s after its member Lease was taken")
	}
	l, err := kubeClient(t).CoordinationV1().Leases(ns).Get(t.Context(), lease, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the member Lease held by another instance, after the replica stopped: %v", err)
	}
	if h := l.Spec.HolderIdentity; h == nil || *h != "an-intruder" {
		t.Fatalf("the member Lease's holder = %v, want an-intruder's still", h)
	}
}
