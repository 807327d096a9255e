package framework

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/statuscontext"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/router"
)

// BenchmarkNoOpReconciliation measures one reconciliation of a steady
// object by the Framework, from the worker's call to its end (cache read,
// routing, finalizer check, trace, metrics, state, and the status decision
// when Conditions is on) over two crud resources whose Ops change nothing:
// the Framework's cost per no-op reconciliation, without the queue.
func BenchmarkNoOpReconciliation(b *testing.B) {
	for _, conditions := range []bool{false, true} {
		b.Run(fmt.Sprintf("conditions=%v", conditions), func(b *testing.B) {
			benchmarkNoOps(b, conditions, 1)
		})
	}
	// As the steady phase of bench/ reconciles them: 1,000 objects in turn,
	// more than the trace store keeps, each cold in the CPU's caches.
	b.Run("conditions=true/objects=1000", func(b *testing.B) {
		benchmarkNoOps(b, true, 1000)
	})
	// A third resource sets a status field (statuscontext) to the value
	// the object holds already: what comparing it costs. Without it the
	// cases above pay nothing for status fields.
	b.Run("conditions=true/field=set", func(b *testing.B) {
		run := noOpReconcilerWith(b, true, 1, true)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if o := run(i); o.result != ResultSuccess {
				b.Fatalf("reconciliation: %s %v", o.result, o.err)
			}
			i++
		}
	})
}

func benchmarkNoOps(b *testing.B, conditions bool, objects int) {
	run := noOpReconciler(b, conditions, objects)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if o := run(i); o.result != ResultSuccess {
			b.Fatalf("reconciliation: %s %v", o.result, o.err)
		}
		i++
	}
}

// TestNoOpReconciliationAllocations: a no-op reconciliation of a steady
// object by the Framework allocates 4 times (the reconciliation's context,
// the trace head, a signal per crud resource), as BenchmarkNoOpReconciliation
// reports; a change that adds one on this path (an error variable whose
// address escapes, a closure) fails here rather than only in a benchmark's
// figures.
func TestNoOpReconciliationAllocations(t *testing.T) {
	run := noOpReconciler(t, true, 100)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		if o := run(i); o.result != ResultSuccess {
			t.Fatalf("reconciliation: %s %v", o.result, o.err)
		}
		i++
	})
	limit := 4.0
	if raceEnabled {
		limit = 4.6 // the race detector drops some of sync.Pool's buffers (the trace's steps)
	}
	if allocs > limit {
		t.Errorf("a no-op reconciliation allocates %.2f times, want at most 4", allocs)
	}
}

// noOpReconciler returns a func that reconciles, in turn, one of objects
// steady objects over two crud resources whose Ops change nothing.
func noOpReconciler(b testing.TB, conditions bool, objects int) func(i int) outcome {
	return noOpReconcilerWith(b, conditions, objects, false)
}

// noOpReconcilerWith is noOpReconciler, with a third resource that sets
// status.other to the value the objects hold when setField is true.
func noOpReconcilerWith(b testing.TB, conditions bool, objects int, setField bool) func(i int) outcome {
	var rs []resource.Interface
	for i := range 2 {
		r, err := crud.New(crud.Config{Ops: crudtest.Nop(fmt.Sprintf("r%d", i))})
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
	}
	if setField {
		rs = append(rs, &funcResource{name: "field", create: func(ctx context.Context, _ any) error {
			statuscontext.Set(ctx, "other", "steady")
			return nil
		}})
	}
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, Resources: rs})
	if err != nil {
		b.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		b.Fatal(err)
	}
	inf := informertest.New()
	config := Config{Name: "op", Informer: inf, ResourceRouter: rt, Resource: thingsGVR,
		Client: newStatusServer(object("a", 1, nil)).client(), Conditions: conditions}
	f, err := New(config)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, objects)
	for i := range keys {
		obj := steadyThing(fmt.Sprintf("a%05d", i), f.finalizer)
		if setField {
			obj.Status.Other = "steady"
		}
		if err := inf.Add(runtime.Object(obj)); err != nil {
			b.Fatal(err)
		}
		keys[i] = "ns/" + obj.Name
	}
	ctx := context.Background()
	run := func(key string) outcome {
		rctx := newReconcileContext(ctx, time.Now().Add(time.Minute))
		o := f.reconcile(rctx, rctx, key)
		rctx.stop()
		return o
	}
	for _, key := range keys {
		if o := run(key); o.result != ResultSuccess || o.err != nil {
			b.Fatalf("first reconciliation of %s: %s %v", key, o.result, o.err)
		}
	}
	return func(i int) outcome { return run(keys[i%len(keys)]) }
}

// BenchmarkNoOpReconciliationQueued is BenchmarkNoOpReconciliation through
// the work queue, as a resync or bench/'s steady phase runs it: 1,000 steady
// objects enqueued (Framework.Enqueue) and reconciled by a booted
// Framework's worker, over one resource that does nothing, with
// Conditions. It adds to the reconciliation the queue's work and the
// hand-off to the worker.
func BenchmarkNoOpReconciliationQueued(b *testing.B) {
	var wg sync.WaitGroup
	r := &funcResource{name: "noop", create: func(ctx context.Context, obj any) error { wg.Done(); return nil }}
	set, _ := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, Resources: []resource.Interface{r}})
	rt, _ := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	inf := informertest.New()
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: rt, Resource: thingsGVR,
		Client: newStatusServer(object("a", 1, nil)).client(), Conditions: true, Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 1000)
	for i := range keys {
		obj := steadyThing(fmt.Sprintf("a%05d", i), f.finalizer)
		wg.Add(1)
		if err := inf.Add(runtime.Object(obj)); err != nil {
			b.Fatal(err)
		}
		keys[i] = "ns/" + obj.Name
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- f.Boot(ctx) }()
	wg.Wait()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(len(keys), b.N-done)
		wg.Add(n)
		for _, k := range keys[:n] {
			f.Enqueue(k)
		}
		wg.Wait()
		done += n
	}
	b.StopTimer()
	cancel()
	<-stopped
}

// steadyThing returns the Thing ns/name at rest for the no-op benchmarks:
// generation 3 observed, the finalizer given, Ready True of set "v1".
func steadyThing(name, finalizer string) *typedWithStatus {
	obj := &typedWithStatus{}
	obj.APIVersion, obj.Kind = "test.operatorkit.io/v1", "Thing"
	obj.Namespace, obj.Name, obj.Generation, obj.ResourceVersion = "ns", name, 3, "7"
	obj.Finalizers = []string{finalizer}
	obj.Status.ObservedGeneration = 3
	obj.Status.Conditions = []metav1.Condition{
		{Type: conditioncontext.Ready, Status: metav1.ConditionTrue, Reason: ReasonSucceeded, Message: readyMessageOf("v1"), ObservedGeneration: 3, LastTransitionTime: metav1.Unix(100, 0)},
	}
	return obj
}
