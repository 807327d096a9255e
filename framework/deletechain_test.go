package framework

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
	"github.com/operatorkit/operatorkit/trace"
)

// deleteFunc is a resource whose EnsureDeleted runs del.
type deleteFunc struct {
	name  string
	del   func(ctx context.Context) error
	calls atomic.Int64
}

func (d *deleteFunc) Name() string                             { return d.name }
func (d *deleteFunc) EnsureCreated(context.Context, any) error { return nil }
func (d *deleteFunc) EnsureDeleted(ctx context.Context, _ any) error {
	d.calls.Add(1)
	if d.del == nil {
		return nil
	}
	return d.del(ctx)
}

var thingsGVRForDeletes = schema.GroupVersionResource{Group: "test.operatorkit.io", Version: "v1", Resource: "things"}

// deletingThing returns an object in deletion with the finalizer of the
// Framework "op", and a fake dynamic client holding it.
func deletingThing(name string) (*unstructured.Unstructured, *dynamicfake.FakeDynamicClient) {
	obj := object(name, 1, nil)
	now := metav1.Now()
	obj.SetDeletionTimestamp(&now)
	obj.SetFinalizers([]string{FinalizerPrefix + "op"})
	obj.SetUID(k8stypes.UID("uid-" + name))
	obj.SetResourceVersion("3")
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{thingsGVRForDeletes: "ThingList"}, obj.DeepCopy())
	return obj, dc
}

// TestCanceledDeleteChainKeepsTheFinalizer: a resource that cancels the
// delete chain (waiting for another controller, say) stops the resources
// after it; the Framework must not remove its finalizer then, or their
// EnsureDeleted never runs: the delete would be lost.
func TestCanceledDeleteChainKeepsTheFinalizer(t *testing.T) {
	var waiting atomic.Bool
	waiting.Store(true)
	waiter := &deleteFunc{name: "waiter", del: func(ctx context.Context) error {
		if waiting.Load() {
			reconciliationcanceledcontext.SetCanceled(ctx)
		}
		return nil
	}}
	cleaner := &deleteFunc{name: "cleaner"}
	obj, dc := deletingThing("gone")
	f, err := New(Config{Name: "op", Informer: informertest.New(obj), ResourceRouter: testRouter(t, nil, waiter, cleaner), Client: dc, Resource: thingsGVRForDeletes})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "the first delete reconciliation", func() bool { return len(f.Traces("ns/gone")) > 0 })
	if got := f.Traces("ns/gone")[0].Result; got != ResultFinalizerKept {
		t.Errorf("result of the canceled delete chain = %q, want %q", got, ResultFinalizerKept)
	}
	cur, err := dc.Resource(thingsGVRForDeletes).Namespace("ns").Get(context.Background(), "gone", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cur.GetFinalizers()) == 0 {
		t.Fatalf("finalizer removed although the chain was canceled before %q ran (%d runs)", cleaner.name, cleaner.calls.Load())
	}
	// Retried with backoff: once the waiter lets it through, the rest of
	// the chain runs and the finalizer goes.
	waiting.Store(false)
	pollUntil(t, "the chain's end and the finalizer's removal", func() bool {
		cur, err := dc.Resource(thingsGVRForDeletes).Namespace("ns").Get(context.Background(), "gone", metav1.GetOptions{})
		return err == nil && len(cur.GetFinalizers()) == 0
	})
	if cleaner.calls.Load() == 0 {
		t.Errorf("finalizer removed, %q never ran", cleaner.name)
	}
}

// TestRequeueAfterZero: SetRequeueAfter(ctx, 0) asks for another
// reconciliation at once (through the object's backoff), on the update
// chain and on a delete chain that keeps the finalizer; it was dropped.
func TestRequeueAfterZero(t *testing.T) {
	t.Run("update", func(t *testing.T) {
		var calls atomic.Int64
		r := &funcResource{name: "poll", create: func(ctx context.Context, obj any) error {
			if calls.Add(1) < 3 {
				requeuecontext.SetRequeueAfter(ctx, 0)
			}
			return nil
		}}
		f, err := New(Config{Name: "op", Informer: informertest.New(object("a", 1, nil)), ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true})
		if err != nil {
			t.Fatal(err)
		}
		boot(t, f)
		pollUntil(t, "three reconciliations, two of them asked for by SetRequeueAfter(ctx, 0)", func() bool { return calls.Load() >= 3 })
	})
	t.Run("finalizer kept", func(t *testing.T) {
		var calls atomic.Int64
		r := &deleteFunc{name: "teardown", del: func(ctx context.Context) error {
			if calls.Add(1) == 1 {
				reconciliationcanceledcontext.SetCanceled(ctx)
				requeuecontext.SetRequeueAfter(ctx, 0)
			}
			return nil
		}}
		obj, dc := deletingThing("gone")
		f, err := New(Config{Name: "op", Informer: informertest.New(obj), ResourceRouter: testRouter(t, nil, r), Client: dc, Resource: thingsGVRForDeletes})
		if err != nil {
			t.Fatal(err)
		}
		boot(t, f)
		pollUntil(t, "the delete chain again, and the finalizer removed", func() bool {
			cur, err := dc.Resource(thingsGVRForDeletes).Namespace("ns").Get(context.Background(), "gone", metav1.GetOptions{})
			return calls.Load() >= 2 && err == nil && len(cur.GetFinalizers()) == 0
		})
	})
}

