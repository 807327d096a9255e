package framework

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/trace"
)

// TestRequeueAtOnceContinuesTheBackoff pins what the package documentation
// and requeuecontext's say of SetRequeueAfter(ctx, 0) after failures: the
// success that asks for it does not reset the object's backoff, which goes
// on from where the failures left it (here: an hour after 10 ms), so that
// a resource that fails and asks in turn still backs off.
func TestRequeueAtOnceContinuesTheBackoff(t *testing.T) {
	r := &funcResource{name: "poll"}
	r.create = func(ctx context.Context, _ any) error {
		if r.calls.Load() == 1 {
			return errors.New("first failure")
		}
		requeuecontext.SetRequeueAfter(ctx, 0)
		return nil
	}
	f, err := New(Config{Name: "op", Informer: informertest.New(object("a", 1, nil)), ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true,
		BackOffFactory: func() backoff.BackOff { return &stepBackOff{} }})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "the success that asks for a requeue at once", func() bool { return r.calls.Load() == 2 })
	pollUntil(t, "its requeue through the object's backoff", func() bool { return f.queue.NumRequeues("ns/a") == 2 })
	if n := r.calls.Load(); n != 2 {
		t.Fatalf("resource calls = %d, want 2: the requeue waits the backoff's second step (an hour)", n)
	}
}

// TestRequeueOfAFinishedDeleteChain pins what requeuecontext says of a
// delete chain: the Framework reads the request only when the chain keeps
// the finalizer; a chain that finished, whose finalizer is removed, has
// nothing to come back for.
func TestRequeueOfAFinishedDeleteChain(t *testing.T) {
	r := &deleteFunc{name: "teardown", del: func(ctx context.Context) error {
		requeuecontext.SetRequeueAfter(ctx, time.Millisecond)
		return nil
	}}
	obj, dc := deletingThing("gone")
	f, err := New(Config{Name: "op", Informer: informertest.New(obj), ResourceRouter: testRouter(t, nil, r), Client: dc, Resource: thingsGVRForDeletes})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "the finalizer removed", func() bool {
		cur, err := dc.Resource(thingsGVRForDeletes).Namespace("ns").Get(context.Background(), "gone", metav1.GetOptions{})
		return err == nil && len(cur.GetFinalizers()) == 0
	})
	pollUntil(t, "the delete chain's trace", func() bool { return len(f.Traces("ns/gone")) > 0 })
	if tr := f.Traces("ns/gone")[0]; tr.Result != ResultSuccess || tr.RequeueAfter != 0 {
		t.Fatalf("finished delete chain: result %q, requeue after %v; want %q and none", tr.Result, tr.RequeueAfter, ResultSuccess)
	}
}

// TestPlanErrorOperation pins ExecutionError.Operation's documentation:
// Plan's errors name the operation "plan".
func TestPlanErrorOperation(t *testing.T) {
	r := &planFails{}
	c, err := crud.New(crud.Config{Ops: r})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Plan(context.Background(), object("a", 1, nil), []resource.Interface{c})
	var ee *ExecutionError
	if !errors.As(err, &ee) || ee.Operation != "plan" || ee.Resource != "p" || !errors.Is(err, ErrExecutionFailed) {
		t.Fatalf("Plan() = %#v, want an ExecutionError of resource p, operation plan", err)
	}
}

// TestChainSignalsThatAreNotAdded pins the package documentation's
// exceptions among the signals ProcessUpdate adds: conditioncontext and
// resourceversioncontext.
func TestChainSignalsThatAreNotAdded(t *testing.T) {
	r := &funcResource{name: "a", create: func(ctx context.Context, _ any) error {
		resourceversioncontext.SetResourceVersion(ctx, "7")
		conditioncontext.Set(ctx, "DatabaseReady", metav1.ConditionTrue, "Created", "")
		if _, ok := resourceversioncontext.ResourceVersion(ctx); ok {
			return errors.New("ProcessUpdate added resourceversioncontext")
		}
		if _, ok := conditioncontext.Get(ctx, "DatabaseReady"); ok {
			return errors.New("ProcessUpdate added conditioncontext")
		}
		return nil
	}}
	if err := ProcessUpdate(context.Background(), nil, []resource.Interface{r}); err != nil {
		t.Fatal(err)
	}
}

type planFails struct{ planOps }

func (planFails) Name() string { return "p" }
func (planFails) GetCurrentState(context.Context, any) (any, error) {
	return nil, errors.New("unreachable")
}

// TestDefaultBackOffFactoryIsNotTheDefault pins DefaultBackOffFactory's
// documentation: Config.BackOffFactory defaults to DefaultRequeueBackOff
// (a first retry after about 50 ms, not 500), and DefaultBackOffFactory's
// stop, given as Config.BackOffFactory, holds its last interval.
func TestDefaultBackOffFactoryIsNotTheDefault(t *testing.T) {
	f, err := New(Config{Name: "op", Informer: informertest.New(), ResourceRouter: testRouter(t, nil, &funcResource{name: "a"}), DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := f.limiter.When("ns/a"); d < 40*time.Millisecond || d > 60*time.Millisecond {
		t.Fatalf("first retry of the default after %v, want about %v (DefaultRequeueBackOff)", d, DefaultRequeueInitialInterval)
	}
	held := newBackOffRateLimiter(func() backoff.BackOff {
		return backoff.WithMaxRetries(&backoff.ConstantBackOff{Interval: 30 * time.Second}, 10)
	})
	for range 10 {
		held.When("ns/a")
	}
	if d := held.When("ns/a"); d != 30*time.Second {
		t.Fatalf("retry after the backoff stopped: %v, want its last interval, 30s", d)
	}
}

// TestTraceOfAStoppedChain pins the package documentation on tracing: of a
// canceled chain, the resource it stops before is recorded as canceled, and
// none after it.
func TestTraceOfAStoppedChain(t *testing.T) {
	cancels := &funcResource{name: "a", create: func(ctx context.Context, _ any) error {
		reconciliationcanceledcontext.SetCanceled(ctx)
		return nil
	}}
	tr := &trace.Trace{}
	err := ProcessUpdate(trace.NewContext(context.Background(), tr), nil, []resource.Interface{cancels, &funcResource{name: "b"}, &funcResource{name: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range tr.Snapshot().Steps {
		got = append(got, s.Resource+" "+string(s.Outcome))
	}
	if want := []string{"a done", "b canceled"}; !slices.Equal(got, want) {
		t.Fatalf("trace = %v, want %v", got, want)
	}
}
