package framework

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// fixedLimiter is a Config.RateLimiter whose every wait is wait; it counts
// the waits it gave.
type fixedLimiter struct {
	wait  time.Duration
	mu    sync.Mutex
	whens int
}

func (l *fixedLimiter) When(string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.whens++
	return l.wait
}
func (l *fixedLimiter) Forget(string) {}
func (l *fixedLimiter) NumRequeues(string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.whens
}

// recordingQueue is a work queue that records what the Framework asks of
// it after a reconciliation: each Add, AddAfter (AddRateLimited as the
// client-go queue does it: AddAfter of the limiter's When) and Forget.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[string] // nil: other methods are not called
	limiter                                      workqueue.TypedRateLimiter[string]
	calls                                        []string
	delays                                       []time.Duration
}

func (q *recordingQueue) Add(key string) { q.calls = append(q.calls, "add "+key) }
func (q *recordingQueue) AddAfter(key string, d time.Duration) {
	q.calls = append(q.calls, "add after "+key)
	q.delays = append(q.delays, d)
}
func (q *recordingQueue) AddRateLimited(key string) { q.AddAfter(key, q.limiter.When(key)) }
func (q *recordingQueue) Forget(key string)         { q.calls = append(q.calls, "forget "+key) }

// reconcileAndRequeue runs one reconciliation of key in f, hands its outcome to
// f.requeue with a recordingQueue in place of f's queue, and returns the
// outcome and the queue.
func reconcileAndRequeue(f *Framework, key string) (outcome, *recordingQueue) {
	rctx := newReconcileContext(context.Background(), time.Now().Add(time.Minute))
	o := f.reconcile(rctx, rctx, key)
	rctx.stop()
	q := &recordingQueue{limiter: f.limiter}
	f.queue = q
	f.requeue(key, o)
	return o, q
}