// TestGoneObjectLeavesNoState: a deleted object (a tombstone, here with
// finalizers off) whose delete chain fails for good is not retried; the
// Framework must not keep its last state, failure mark or resource set
// for ever.
func TestGoneObjectLeavesNoState(t *testing.T) {
	r := &deleteFunc{name: "teardown", del: func(context.Context) error {
		return retry.Permanent(errors.New("bad spec"))
	}}
	f, _ := deletedWithoutFinalizer(t, r)
	pollUntil(t, "the delete chain's end", func() bool { return len(f.Traces("ns/gone")) == 2 })
	if got := f.Traces("ns/gone")[1].Result; got != ResultPermanent {
		t.Errorf("delete chain result = %q, want %q", got, ResultPermanent)
	}
	// The worker's bookkeeping ends after the trace is stored.
	pollUntil(t, "the state of the gone object dropped", func() bool {
		f.state.mu.Lock()
		defer f.state.mu.Unlock()
		return len(f.state.objects) == 0
	})
	if _, _, _, perSet := f.state.stats(); perSet["v1"] != 0 {
		t.Errorf("objects per resource set after the object is gone: %v, want v1=0", perSet)
	}
}

// TestWriteOfTheDeleteChainIsNotExpectedOfAGoneObject: when the delete
// event overtakes the answer to the finalizer patch, the object is forgotten
// while its reconciliation still runs; the end of that reconciliation must
// not leave an expected write of it behind.
func TestWriteOfTheDeleteChainIsNotExpectedOfAGoneObject(t *testing.T) {
	r := &deleteFunc{name: "teardown", del: func(ctx context.Context) error {
		resourceversioncontext.SetResourceVersion(ctx, "5") // a write of the object, as a Guard's lock
		return nil
	}}
	obj, dc := deletingThing("gone")
	obj.SetResourceVersion("5")
	inf := informertest.New(obj)
	dc.PrependReactor("patch", "things", func(clienttesting.Action) (bool, runtime.Object, error) {
		_ = inf.Delete(obj) // the watch's DELETED event first
		return true, obj.DeepCopy(), nil
	})
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), Client: dc, Resource: thingsGVRForDeletes})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "the delete chain's end", func() bool {
		tr := f.Traces("ns/gone")
		return len(tr) == 1 && tr[0].Result == ResultSuccess
	})
	pollUntil(t, "nothing kept of the gone object", func() bool {
		f.state.mu.Lock()
		defer f.state.mu.Unlock()
		return len(f.state.objects) == 0
	})
}

// guardedDelete deletes a database in its EnsureDeleted under a Guard,
// which writes the object's status (the lock) before the task.
type guardedDelete struct{ tasks *atomic.Int64 }

func (guardedDelete) Name() string                             { return "db" }
func (guardedDelete) EnsureCreated(context.Context, any) error { return nil }
func (g guardedDelete) EnsureDeleted(ctx context.Context, _ any) error {
	if c, ok := conditioncontext.Get(ctx, "DatabaseDeleted"); ok && c.Status == metav1.ConditionTrue {
		return nil
	}
	return conditioncontext.Guard(ctx, "DatabaseDeleted", "Deleting", func(context.Context) (metav1.ConditionStatus, string, string, error) {
		g.tasks.Add(1)
		return metav1.ConditionTrue, "Deleted", "gone", nil
	})
}

