package informer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
)

// failingList is a fake client whose lists fail with err.
func failingList(err error) *fakeClient {
	c := newFakeClient()
	c.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, err
	})
	return c
}

// runUntilListFailed runs inf until the test ends and waits until its
// list failed once.
func runUntilListFailed(t *testing.T, inf *Informer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(inf.metrics.watchErrors) > 0, nil
	}); err != nil {
		t.Fatalf("waiting for the list to fail: %v", err)
	}
}

// TestWaitForCacheSyncNamesTheListError: a cache whose list fails
// (Forbidden: RBAC does not let the identity list) does not sync, and the
// error WaitForCacheSync returns when its context ends names that list
// error, the reason; it said only that the cache did not sync, and the
// reason was in the log alone.
func TestWaitForCacheSyncNamesTheListError(t *testing.T) {
	forbidden := apierrors.NewForbidden(widgets.GroupResource(), "", errors.New(`User "x" cannot list resource "widgets"`))
	inf, err := New(Config{Client: failingList(forbidden), GVR: widgets, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	runUntilListFailed(t, inf)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("not synced within the test's time"))
	err = inf.WaitForCacheSync(ctx)
	if !errors.Is(err, ErrNotSynced) || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not synced within the test's time") ||
		!strings.Contains(err.Error(), `last list or watch error: failed to list example.com/v1, Resource=widgets: widgets.example.com is forbidden: User "x" cannot list resource "widgets"`) {
		t.Fatalf("WaitForCacheSync() = %v, want ErrNotSynced with the context's cause and the Forbidden list error", err)
	}
}

// TestWaitForCacheSyncWithoutListError: without a list error (the list has
// not answered), the error says so.
func TestWaitForCacheSyncWithoutListError(t *testing.T) {
	inf, err := New(Config{Client: newFakeClient(), GVR: widgets})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := inf.WaitForCacheSync(ctx); !errors.Is(err, ErrNotSynced) || !strings.Contains(err.Error(), "no list or watch error so far") {
		t.Fatalf("WaitForCacheSync() = %v, want ErrNotSynced saying no list failed", err)
	}
}
