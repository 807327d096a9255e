package framework

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/informer/informertest"
)

// hookedInformer is an informertest.Informer whose next Get, once armed,
// runs a hook after it read the store: the informer's events delivered
// between a worker's read of the cache and what the worker does next.
type hookedInformer struct {
	*informertest.Informer
	mu   sync.Mutex
	hook func()
}

func (i *hookedInformer) arm(hook func()) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.hook = hook
}

func (i *hookedInformer) Get(key string) (any, bool, error) {
	obj, exists, err := i.Informer.Get(key)
	i.mu.Lock()
	hook := i.hook
	i.hook = nil
	i.mu.Unlock()
	if hook != nil {
		hook()
	}
	return obj, exists, err
}

// reconcileOnce runs one reconciliation of key, as a worker does, without
// the queue.
func reconcileOnce(f *Framework, key string) outcome {
	rctx := newReconcileContext(context.Background(), time.Now().Add(time.Minute))
	defer rctx.stop()
	return f.reconcile(rctx, rctx, key)
}

// TestOwnWriteEventBetweenReadAndStaleCheck: the reconciliation before
// wrote the object (resourceVersion 2, a status write); the next one, woken
// by something else (a child), reads the cache while it still shows
// version 1, and the write's watch event is delivered right after that
// read, before the reconciliation checks whether its copy is stale. The
// event must neither be dropped as an echo of a write that no longer
// matters nor let the reconciliation run from version 1: it is deferred
// and runs again at once, from version 2.
func TestOwnWriteEventBetweenReadAndStaleCheck(t *testing.T) {
	v1 := object("a", 1, nil)
	v1.SetUID("uid-a")
	inf := &hookedInformer{Informer: informertest.New(v1)}
	var mu sync.Mutex
	var read []string
	var wrote atomic.Bool
	r := &funcResource{name: "status", create: func(ctx context.Context, obj any) error {
		mu.Lock()
		read = append(read, obj.(*unstructured.Unstructured).GetResourceVersion())
		mu.Unlock()
		if wrote.CompareAndSwap(false, true) {
			resourceversioncontext.SetResourceVersion(ctx, "2") // the status write's answer
		}
		return nil
	}}
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	if o := reconcileOnce(f, "ns/a"); o.result != ResultSuccess {
		t.Fatalf("first reconciliation: %s %v", o.result, o.err)
	}

	v2 := v1.DeepCopy()
	v2.SetResourceVersion("2")
	v2.SetAnnotations(nil) // a status write: nothing the update predicate looks at
	inf.arm(func() {
		if err := inf.Update(v2); err != nil {
			t.Error(err)
		}
		f.UpdateFunc(v1, v2) // the handler, after the store
	})
	o := reconcileOnce(f, "ns/a")
	mu.Lock()
	got := append([]string(nil), read...)
	mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("the reconciliation woken by a child ran its chain on version %v, a copy that does not show its own last write (2)", got[1:])
	}
	if o.result != ResultStale || o.requeueAfter != 0 {
		t.Fatalf("reconciliation that read version 1 after the write's event: %s after %s, want %s at once (nothing else wakes it)", o.result, o.requeueAfter, ResultStale)
	}
	if o := reconcileOnce(f, "ns/a"); o.result != ResultSuccess {
		t.Fatalf("the reconciliation after: %s %v", o.result, o.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(read) != 2 || read[1] != "2" {
		t.Errorf("versions reconciled = %v, want [1 2]", read)
	}
}

// TestTombstoneOfObjectRecreatedBeforeItsReconciliation: an object deleted
// without the Framework's finalizer (DisableFinalizers) left a tombstone;
// before a worker took its key, an object of the same name (a new UID) was
// created. The delete chain of the deleted object must still run, and the
// new object be reconciled after it.
func TestTombstoneOfObjectRecreatedBeforeItsReconciliation(t *testing.T) {
	old := object("a", 1, nil)
	old.SetUID("uid-old")
	inf := informertest.New(old)
	d := &deleteCounter{n: new(atomic.Int64)}
	created := &funcResource{name: "created"}
	set := testRouter(t, nil, d, created)
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: set, DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	if o := reconcileOnce(f, "ns/a"); o.result != ResultSuccess {
		t.Fatalf("first reconciliation: %s %v", o.result, o.err)
	}
	if err := inf.Delete(old); err != nil {
		t.Fatal(err)
	}
	f.DeleteFunc(old)
	recreated := object("a", 1, nil)
	recreated.SetUID("uid-new")
	recreated.SetResourceVersion("5")
	if err := inf.Add(recreated); err != nil {
		t.Fatal(err)
	}
	f.AddFunc(recreated) // coalesces with the tombstone's key in the queue

	reconcileOnce(f, "ns/a")
	if n := d.n.Load(); n != 1 {
		t.Fatalf("delete chain ran %d times for the deleted object, want 1", n)
	}
	if _, ok := f.state.tombstone("ns/a"); ok {
		t.Error("tombstone kept after its delete chain ran")
	}
	before := created.calls.Load()
	if o := reconcileOnce(f, "ns/a"); o.result != ResultSuccess || created.calls.Load() != before+1 {
		t.Errorf("reconciliation of the new object: %s %v, chain ran %d times, want success once", o.result, o.err, created.calls.Load()-before)
	}
}

// TestDeleteEventBetweenTombstoneLookupAndForget replays, on the object
// state, the calls of a reconciliation whose object is not in the cache
// (the informer's store drops it before its handler gets the delete event)
// in the losing order: the reconciliation finds no tombstone, the delete
// event then leaves one (DeleteFunc, which queues the key again), and the
// reconciliation forgets the key it found uncached. The tombstone must
// survive, or the reconciliation queued for it finds nothing and the
// object's delete chain never runs.
func TestDeleteEventBetweenTombstoneLookupAndForget(t *testing.T) {
	s := newObjectState()
	obj := object("a", 1, nil)
	if !s.begin("ns/a") {
		t.Fatal("not begun")
	}
	if _, ok := s.tombstone("ns/a"); ok {
		t.Fatal("tombstone before the delete event")
	}
	s.setTombstone("ns/a", obj) // DeleteFunc, on the informer's goroutine
	s.forgetUncached("ns/a")    // the reconciliation, which found none
	s.end("ns/a", "", "", 0, false)
	if _, ok := s.tombstone("ns/a"); !ok {
		t.Fatal("the tombstone of the delete event was forgotten with the uncached key: its delete chain never runs")
	}
}