// TestFinalizerPatchAfterAWriteOfTheDeleteChain: a delete chain that
// writes the object (a Guard's lock) left it at a newer resourceVersion
// than the cached one; the finalizer patch must carry that version, not
// the cached one, or it conflicts and the chain runs again.
func TestFinalizerPatchAfterAWriteOfTheDeleteChain(t *testing.T) {
	var tasks atomic.Int64
	obj := object("a", 1, nil)
	now := metav1.Now()
	obj.SetDeletionTimestamp(&now)
	obj.SetFinalizers([]string{FinalizerPrefix + "op"})
	st := newStatusTest(t, obj, nil, testRouter(t, nil, guardedDelete{&tasks}), func(c *Config) { c.DisableFinalizers = false })
	tr := st.traces(t, 1)[0]
	if tr.Result != ResultSuccess {
		t.Fatalf("delete reconciliation: result %s %q (finalizers on the server %v, task ran %d times)", tr.Result, tr.Error, st.server.get().GetFinalizers(), tasks.Load())
	}
	if fs := st.server.get().GetFinalizers(); len(fs) != 0 {
		t.Errorf("finalizers on the server after the delete chain = %v, want none", fs)
	}
}

// TestTombstoneCarriesADeletionTimestamp: an object deleted without the
// Framework's finalizer never had a deletionTimestamp; its delete chain
// sees one all the same, so that resources that tell the delete chain by
// it (resource/child skips Desired then) do, and the informer's object is
// left as it was.
func TestTombstoneCarriesADeletionTimestamp(t *testing.T) {
	seen := make(chan bool, 1)
	_, obj := deletedWithoutFinalizer(t, &deleteObserver{seen: seen})
	select {
	case withTimestamp := <-seen:
		if !withTimestamp {
			t.Error("the delete chain of an object deleted without finalizers saw no deletionTimestamp")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the delete chain did not run within 30 s")
	}
	if obj.GetDeletionTimestamp() != nil {
		t.Error("the informer's object was changed")
	}
}

// deleteObserver reports whether its EnsureDeleted saw a deletionTimestamp.
type deleteObserver struct{ seen chan bool }

func (d *deleteObserver) Name() string                             { return "observer" }
func (d *deleteObserver) EnsureCreated(context.Context, any) error { return nil }
func (d *deleteObserver) EnsureDeleted(_ context.Context, obj any) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	select {
	case d.seen <- acc.GetDeletionTimestamp() != nil:
	default:
	}
	return nil
}

// TestDeleteAfterLeavingEverySet: an object relabelled to a release no set
// handles, then deleted, runs the delete chain of the set that last
// reconciled it; it stayed Terminating for good (no set, so no delete
// chain, so the finalizer stayed), with its children.
func TestDeleteAfterLeavingEverySet(t *testing.T) {
	cleaner := &deleteFunc{name: "cleaner"}
	_, finalized := deleteAfterLeavingEverySet(t, testRouter(t, router.LabelIs("release", "1", false), cleaner), "1")
	pollUntil(t, "the delete chain and the finalizer's removal", finalized)
	if cleaner.calls.Load() == 0 {
		t.Error("the finalizer was removed without the delete chain")
	}
}

// deleteAfterLeavingEverySet boots a Framework with finalizers and the
// router rt, lets it reconcile the object ns/web labelled release=release,
// then relabels the object to release 3, which no set handles, and deletes
// it. finalized reports whether the Framework's finalizer is gone.
func deleteAfterLeavingEverySet(t *testing.T, rt *router.Router, release string) (f *Framework, finalized func() bool) {
	t.Helper()
	obj, dc := deletingThing("web")
	obj.SetDeletionTimestamp(nil)
	obj.SetLabels(map[string]string{"release": release})
	inf := informertest.New(obj)
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: rt, Client: dc, Resource: thingsGVRForDeletes})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "the first reconciliation", func() bool { return len(f.Traces("ns/web")) > 0 })

	gone := obj.DeepCopy()
	gone.SetLabels(map[string]string{"release": "3"})
	now := metav1.Now()
	gone.SetDeletionTimestamp(&now)
	gone.SetResourceVersion("4")
	if err := inf.Update(gone); err != nil {
		t.Fatal(err)
	}
	return f, func() bool {
		cur, err := dc.Resource(thingsGVRForDeletes).Namespace("ns").Get(context.Background(), "web", metav1.GetOptions{})
		return err == nil && len(cur.GetFinalizers()) == 0
	}
}

// deletedWithoutFinalizer boots a Framework without finalizers over the
// one resource r, lets it reconcile the object ns/gone once, and deletes
// that object (returned) from the informer: its delete chain runs from the
// tombstone.
func deletedWithoutFinalizer(t *testing.T, r resource.Interface) (*Framework, *unstructured.Unstructured) {
	t.Helper()
	obj := object("gone", 1, nil)
	inf := informertest.New(obj)
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "the first reconciliation", func() bool { return len(f.Traces("ns/gone")) == 1 })
	if err := inf.Delete(obj); err != nil {
		t.Fatal(err)
	}
	return f, obj
}

