package framework

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// gathered returns the value of the metric name gathered from reg (the sum
// of its series), and whether reg has a series of it.
func gathered(t *testing.T, reg prometheus.Gatherer, name string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum, found := 0.0, false
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			found = true
			switch {
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum, found
}

// bootUntilEntered runs f.Boot until a reconciliation sends on entered, and
// returns the func that ends Boot's context, calls then (when not nil), and
// waits for Boot to return nil.
func bootUntilEntered(t *testing.T, f *Framework, entered <-chan struct{}) (stop func(then func())) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Boot(ctx) }()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the reconciliation did not start within 30 s")
	}
	return func(then func()) {
		t.Helper()
		cancel()
		if then != nil {
			then()
		}
		if err := <-done; err != nil {
			t.Fatalf("Boot() = %v", err)
		}
	}
}

// unroutableDeletion returns a Framework "op" registered on reg whose cache
// holds ns/stuck, an object being deleted with the Framework's finalizer
// that no resource set handles.
func unroutableDeletion(t *testing.T, reg prometheus.Registerer) *Framework {
	t.Helper()
	obj, dc := deletingThing("stuck")
	obj.SetLabels(map[string]string{"release": "1"})
	rt := testRouter(t, func(o any) bool {
		acc, err := meta.Accessor(o)
		return err == nil && acc.GetLabels()["release"] == "2"
	}, &deleteFunc{name: "cleaner"})
	f, err := New(Config{Name: "op", Informer: informertest.New(obj), ResourceRouter: rt, Client: dc, Resource: thingsGVRForDeletes, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestUnroutableDeletionIsInDeletion: an object being deleted that carries
// the Framework's finalizer and that no resource set handles keeps its
// finalizer (it stays Terminating): it is a stuck delete, and must show in
// objects_in_deletion and oldest_deletion_age_seconds.
func TestUnroutableDeletionIsInDeletion(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	reg := prometheus.NewRegistry()
	f := unroutableDeletion(t, reg)
	boot(t, f)
	pollUntil(t, "the reconciliation", func() bool {
		trs := f.Traces("ns/stuck")
		return len(trs) == 1 && trs[0].Result == ResultNoResourceSet
	})
	if n, _ := gathered(t, reg, metricObjectsInDeletion); n != 1 {
		t.Errorf("%s = %v, want 1: the object is Terminating with the Framework's finalizer", metricObjectsInDeletion, n)
	}
	pollUntil(t, "a deletion age", func() bool {
		age, _ := gathered(t, reg, metricOldestDeletion)
		return age > 0
	})
}

// TestNoEventAfterAbort: Abort is the Lease's loss: the reconciliations in
// flight must stop writing, and an Event is a write (refused by the
// operator's fence, and retried by client-go's broadcaster, each attempt
// counted in operatorkit_operator_refused_writes_total, whose increase
// should mean a resource that ignores its context). A resource that honours
// its context and returns its error must not make the Framework record
// ReconcileFailed.
func TestNoEventAfterAbort(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	entered := make(chan struct{}, 1)
	r := &funcResource{name: "waits", create: func(ctx context.Context, _ any) error {
		entered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}}
	rec := record.NewFakeRecorder(10)
	f, err := New(Config{Name: "op", Informer: informertest.New(object("a", 1, nil)), ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, EventRecorder: rec, ReconcileTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	stop := bootUntilEntered(t, f, entered)
	stop(f.Abort)
	if trs := f.Traces("ns/a"); len(trs) != 1 || trs[0].Result != ResultError {
		t.Fatalf("traces = %+v, want one error", trs)
	}
	select {
	case e := <-rec.Events:
		t.Errorf("event %q recorded for a reconciliation that Abort ended", e)
	default:
	}
}

// TestPendingAgeOnlyWhileBooted: a Framework that does not run, a standby
// replica waiting for the Lease whose Owns handlers enqueue owners (or one
// whose Boot returned), reconciles nothing: its oldest pending age is 0, not
// the time since the standby started, which fired the "is an object stuck?"
// alert on every standby. Keys enqueued before Boot wait from Boot on.
func TestPendingAgeOnlyWhileBooted(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var clock atomic.Pointer[time.Time]
	t0 := time.Now()
	clock.Store(&t0)
	advance := func(d time.Duration) {
		next := clock.Load().Add(d)
		clock.Store(&next)
	}
	entered, proceed := make(chan struct{}, 1), make(chan struct{})
	r := &funcResource{name: "fails", create: func(context.Context, any) error {
		entered <- struct{}{}
		<-proceed
		return errors.New("still failing")
	}}
	reg := prometheus.NewRegistry()
	f, err := New(Config{Name: "op", Informer: informertest.New(object("a", 1, nil)), ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, Registerer: reg, BackOffFactory: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	f.state.now = func() time.Time { return *clock.Load() }
	pending := func() float64 {
		t.Helper()
		v, ok := gathered(t, reg, metricOldestPending)
		if !ok {
			t.Fatalf("no %s series", metricOldestPending)
		}
		return v
	}

	f.Enqueue("ns/a") // as a child's event does on a standby
	advance(time.Hour)
	if v := pending(); v != 0 {
		t.Errorf("before Boot: %s = %v, want 0", metricOldestPending, v)
	}

	stop := bootUntilEntered(t, f, entered)
	advance(time.Minute)
	if v := pending(); v != 60 {
		t.Errorf("booted: %s = %v, want 60 (pending since Boot)", metricOldestPending, v)
	}
	close(proceed)
	pollUntil(t, "the failed reconciliation", func() bool { return len(f.Traces("ns/a")) == 1 })
	stop(nil)
	advance(time.Hour)
	if v := pending(); v != 0 {
		t.Errorf("after Boot returned: %s = %v, want 0", metricOldestPending, v)
	}
}

// TestStateGaugesOfFrameworksOfOneName: a Framework made after another of
// the same Name on the same registry (an operator started again in the
// process, replicas in one test) reports its own stuck objects: the first
// one's collector, registered first, reported the first Framework's state
// only, for ever.
func TestStateGaugesOfFrameworksOfOneName(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	reg := prometheus.NewRegistry()
	first, err := New(Config{Name: "op", Informer: informertest.New(), ResourceRouter: testRouter(t, nil, &deleteFunc{name: "cleaner"}), DisableFinalizers: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	_ = first // never booted, or stopped

	second := unroutableDeletion(t, reg)
	boot(t, second)
	pollUntil(t, "the reconciliation", func() bool { return len(second.Traces("ns/stuck")) == 1 })
	if n, _ := gathered(t, reg, metricObjectsInDeletion); n != 1 {
		t.Errorf("%s = %v, want 1: the second Framework's object", metricObjectsInDeletion, n)
	}
}

// TestQueueDepthAfterBootReturned: the keys a Framework leaves queued when
// Boot returns are never reconciled by it (Boot runs once), and no worker
// runs: its work queue gauges must not go on showing them, or "does the
// queue drain?" and "is a worker hung?" fire for ever in a process that goes
// on without it.
func TestQueueDepthAfterBootReturned(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	entered, proceed := make(chan struct{}, 1), make(chan struct{})
	r := &funcResource{name: "slow", create: func(ctx context.Context, obj any) error {
		if obj.(*unstructured.Unstructured).GetName() == "a" {
			entered <- struct{}{}
			<-proceed
		}
		return nil
	}}
	reg := prometheus.NewRegistry()
	f, err := New(Config{Name: "op", Informer: informertest.New(object("a", 1, nil)), ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	stop := bootUntilEntered(t, f, entered)
	for _, name := range []string{"b", "c", "d"} {
		f.Enqueue("ns/" + name)
	}
	if depth, _ := gathered(t, reg, "operatorkit_workqueue_depth"); depth != 3 {
		t.Fatalf("depth while a reconciliation runs = %v, want 3", depth)
	}
	pollUntil(t, "the running reconciliation in the queue's gauges", func() bool {
		v, _ := gathered(t, reg, "operatorkit_workqueue_longest_running_processor_seconds")
		return v > 0
	})
	stop(func() { close(proceed) })
	for _, name := range []string{"operatorkit_workqueue_depth", "operatorkit_workqueue_unfinished_work_seconds", "operatorkit_workqueue_longest_running_processor_seconds"} {
		if v, _ := gathered(t, reg, name); v != 0 {
			t.Errorf("%s after Boot returned = %v, want 0", name, v)
		}
	}
}

// opaque hides the crud resource it wraps from the wrappers (it is no
// crud.OpsWrapper), as a wrapper of the user's own does: the retry wrapper
// then retries its whole EnsureCreated, and the trace holds the steps of
// every attempt.
type opaque struct{ resource.Interface }

// TestErrorStepIsTheFailingResources: errors_total and the Ready reason
// name the resource whose error ended the reconciliation and the step of
// that resource that failed. They named the first failed step anywhere in
// the trace: an earlier resource's step that failed once and was retried
// with success ("b" counted under "get current state", which only "a" has,
// and the reason "BGetCurrentStateFailed"), or an earlier attempt's step
// of the failing resource itself.
func TestErrorStepIsTheFailingResources(t *testing.T) {
	// retried is the crud resource name, failing as errs say, under a
	// retry of its whole EnsureCreated (one retry).
	retried := func(name string, errs map[string][]error) resource.Interface {
		c, err := crud.New(crud.Config{Ops: &crudtest.Ops{Resource: name, Patch: updatePatch(), Errors: errs}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := retry.New(retry.Config{Resource: opaque{c}, BackOffFactory: func() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, 1) }})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	flake, bad := errors.New("flake"), retry.Permanent(errors.New("bad spec"))
	tests := []struct {
		name      string
		resources []resource.Interface
		wantStep  string
		reason    string
	}{
		{
			name: "a plain resource after one that recovered",
			resources: []resource.Interface{
				retried("a", map[string][]error{crud.StepGetCurrentState: {flake, nil}}),
				&funcResource{name: "b", create: func(context.Context, any) error { return bad }},
			},
			wantStep: resource.OperationEnsureCreated, reason: "BEnsureCreatedFailed",
		},
		{
			name: "a crud step after an earlier attempt's failure",
			resources: []resource.Interface{
				retried("b", map[string][]error{crud.StepGetCurrentState: {flake, nil}, crud.StepApplyUpdateChange: {bad}}),
			},
			wantStep: crud.StepApplyUpdateChange, reason: "BApplyUpdateChangeFailed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := New(Config{Name: "op", Informer: informertest.New(object("x", 1, nil)), ResourceRouter: testRouter(t, nil, tt.resources...), DisableFinalizers: true})
			if err != nil {
				t.Fatal(err)
			}
			boot(t, f)
			pollUntil(t, "the failure", func() bool { return len(f.Traces("ns/x")) > 0 })
			tr := f.Traces("ns/x")[0]
			if tr.Result != ResultPermanent {
				t.Fatalf("result = %q, want %q", tr.Result, ResultPermanent)
			}
			pollUntil(t, "the error counted", func() bool { return testutil.ToFloat64(f.metrics.errors.WithLabelValues("b", tt.wantStep)) == 1 })
			for _, s := range []string{crud.StepGetCurrentState, crud.StepApplyUpdateChange, resource.OperationEnsureCreated} {
				if n := testutil.ToFloat64(f.metrics.errors.WithLabelValues("b", s)); s != tt.wantStep && n != 0 {
					t.Errorf("errors_total{resource=b,step=%q} = %v, want 0 (b failed in %q)", s, n, tt.wantStep)
				}
			}
			err = &ExecutionError{Resource: "b", Operation: resource.OperationEnsureCreated, Err: bad}
			if got := failureReason(err, &tr); got != tt.reason {
				t.Errorf("failureReason() = %q, want %q", got, tt.reason)
			}
		})
	}
}

func updatePatch() *crud.Patch {
	p := crud.NewPatch()
	p.SetUpdateChange("u")
	return p
}

// TestErrorStepOfALongRetry: a resource retried so many times in one
// reconciliation that its trace reaches maxLiveSteps (each attempt records
// its steps) is still counted in errors_total, and named in the Ready
// reason written, by the crud step whose failure ended it. The trace at its
// limit kept its first steps and only the last one recorded: the failed
// crud step gave its place to the resource's "ensure created" that
// followed it (and that to the status write, before errors_total was
// counted), and a step of an early attempt was blamed ("get current
// state", "BGetCurrentStateFailed").
func TestErrorStepOfALongRetry(t *testing.T) {
	const attempts = 300 // more steps than maxLiveSteps allows
	flakes := make([]error, attempts-1)
	for i := range flakes {
		flakes[i] = errors.New("flake")
	}
	bad := retry.Permanent(errors.New("bad spec"))
	c, err := crud.New(crud.Config{Ops: &crudtest.Ops{Resource: "b", Patch: updatePatch(), Errors: map[string][]error{
		crud.StepGetCurrentState: append(flakes, nil), crud.StepApplyUpdateChange: {bad},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := retry.New(retry.Config{Resource: opaque{c}, BackOffFactory: func() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, attempts) }})
	if err != nil {
		t.Fatal(err)
	}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r))
	tr := st.traces(t, 1)[0]
	if tr.Result != ResultPermanent || tr.DroppedSteps == 0 {
		t.Fatalf("result = %q with %d steps dropped, want %q with steps dropped", tr.Result, tr.DroppedSteps, ResultPermanent)
	}
	pollUntil(t, "the error counted", func() bool { return testutil.CollectAndCount(st.f.metrics.errors) > 0 })
	if n := testutil.ToFloat64(st.f.metrics.errors.WithLabelValues("b", crud.StepApplyUpdateChange)); n != 1 {
		t.Errorf("errors_total{resource=b,step=%q} = %v, want 1 (%q: %v, %q: %v)", crud.StepApplyUpdateChange, n,
			crud.StepGetCurrentState, testutil.ToFloat64(st.f.metrics.errors.WithLabelValues("b", crud.StepGetCurrentState)),
			resource.OperationEnsureCreated, testutil.ToFloat64(st.f.metrics.errors.WithLabelValues("b", resource.OperationEnsureCreated)))
	}
	var reason string
	pollUntil(t, "the Ready condition written", func() bool {
		if c := meta.FindStatusCondition(conditionsOf(t, st.server.get()), "Ready"); c != nil {
			reason = c.Reason
			return true
		}
		return false
	})
	if want := "BApplyUpdateChangeFailed"; reason != want {
		t.Errorf("Ready reason = %q, want %q", reason, want)
	}
}
