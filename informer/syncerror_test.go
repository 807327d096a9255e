package informer

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
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

// TestWaitForCacheSyncRefusedForGood: a list the API server refuses for
// good (400 BadRequest: a selector it does not support; 405
// MethodNotAllowed: a resource that cannot be listed) can never sync:
// WaitForCacheSync returns at once with an error that names the resource,
// the namespace, the selectors and the server's answer; it waited for its
// context to end.
func TestWaitForCacheSyncRefusedForGood(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		is   func(error) bool
		want string
	}{
		"bad request": {
			apierrors.NewBadRequest(`"spec.foo" is not a known field selector`), apierrors.IsBadRequest,
			`informer widgets: informer cache not synced: the API server refuses to list widgets.example.com/v1 in namespace ns with label selector "a=b" with field selector "spec.foo=x": failed to list example.com/v1, Resource=widgets: "spec.foo" is not a known field selector`,
		},
		"method not allowed": {
			apierrors.NewMethodNotSupported(widgets.GroupResource(), "list"), apierrors.IsMethodNotSupported,
			`the API server refuses to list widgets.example.com/v1 in namespace ns with label selector "a=b" with field selector "spec.foo=x": failed to list example.com/v1, Resource=widgets: list is not supported on resources of kind "widgets.example.com"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			inf, err := New(Config{Client: failingList(tc.err), GVR: widgets, Namespace: "ns", LabelSelector: "a=b", FieldSelector: "spec.foo=x"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ran := make(chan error, 1)
			go func() { ran <- inf.Run(ctx) }()
			defer func() { cancel(); <-ran }()
			waited := make(chan error, 1)
			go func() { waited <- inf.WaitForCacheSync(ctx) }()
			select {
			case err := <-waited:
				if !errors.Is(err, ErrNotSynced) || !tc.is(err) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("WaitForCacheSync() = %v, want ErrNotSynced and the refused list: %s", err, tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("WaitForCacheSync did not return within 30 s of a list refused for good")
			}
			// A second wait returns the same at once.
			if err := inf.WaitForCacheSync(ctx); !tc.is(err) {
				t.Errorf("second WaitForCacheSync() = %v, want the refused list", err)
			}
		})
	}
}

// TestWaitForCacheSyncWaitsOutForbiddenAndNotFound: a Forbidden list (RBAC
// may be granted later) and a NotFound one (a CRD may be installed later)
// do not end the wait: WaitForCacheSync returns only when its context
// ends, with the list error.
func TestWaitForCacheSyncWaitsOutForbiddenAndNotFound(t *testing.T) {
	for name, listErr := range map[string]error{
		"forbidden": apierrors.NewForbidden(widgets.GroupResource(), "", errors.New("no")),
		"not found": apierrors.NewNotFound(widgets.GroupResource(), ""),
	} {
		t.Run(name, func(t *testing.T) {
			inf, err := New(Config{Client: failingList(listErr), GVR: widgets, Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			runUntilListFailed(t, inf)
			// The error handler of the first failed list has returned once
			// the retried list failed too.
			if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				return testutil.ToFloat64(inf.metrics.watchErrors) > 1, nil
			}); err != nil {
				t.Fatalf("waiting for the list to be retried: %v", err)
			}
			select {
			case <-inf.refused:
				t.Fatalf("a %s list ended the wait for the cache", name)
			default:
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(errors.New("test over"))
			if err := inf.WaitForCacheSync(ctx); !errors.Is(err, ErrNotSynced) || !errors.Is(err, listErr) || !strings.Contains(err.Error(), "test over: last list or watch error") {
				t.Fatalf("WaitForCacheSync() = %v, want ErrNotSynced with the context's cause and the list error", err)
			}
		})
	}
}

// onLog is a logger that calls f with each log line's key-value pairs.
type onLog func(keyvals ...any)

func (f onLog) Log(keyvals ...any) error { f(keyvals...); return nil }

// TestWaitForCacheSyncNamesTheErrorOnceReported: once the informer reports
// a list error (its log line, watch_errors_total), WaitForCacheSync names
// it. The error was counted and logged before it was kept for
// WaitForCacheSync, so a wait that ended in between said that no list had
// failed (TestWaitForCacheSyncNamesTheListError, which waits for the
// metric, failed now and then).
func TestWaitForCacheSyncNamesTheErrorOnceReported(t *testing.T) {
	forbidden := apierrors.NewForbidden(widgets.GroupResource(), "", errors.New(`User "x" cannot list resource "widgets"`))
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	var inf *Informer
	seen := make(chan error, 1) // the wait's error when the first list error was logged
	logger := onLog(func(keyvals ...any) {
		for n := 0; n+1 < len(keyvals); n += 2 {
			if keyvals[n] == "msg" && keyvals[n+1] == "list or watch failed, retrying" {
				select {
				case seen <- inf.WaitForCacheSync(ended):
				default:
				}
			}
		}
	})
	var err error
	inf, err = New(Config{Client: failingList(forbidden), GVR: widgets, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	runUntilListFailed(t, inf)
	select {
	case err := <-seen:
		if !apierrors.IsForbidden(err) {
			t.Fatalf("WaitForCacheSync() when the list error was logged = %v, want the Forbidden list error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the list error was not logged")
	}
}

// TestWaitForCacheSyncOutlastsOneRefusal: a list refused once (400
// BadRequest: a server still taking in a CRD's new selectableFields, just
// written by the Operator's EnsureCRD) and then answered syncs the cache;
// the first refusal ended the wait with an error.
func TestWaitForCacheSyncOutlastsOneRefusal(t *testing.T) {
	c := newFakeClient()
	var lists atomic.Int32
	c.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		if lists.Add(1) == 1 {
			return true, nil, apierrors.NewBadRequest(`"spec.foo" is not a known field selector`)
		}
		return false, nil, nil
	})
	inf, err := New(Config{Client: c, GVR: widgets, Namespace: "ns", FieldSelector: "spec.foo=x", Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- inf.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync() = %v after one refused list and one answered, want nil", err)
	}
	if n := lists.Load(); n < 2 {
		t.Fatalf("%d lists, want the refused one and its retry", n)
	}
}
