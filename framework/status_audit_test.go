package framework

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/trace"
)

// TestNoStatusWriteAfterAbort: a reconciliation that ends because the
// Framework was aborted (its Lease lost) writes no status: another replica
// may own the object now, and a late write could overwrite its Ready and
// take observedGeneration back.
func TestNoStatusWriteAfterAbort(t *testing.T) {
	var running atomic.Bool
	r := &funcResource{name: "r", create: func(ctx context.Context, _ any) error {
		running.Store(true)
		<-ctx.Done()
		return ctx.Err()
	}}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r))
	pollUntil(t, "the resource to run", running.Load)
	st.f.Abort()
	st.traces(t, 1)
	if w := st.server.writeLog(); len(w) != 0 {
		t.Errorf("status writes after Abort = %q, want none (conditions now %+v)", w, conditionsOf(t, st.server.get()))
	}
}

// TestGuardOutcomeOfALongError: a Guard's task that fails with an error
// longer than a condition message may be records its outcome all the
// same (cut to fit), not the lock, and the object is retried, not Stalled.
func TestGuardOutcomeOfALongError(t *testing.T) {
	r := &funcResource{name: "db", create: func(ctx context.Context, _ any) error {
		return conditioncontext.Guard(ctx, "DatabaseReady", "Creating", func(context.Context) (metav1.ConditionStatus, string, string, error) {
			return "", "", "", errors.New("cloud API said: " + strings.Repeat("x", 40000))
		})
	}}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r))
	tr := st.traces(t, 1)[0]
	c := meta.FindStatusCondition(conditionsOf(t, st.server.get()), "DatabaseReady")
	if c == nil || c.Message == conditioncontext.LockMessage || !strings.HasPrefix(c.Message, "cloud API said: xxx") || len(c.Message) > 32*1024 {
		t.Errorf("DatabaseReady on the server = %+v, want the task's outcome, cut to 32 KiB", c)
	}
	if tr.Result == ResultPermanent {
		t.Errorf("result = %s %.200q, want a failure that is retried", tr.Result, tr.Error)
	}
}

// TestLongMultiByteMessageWrittenOnce: an error message cut to a
// condition's limit in the middle of a multi-byte character was invalid
// UTF-8, stored as U+FFFD, and so never equal to the next computed one:
// every identical failure wrote the status again.
func TestLongMultiByteMessageWrittenOnce(t *testing.T) {
	r := &funcResource{name: "r", create: func(context.Context, any) error {
		return errors.New(strings.Repeat("é", 20000))
	}}
	obj := object("a", 1, nil)
	server := newStatusServer(obj)
	inf := informertest.New(obj)
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r),
		Client: server.client(), Resource: thingsGVR, DisableFinalizers: true, Conditions: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		rctx := newReconcileContext(context.Background(), time.Now().Add(time.Minute))
		f.reconcile(rctx, rctx, "ns/a")
		rctx.stop()
		if err := inf.Update(server.get()); err != nil {
			t.Fatal(err)
		}
	}
	if w := server.writeLog(); len(w) != 1 {
		t.Errorf("status writes = %q after three identical failures, want 1", w)
	}
}

// TestPanicInHandlesWritesTheStatus: a panic in a resource set's Handles
// (the user's code, outside any resource) ends the reconciliation like a
// resource's panic: counted as a panic, and Ready False written with it;
// it ended in reconcile's last-resort recover, which writes no status.
func TestPanicInHandlesWritesTheStatus(t *testing.T) {
	r := &funcResource{name: "r"}
	handles := func(any) bool { panic("handles: unexpected object") }
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, handles, r))
	tr := st.traces(t, 1)[0]
	if tr.Result != ResultPanic {
		t.Errorf("result = %s, want %s", tr.Result, ResultPanic)
	}
	ready := meta.FindStatusCondition(conditionsOf(t, st.server.get()), conditioncontext.Ready)
	if ready == nil || ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "handles: unexpected object") {
		t.Errorf("Ready on the server = %+v, want False with the panic", ready)
	}
}

// armedName is a resource whose Name panics once armed (after the router
// asked it at construction).
type armedName struct {
	funcResource
	armed atomic.Bool
}

func (r *armedName) Name() string {
	if r.armed.Load() {
		panic("name: nil config")
	}
	return r.funcResource.Name()
}

// TestPanicInNameWritesTheStatus: a resource whose Name panics ends the
// reconciliation like a resource's panic: counted as a panic of that
// resource (named by its position and type), retried with backoff, and
// Ready False written with it. It ended in reconcile's last-resort
// recover, a panic of "framework" that writes no status.
func TestPanicInNameWritesTheStatus(t *testing.T) {
	r := &armedName{funcResource: funcResource{name: "r"}}
	rt := testRouter(t, nil, r)
	r.armed.Store(true)
	st := newStatusTest(t, object("a", 1, nil), nil, rt, func(c *Config) {
		c.BackOffFactory = func() backoff.BackOff { return backoff.NewConstantBackOff(50 * time.Millisecond) }
	})
	pollUntil(t, "a retry", func() bool { return trace.Reconciliations(st.f.Traces("ns/a")) >= 2 })
	trs := st.f.Traces("ns/a")
	const name = "resources[0] (*framework.armedName)"
	if tr := trs[0]; tr.Result != ResultPanic || !strings.Contains(tr.Error, name+": panic: name: nil config") {
		t.Errorf("first reconciliation = %s %q, want %s naming %s", tr.Result, tr.Error, ResultPanic, name)
	}
	ready := meta.FindStatusCondition(conditionsOf(t, st.server.get()), conditioncontext.Ready)
	if ready == nil || ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "name: nil config") {
		t.Errorf("Ready on the server = %+v, want False with the panic", ready)
	}
	if got := testutil.ToFloat64(st.f.metrics.errors.WithLabelValues(name, resource.OperationEnsureCreated)); got < 1 {
		t.Errorf("errors counted for %s = %v, want at least 1", name, got)
	}
}