// TestObjectGoneBeforeTheFinalizerPatchLeavesNoMark: an object that
// vanishes during its delete chain (someone else removed the Framework's
// finalizer) gets a 404 for the finalizer patch. When its delete event came
// before the patch, the Framework reconciles its tombstone and must then keep
// nothing of it, not even the mark of its UID as finalized, which no later
// delete event would consume. When the delete event comes after the 404, it
// consumes the mark, and the delete chain does not run again.
func TestObjectGoneBeforeTheFinalizerPatchLeavesNoMark(t *testing.T) {
	for _, eventFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "delete event before the patch", false: "delete event after the 404"}[eventFirst], func(t *testing.T) {
			obj, dc := deletingThing("gone")
			inf := informertest.New(obj)
			var once atomic.Bool
			r := &deleteFunc{name: "teardown", del: func(context.Context) error {
				if !once.CompareAndSwap(false, true) {
					return nil
				}
				if err := dc.Tracker().Delete(thingsGVRForDeletes, "ns", "gone"); err != nil {
					return err
				}
				if eventFirst {
					return inf.Delete(obj) // the watch's DELETED event, before the patch
				}
				return nil
			}}
			var patches atomic.Int64
			dc.PrependReactor("patch", "things", func(clienttesting.Action) (bool, runtime.Object, error) {
				patches.Add(1)
				return false, nil, nil // to the tracker, which no longer has the object: 404
			})
			f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), Client: dc, Resource: thingsGVRForDeletes})
			if err != nil {
				t.Fatal(err)
			}
			boot(t, f)
			if eventFirst {
				pollUntil(t, "the delete chain, then its tombstone's", func() bool {
					tr := f.Traces("ns/gone")
					return len(tr) == 2 && tr[0].Result == ResultSuccess && tr[1].Result == ResultSuccess
				})
			} else {
				pollUntil(t, "the delete chain", func() bool {
					tr := f.Traces("ns/gone")
					return len(tr) == 1 && tr[0].Result == ResultSuccess
				})
				if err := inf.Delete(obj); err != nil {
					t.Fatal(err)
				}
				if _, ok := f.state.tombstone("ns/gone"); ok {
					t.Error("the delete event after the 404 found no mark: the delete chain runs again from a tombstone")
				}
			}
			if n := patches.Load(); n != 1 {
				t.Errorf("finalizer patches = %d, want 1", n)
			}
			pollUntil(t, "nothing kept of the gone object", func() bool {
				f.state.mu.Lock()
				defer f.state.mu.Unlock()
				return len(f.state.objects) == 0
			})
			f.state.mu.Lock()
			defer f.state.mu.Unlock()
			if n := len(f.state.finalizedUID); n != 0 {
				t.Errorf("%d objects still marked finalized after the object is gone and forgotten, want none", n)
			}
		})
	}
}

// TestDeleteAfterLeavingEveryUnnamedSet: set names are optional; an
// object relabelled out of every set of a router whose sets have none, then
// deleted, runs the delete chain of the set that last reconciled it, not
// another one's, as with named sets. The last set was remembered by name,
// which unnamed sets do not have: the object stayed Terminating for good.
func TestDeleteAfterLeavingEveryUnnamedSet(t *testing.T) {
	var sets []*router.ResourceSet
	var cleaners []*deleteFunc
	for _, release := range []string{"1", "2"} {
		cleaner := &deleteFunc{name: "cleaner"}
		set, err := router.NewResourceSet(router.ResourceSetConfig{Handles: router.LabelIs("release", release, false), Resources: []resource.Interface{cleaner}})
		if err != nil {
			t.Fatal(err)
		}
		sets, cleaners = append(sets, set), append(cleaners, cleaner)
	}
	rt, err := router.New(router.Config{ResourceSets: sets})
	if err != nil {
		t.Fatal(err)
	}
	f, finalized := deleteAfterLeavingEverySet(t, rt, "2")
	unroutable := func() bool {
		return slices.ContainsFunc(f.Traces("ns/web"), func(tr trace.Trace) bool { return tr.Result == ResultNoResourceSet })
	}
	pollUntil(t, "the deletion's reconciliation", func() bool { return finalized() || unroutable() })
	if !finalized() {
		t.Fatalf("the deleted object found no resource set (result %s) and keeps the finalizer: it stays Terminating, though a set reconciled it in this process", ResultNoResourceSet)
	}
	if cleaners[1].calls.Load() == 0 || cleaners[0].calls.Load() != 0 {
		t.Errorf("delete chains run: release 1's %d times, release 2's %d times; want release 2's (the set that reconciled the object) only",
			cleaners[0].calls.Load(), cleaners[1].calls.Load())
	}
}