// TestRetryAfterRequeuesNotBeforeItsDelay: a failure whose error asks for
// a wait (retry.After, an API server's 429 with Retry-After) is requeued
// after that wait or the object's backoff interval, whichever is longer,
// and still advances the backoff (the limiter's When is asked once); it
// was requeued after the backoff alone (50ms where the API asked for 30s).
// A plain error keeps its backoff; a permanent one is not requeued.
func TestRetryAfterRequeuesNotBeforeItsDelay(t *testing.T) {
	boom := errors.New("provider: 429 too many requests")
	tests := []struct {
		name    string
		err     error
		backoff time.Duration
		result  string
		want    []time.Duration // the delays of AddAfter
		whens   int
	}{
		{"delay longer than the backoff", retry.After(boom, 30*time.Second), 50 * time.Millisecond, ResultError, []time.Duration{30 * time.Second}, 1},
		{"backoff longer than the delay", retry.After(boom, time.Second), time.Hour, ResultError, []time.Duration{time.Hour}, 1},
		{"with a reason", conditioncontext.WithReason(retry.After(boom, 30*time.Second), "ProviderRateLimited"), 50 * time.Millisecond, ResultError, []time.Duration{30 * time.Second}, 1},
		{"API server's Retry-After", apierrors.NewTooManyRequests("the server is shedding load", 3), 50 * time.Millisecond, ResultError, []time.Duration{3 * time.Second}, 1},
		{"no delay", boom, 50 * time.Millisecond, ResultError, []time.Duration{50 * time.Millisecond}, 1},
		{"permanent", retry.Permanent(retry.After(boom, 30*time.Second)), 50 * time.Millisecond, ResultPermanent, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := &fixedLimiter{wait: tt.backoff}
			r := &funcResource{name: "record", create: func(context.Context, any) error { return tt.err }}
			f, err := New(Config{Name: "op", Informer: informertest.New(object("a", 1, nil)), ResourceRouter: testRouter(t, nil, r),
				DisableFinalizers: true, RateLimiter: lim})
			if err != nil {
				t.Fatal(err)
			}
			o, q := reconcileAndRequeue(f, "ns/a")
			if o.result != tt.result || !errors.Is(o.err, boom) && !apierrors.IsTooManyRequests(o.err) {
				t.Fatalf("outcome %s %v, want %s with the resource's error", o.result, o.err, tt.result)
			}
			if !equalDurations(q.delays, tt.want) {
				t.Errorf("requeued after %v (queue calls %q), want after %v", q.delays, q.calls, tt.want)
			}
			if lim.whens != tt.whens {
				t.Errorf("backoff intervals drawn = %d, want %d (a failure advances the backoff)", lim.whens, tt.whens)
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRetryAfterInTheDeleteChain: a delete chain whose resource fails with
// retry.After keeps the Framework's finalizer, and the object is requeued
// after the delay asked for (it was after its backoff alone); the delete
// runs again then, and is not lost.
func TestRetryAfterInTheDeleteChain(t *testing.T) {
	boom := errors.New("provider: 429 too many requests")
	r := &deleteFunc{name: "record", del: func(context.Context) error { return retry.After(boom, 30*time.Second) }}
	obj, dc := deletingThing("gone")
	lim := &fixedLimiter{wait: 50 * time.Millisecond}
	f, err := New(Config{Name: "op", Informer: informertest.New(obj), ResourceRouter: testRouter(t, nil, r), Client: dc, Resource: thingsGVRForDeletes,
		RateLimiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	o, q := reconcileAndRequeue(f, "ns/gone")
	if o.result != ResultError || !errors.Is(o.err, boom) {
		t.Fatalf("outcome %s %v, want %s with the resource's error", o.result, o.err, ResultError)
	}
	if !equalDurations(q.delays, []time.Duration{30 * time.Second}) || lim.whens != 1 {
		t.Errorf("requeued after %v (queue calls %q, %d backoff intervals drawn), want after 30s, one interval drawn", q.delays, q.calls, lim.whens)
	}
	cur, err := dc.Resource(thingsGVRForDeletes).Namespace("ns").Get(context.Background(), "gone", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cur.GetFinalizers()) != 1 {
		t.Errorf("finalizers %v after a delete that must wait, want the Framework's kept", cur.GetFinalizers())
	}
}

// TestRetryAfterIsAFailure: a reconciliation that fails with retry.After
// is a failure in every report: result "error" in the trace (with the
// delay asked for) and the metrics, the error counted for its resource,
// Ready False with the error's reason (conditioncontext.WithReason) and
// message, Reconciling True, a Warning event, the backoff advanced. The
// hand-written alternative (a requeue without an error) was a success.
func TestRetryAfterIsAFailure(t *testing.T) {
	r := &funcResource{name: "record", create: func(context.Context, any) error {
		return conditioncontext.WithReason(retry.After(errors.New("provider: 429 too many requests"), 30*time.Second), "ProviderRateLimited")
	}}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r))
	tr := st.traces(t, 1)[0]
	if tr.Result != ResultError || tr.RequeueAfter != 30*time.Second || !strings.Contains(tr.Error, "429") {
		t.Errorf("trace: result %q, requeue after %s, error %q; want %q after 30s with the error", tr.Result, tr.RequeueAfter, tr.Error, ResultError)
	}
	if n := testutil.ToFloat64(st.f.metrics.reconciliationsOf(ResultError)); n != 1 {
		t.Errorf("reconciliations with result %q = %v, want 1", ResultError, n)
	}
	if n := testutil.ToFloat64(st.f.metrics.errors.WithLabelValues("record", resource.OperationEnsureCreated)); n != 1 {
		t.Errorf("errors of resource record = %v, want 1", n)
	}
	pollUntil(t, "the backoff advanced", func() bool { return st.f.queue.NumRequeues("ns/a") == 1 })
	conds := conditionsOf(t, st.server.get())
	var ready, reconciling metav1.Condition
	for _, c := range conds {
		switch c.Type {
		case conditioncontext.Ready:
			ready = c
		case conditioncontext.Reconciling:
			reconciling = c
		}
	}
	if ready.Status != metav1.ConditionFalse || ready.Reason != "ProviderRateLimited" || !strings.Contains(ready.Message, "429") {
		t.Errorf("Ready = %+v, want False, ProviderRateLimited, with the error", ready)
	}
	if reconciling.Status != metav1.ConditionTrue || reconciling.Reason != ReasonProgressingWithRetry {
		t.Errorf("Reconciling = %+v, want True, %s", reconciling, ReasonProgressingWithRetry)
	}
	var warned bool
	for _, e := range st.drainEvents() {
		warned = warned || strings.HasPrefix(e, "Warning ReconcileFailed") && strings.Contains(e, "429")
	}
	if !warned {
		t.Error("no Warning ReconcileFailed event with the error")
	}
}

// TestRetryAfterHonouredAtResync: an object whose failure asked for a wait
// (retry.After: a provider's 429 with Retry-After) is not reconciled by the
// informer's periodic resync before the wait has passed (it called the
// provider again at the next resync, 10 s into a wait of 60 s), nor by a
// resync that came while the failing reconciliation ran: a resync brings
// nothing new, and the object's requeue at the wait's end reconciles it
// anyway. A change of the object still reconciles it at once; a resync
// after the wait, or after the next reconciliation began, does as before,
// as does one that came while a reconciliation that asks for no wait ran;
// nothing is kept about the wait once it ended.
func TestRetryAfterHonouredAtResync(t *testing.T) {
	boom := errors.New("provider: 429 too many requests")
	obj := object("a", 1, nil)
	var f *Framework
	var resyncWhileRunning bool
	var fail error
	r := &funcResource{name: "record", create: func(context.Context, any) error {
		if resyncWhileRunning {
			f.UpdateFunc(obj, obj)
		}
		return fail
	}}
	var err error
	f, err = New(Config{Name: "op", Informer: informertest.New(obj), ResourceRouter: testRouter(t, nil, r),
		DisableFinalizers: true, RateLimiter: &fixedLimiter{wait: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	f.state.now = func() time.Time { return now }
	// run reconciles the object once and returns what was asked of the
	// queue while it ran and after.
	run := func(err error, resync bool) (during, after *recordingQueue) {
		fail, resyncWhileRunning = err, resync
		during = &recordingQueue{limiter: f.limiter}
		f.queue = during
		_, after = reconcileAndRequeue(f, "ns/a")
		return during, after
	}
	var q *recordingQueue
	resync := func() []string {
		q.calls = nil
		f.UpdateFunc(obj, obj) // a resync: the same resourceVersion
		return q.calls
	}

	_, q = run(retry.After(boom, time.Minute), false)
	if !equalDurations(q.delays, []time.Duration{time.Minute}) {
		t.Fatalf("requeued after %v (queue calls %q), want after 1m", q.delays, q.calls)
	}
	now = now.Add(10 * time.Second)
	if calls := resync(); len(calls) != 0 {
		t.Errorf("a resync 10s into a wait of 1m: queue calls %q, want none (the requeue at the wait's end reconciles it)", calls)
	}
	changed := obj.DeepCopy()
	changed.SetResourceVersion("2")
	changed.SetGeneration(2)
	q.calls = nil
	f.UpdateFunc(obj, changed)
	if !slices.Equal(q.calls, []string{"add ns/a"}) {
		t.Errorf("a change of the object during the wait: queue calls %q, want it added at once", q.calls)
	}
	now = now.Add(time.Minute)
	if calls := resync(); !slices.Equal(calls, []string{"add ns/a"}) {
		t.Errorf("a resync after the wait: queue calls %q, want it added", calls)
	}

	// A resync while it runs: dropped when the reconciliation asks for a
	// wait, run again after it otherwise.
	during, q := run(retry.After(boom, time.Minute), true)
	if len(during.calls) != 0 {
		t.Errorf("a resync while a reconciliation that asks for a wait ran: queue calls %q, want none", during.calls)
	}
	if calls := resync(); len(calls) != 0 {
		t.Errorf("a resync after a second failure with retry.After: queue calls %q, want none", calls)
	}
	f.Enqueue("ns/a") // an event wakes it during the wait
	during, q = run(nil, true)
	if !slices.Equal(during.calls, []string{"add ns/a"}) {
		t.Errorf("a resync while a reconciliation that began during the wait and succeeded ran: queue calls %q, want it added", during.calls)
	}
	if calls := resync(); !slices.Equal(calls, []string{"add ns/a"}) {
		t.Errorf("a resync after a reconciliation that began during the wait: queue calls %q, want it added", calls)
	}
	if e := f.state.objects["ns/a"]; e != nil && e.rare != nil {
		t.Errorf("the object's state keeps %+v after the wait ended, want nothing rare", *e.rare)
	}
}

// TestRetryAfterNotCutShortByAnEarlierRequeue: the work queue keeps the
// earliest of the times a key was added after (client-go's AddAfter does
// not move a waiting key later), so a requeue asked for before a failure
// that asked for a longer wait (the requeue of an earlier failure with a
// shorter wait or backoff, a delay a resource asked for) came before that
// wait had passed, and the object was reconciled then, calling the API
// that asked for the wait sooner than it allowed. Such a requeue now waits
// for the rest of the wait, without running the chain; an event that
// wakes the object (Enqueue, a change) still reconciles it at once, also
// one that came while the failing reconciliation ran.
func TestRetryAfterNotCutShortByAnEarlierRequeue(t *testing.T) {
	boom := errors.New("provider: 429 too many requests")
	obj := object("a", 1, nil)
	var calls int
	var fail error
	var f *Framework
	var enqueueWhileRunning bool
	r := &funcResource{name: "record", create: func(context.Context, any) error {
		calls++
		if enqueueWhileRunning {
			f.Enqueue("ns/a") // a child's event while it runs
		}
		return fail
	}}
	var err error
	f, err = New(Config{Name: "op", Informer: informertest.New(obj), ResourceRouter: testRouter(t, nil, r),
		DisableFinalizers: true, RateLimiter: &fixedLimiter{wait: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	f.state.now = func() time.Time { return now }
	f.queue = &recordingQueue{limiter: f.limiter}
	// run dequeues the key: it reconciles the object, unless it waits,
	// and reports whether the chain ran and what was asked of the queue.
	run := func(err error) (ran bool, q *recordingQueue) {
		fail, calls = err, 0
		_, q = reconcileAndRequeue(f, "ns/a")
		return calls > 0, q
	}

	// The first failure asks for 10s: requeued after 10s.
	if ran, q := run(retry.After(boom, 10*time.Second)); !ran || !equalDurations(q.delays, []time.Duration{10 * time.Second}) {
		t.Fatalf("first failure: ran %v, requeued after %v; want it run and requeued after 10s", ran, q.delays)
	}
	// 1s later an event wakes it; it fails again, asking for 1m: the
	// queue keeps the requeue at 10s.
	now = now.Add(time.Second)
	f.Enqueue("ns/a")
	if ran, _ := run(retry.After(boom, time.Minute)); !ran {
		t.Fatal("an event during the wait: the object was not reconciled")
	}
	// At 10s the earlier requeue comes: it waits for the rest of the
	// minute, without calling the API.
	now = now.Add(9 * time.Second)
	ran, q := run(nil)
	if ran {
		t.Errorf("the requeue of the first failure, 9s into a wait of 1m: the chain ran, want it left until the wait's end")
	}
	if !equalDurations(q.delays, []time.Duration{51 * time.Second}) {
		t.Errorf("the requeue of the first failure, 9s into a wait of 1m: requeued after %v (queue calls %q), want after the 51s left", q.delays, q.calls)
	}
	// At the wait's end it runs.
	now = now.Add(51 * time.Second)
	if ran, _ := run(nil); !ran {
		t.Error("at the wait's end: the object was not reconciled")
	}

	// An event that comes while the failing reconciliation runs wakes it
	// once that ends: its next dequeue runs the chain.
	enqueueWhileRunning = true
	if ran, _ := run(retry.After(boom, time.Minute)); !ran {
		t.Fatal("a failure asking for 1m: the chain did not run")
	}
	enqueueWhileRunning = false
	now = now.Add(time.Second)
	if ran, _ := run(nil); !ran {
		t.Error("an event while the failing reconciliation ran: its next dequeue did not run the chain")
	}
	if e := f.state.objects["ns/a"]; e != nil && e.rare != nil {
		t.Errorf("the object's state keeps %+v after the wait ended, want nothing rare", *e.rare)
	}
}