// TestGuardTaskPanicReleasesTheLock: a Guard's task that panics leaves its
// outcome (Unknown, with the panic), not the lock, on the object; the lock
// stopped every retry's Guard as "locked by another reconciliation" until
// it expired.
func TestGuardTaskPanicReleasesTheLock(t *testing.T) {
	var runs atomic.Int64
	r := &funcResource{name: "db", create: func(ctx context.Context, _ any) error {
		return conditioncontext.Guard(ctx, "DatabaseReady", "Creating", func(context.Context) (metav1.ConditionStatus, string, string, error) {
			if runs.Add(1) == 1 {
				panic("cloud SDK: nil map")
			}
			return metav1.ConditionTrue, "Created", "", nil
		})
	}}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r), func(c *Config) {
		c.BackOffFactory = func() backoff.BackOff { return backoff.NewConstantBackOff(time.Millisecond) }
	})
	if tr := st.traces(t, 1)[0]; tr.Result != ResultPanic {
		t.Fatalf("first result = %s %q, want %s", tr.Result, tr.Error, ResultPanic)
	}
	c := meta.FindStatusCondition(conditionsOf(t, st.server.get()), "DatabaseReady")
	if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != "CreatingFailed" || c.Message != "panic: cloud SDK: nil map" {
		t.Errorf("DatabaseReady on the server after the panic = %+v, want Unknown CreatingFailed with the panic", c)
	}
	st.sync(t)
	pollUntil(t, "the retry's task to run", func() bool { return runs.Load() >= 2 })
	pollUntil(t, "DatabaseReady True", func() bool {
		c := meta.FindStatusCondition(conditionsOf(t, st.server.get()), "DatabaseReady")
		return c != nil && c.Status == metav1.ConditionTrue
	})
}

// TestNoStatusWriteAfterAbortOfATimedOutChain: a chain that timed out
// writes its failure within a bound of its own, detached from the
// reconciliation's context; an Abort (the Lease lost) that came after the
// timeout, before that write, did not stop it, and the replica that lost
// the object wrote its status all the same.
func TestNoStatusWriteAfterAbortOfATimedOutChain(t *testing.T) {
	var f atomic.Pointer[Framework]
	r := &funcResource{name: "r", create: func(ctx context.Context, _ any) error {
		<-ctx.Done() // the reconciliation times out,
		f.Load().Abort()
		return ctx.Err() // then the Lease is lost before the status write
	}}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r), func(c *Config) {
		c.ReconcileTimeout = 50 * time.Millisecond
	})
	f.Store(st.f)
	st.traces(t, 1)
	if w := st.server.writeLog(); len(w) != 0 {
		t.Errorf("status writes after Abort = %q, want none (conditions now %+v)", w, conditionsOf(t, st.server.get()))
	}
}

// TestStatusWriteAfterAConflictKeepsNewerStatus: a Guard's lock that fails
// with a conflict tells the reconciliation that the object it read is not
// the latest (a stale cache, another replica's write). The end-of-chain
// write of the conditions resources set still applied, from that stale
// copy, status.observedGeneration and the Framework's own carried-over
// conditions: another replica's newer Ready and observedGeneration were
// taken back.
func TestStatusWriteAfterAConflictKeepsNewerStatus(t *testing.T) {
	server := newStatusServer(object("a", 2, nil))
	server.mapList = true
	cond := func(status, reason string, gen int64) map[string]any {
		return map[string]any{"type": conditioncontext.Ready, "status": status, "reason": reason, "message": "m",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": float64(gen)}
	}
	// As the cache shows it: Ready False about generation 1.
	server.apply("operatorkit-op", map[string]any{"observedGeneration": float64(1), "conditions": []any{cond("False", "Failed", 1)}})
	cached := server.get()
	// Another replica reconciled generation 2 since.
	server.mu.Lock()
	server.apply("operatorkit-op", map[string]any{"observedGeneration": float64(2), "conditions": []any{cond("True", ReasonSucceeded, 2)}})
	server.obj.SetResourceVersion("10")
	server.mu.Unlock()

	info := &funcResource{name: "info", create: func(ctx context.Context, _ any) error {
		conditioncontext.Set(ctx, "InfoReady", metav1.ConditionTrue, "Seen", "")
		return nil
	}}
	var creates atomic.Int64
	st := newStatusTest(t, cached, server, testRouter(t, nil, info, guarded(&creates, nil)))
	tr := st.traces(t, 1)[0]
	if tr.Result != ResultConflict {
		t.Fatalf("result = %s %q, want a conflict", tr.Result, tr.Error)
	}
	got := server.get()
	if og := observedOf(got); og != 2 {
		t.Errorf("observedGeneration on the server = %d, want 2 (the other replica's)", og)
	}
	if c := meta.FindStatusCondition(conditionsOf(t, got), conditioncontext.Ready); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready on the server = %+v, want the other replica's True", c)
	}
	if c := meta.FindStatusCondition(conditionsOf(t, got), "InfoReady"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("InfoReady on the server = %+v, want it written", c)
	}
}
