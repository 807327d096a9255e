package integration

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
