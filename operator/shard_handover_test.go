package operator

import (
	"context"
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/router"
)

// handover is a replica "a" of the ring "r" handing over the thing ns/x: its
// sharder, whose metadata client is a fake API server holding ns/x, and one
// Framework reconciling ns/x from an in-memory informer. The test calls
// the drain handler with the events of its choice, in the order of its
// choice.
type handover struct {
	t       *testing.T
	s       *sharder
	f       *framework.Framework
	inf     *informertest.Informer
	handler func(obj any) // an add or update of ns/x
	deleted func(obj any) // its delete

	mu     sync.Mutex
	labels map[string]string // of ns/x on the API server; nil once deleted
	rv     int
	gate   atomic.Pointer[patchGate]

	calls, running, deletes atomic.Int64
	block                   atomic.Pointer[chan struct{}] // reconciliations wait on it while set
	// overlaps counts the hand-overs that removed the labels (the object
	// went to another replica) while a reconciliation of it ran here.
	overlaps atomic.Int64
}

// patchGate holds the next label patch: it reports its arrival, waits for
// proceed, is applied, reports that, and waits for respond before it
// answers.
type patchGate struct{ arrived, proceed, applied, respond chan struct{} }

func (h *handover) holdNextPatch() *patchGate {
	g := &patchGate{arrived: make(chan struct{}), proceed: make(chan struct{}), applied: make(chan struct{}), respond: make(chan struct{})}
	h.gate.Store(g)
	return g
}

func (h *handover) owned() map[string]string {
	return map[string]string{h.s.shardLabel: "a"}
}

func (h *handover) drained() map[string]string {
	return map[string]string{h.s.shardLabel: "a", h.s.drainLabel: "true"}
}

// set writes the labels of ns/x on the API server, as the assigner does.
func (h *handover) set(labels map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.labels = maps.Clone(labels) // nil: deleted
	h.rv++
}

func (h *handover) serverLabels() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.labels)
}

// thing is ns/x with labels, as an informer delivers it.
func (h *handover) thing(labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("test.operatorkit.io/v1")
	u.SetKind("Thing")
	u.SetNamespace("ns")
	u.SetName("x")
	u.SetUID("uid-x")
	u.SetResourceVersion("1")
	u.SetLabels(maps.Clone(labels))
	return u
}

func (h *handover) metadataLocked() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "x", UID: "uid-x", ResourceVersion: strconv.Itoa(h.rv), Labels: maps.Clone(h.labels),
	}}
}

// patch applies a JSON patch of the labels as the API server does: a
// failed test is Invalid (422).
func (h *handover) patch(action k8stesting.Action) (bool, runtime.Object, error) {
	pa := action.(k8stesting.PatchAction)
	g := h.gate.Swap(nil)
	if g != nil {
		close(g.arrived)
		<-g.proceed
	}
	obj, err := h.applyPatch(pa.GetPatch())
	if g != nil {
		close(g.applied)
		<-g.respond
	}
	return true, obj, err
}

func (h *handover) applyPatch(body []byte) (runtime.Object, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	gr := things.GroupResource()
	if h.labels == nil {
		return nil, apierrors.NewNotFound(gr, "x")
	}
	var ops []struct {
		Op, Path string
		Value    any
	}
	if err := json.Unmarshal(body, &ops); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	labels := maps.Clone(h.labels)
	for _, op := range ops {
		key := strings.NewReplacer("~1", "/", "~0", "~").Replace(strings.TrimPrefix(op.Path, "/metadata/labels/"))
		switch op.Op {
		case "test":
			if v, ok := labels[key]; !ok || v != op.Value {
				return nil, apierrors.NewInvalid(schemaKind, "x", field.ErrorList{field.Invalid(field.NewPath("metadata", "labels", key), op.Value, "test failed")})
			}
		case "remove":
			delete(labels, key)
		}
	}
	if _, ours := labels[h.s.shardLabel]; !ours && h.running.Load() > 0 {
		h.overlaps.Add(1)
	}
	h.labels = labels
	h.rv++
	return h.metadataLocked(), nil
}

var schemaKind = things.GroupVersion().WithKind("Thing").GroupKind()

func (h *handover) get(k8stesting.Action) (bool, runtime.Object, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.labels == nil {
		return true, nil, apierrors.NewNotFound(things.GroupResource(), "x")
	}
	return true, h.metadataLocked(), nil
}

// handoverResource counts its reconciliations and waits on the block of
// its handover while one is set.
type handoverResource struct{ h *handover }

func (r handoverResource) Name() string { return "r" }
func (r handoverResource) EnsureCreated(ctx context.Context, obj any) error {
	r.h.calls.Add(1)
	r.h.running.Add(1)
	defer r.h.running.Add(-1)
	if b := r.h.block.Load(); b != nil {
		<-*b
	}
	return nil
}
func (r handoverResource) EnsureDeleted(ctx context.Context, obj any) error {
	r.h.deletes.Add(1)
	return nil
}

var _ resource.Interface = handoverResource{}

// newHandoverOperator returns the sharded Operator of replica "a" and
// its handover, whose fake API server holds ns/x with the shard label "a".
func newHandoverOperator(t *testing.T) (*Operator, *handover) {
	t.Helper()
	o, err := New(Config{RESTConfig: restConfig(), Name: "op", Registry: prometheus.NewRegistry(),
		Sharding: &Sharding{Resources: []schema.GroupVersionResource{things}, Ring: "r", Identity: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	h := &handover{t: t, s: o.shard}
	md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	md.PrependReactor("patch", "things", h.patch)
	md.PrependReactor("get", "things", h.get)
	h.s.md = md
	h.labels = h.owned()
	return o, h
}

// oneResource returns a router whose one set handles everything with r.
func oneResource(t *testing.T, r resource.Interface) *router.Router {
	t.Helper()
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, Resources: []resource.Interface{r}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// newHandover starts the Framework, waits for its first reconciliation of
// ns/x (shard label "a" on the API server and in the informer), and
// returns the handover.
func newHandover(t *testing.T) *handover {
	t.Helper()
	_, h := newHandoverOperator(t)
	h.inf = informertest.New(h.thing(h.owned()))
	var err error
	h.f, err = framework.New(framework.Config{Name: "things", Informer: h.inf, ResourceRouter: oneResource(t, handoverResource{h}), DisableFinalizers: true, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	booted := make(chan error, 1)
	go func() { booted <- h.f.Boot(ctx) }()
	hs := h.s.drainHandler(ctx, func(metav1.Object) []*framework.Framework { return []*framework.Framework{h.f} }, things, "things")
	h.handler = func(obj any) { hs.OnUpdate(nil, obj) }
	h.deleted = hs.OnDelete
	t.Cleanup(func() {
		if b := h.block.Swap(nil); b != nil {
			close(*b)
		}
		cancel()
		h.s.handWG.Wait()
		if err := <-booted; err != nil {
			t.Errorf("Boot() = %v", err)
		}
	})
	h.pollUntil("the first reconciliation", func() bool { return h.calls.Load() == 1 && h.running.Load() == 0 })
	return h
}

func (h *handover) pollUntil(what string, cond func() bool) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		h.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// skips counts the skipped reconciliations of ns/x (a run of them is
// folded into one trace).
func (h *handover) skips() int {
	n := 0
	for _, tr := range h.f.Traces("ns/x") {
		if tr.Result == framework.ResultSkipped {
			n += 1 + tr.Repeats
		}
	}
	return n
}

// settle enqueues ns/x and waits until a reconciliation of it ran or was
// skipped: one that something queued before (a Reclaim) ran by then.
func (h *handover) settle(calls int64) {
	h.t.Helper()
	h.f.Enqueue("ns/x")
	h.pollUntil("a reconciliation of ns/x run or skipped", func() bool { return h.calls.Load() > calls || h.skips() > 0 })
}

// handedOver fails the test unless the object's labels are gone from the
// API server: it went to another replica.
func (h *handover) handedOver() {
	h.t.Helper()
	if _, ours := h.serverLabels()[h.s.shardLabel]; ours {
		h.t.Fatalf("labels after the hand-over: %v, want the object handed over", h.serverLabels())
	}
}

// noReconciliationSince waits for the hand-overs to end and fails the
// test if ns/x was reconciled here since it had been reconciled calls
// times.
func (h *handover) noReconciliationSince(calls int64) {
	h.t.Helper()
	h.s.handWG.Wait()
	h.settle(calls)
	if n := h.calls.Load() - calls; n != 0 {
		h.t.Errorf("%d reconciliations here of an object handed over to another replica", n)
	}
}

// TestHandOverTakenBackAndDrainedAgainKeepsTheRelease: the assigner takes
// a drain back and drains the object again while its owner's hand-over
// sends its patch. The event of the drain taken back must not reclaim the
// object under the running hand-over: that started a reconciliation here,
// and the hand-over's patch, whose test passed again, gave the object to
// another replica while it ran.
func TestHandOverTakenBackAndDrainedAgainKeepsTheRelease(t *testing.T) {
	h := newHandover(t)
	calls := h.calls.Load()
	block := make(chan struct{})
	h.block.Store(&block)

	h.set(h.drained())
	g := h.holdNextPatch()
	close(g.respond)
	h.handler(h.thing(h.drained()))
	<-g.arrived // released; its patch is on its way
	h.set(h.owned())
	h.handler(h.thing(h.owned())) // the drain taken back...
	h.set(h.drained())
	h.handler(h.thing(h.drained())) // ...and set again
	h.settle(calls)
	close(g.proceed)
	<-g.applied
	if _, ours := h.serverLabels()[h.s.shardLabel]; ours {
		t.Fatalf("labels after the hand-over: %v, want the object handed over", h.serverLabels())
	}
	if n := h.overlaps.Load(); n != 0 {
		t.Errorf("the object was handed over while a reconciliation of it ran here")
	}
	if n := h.calls.Load() - calls; n != 0 {
		t.Errorf("%d reconciliations started here after the object was released for its hand-over", n)
	}
}

// TestHandOverDrainedAgainAfterItsTestFailed: the drain is taken back, so
// the hand-over's patch fails its test, and the object is drained again
// before the hand-over has ended. The second drain's event came while the
// hand-over ran, and must not be lost: nothing else would hand the object
// over (its owner keeps it, drained, until the next resync, or for ever
// without resyncs).
func TestHandOverDrainedAgainAfterItsTestFailed(t *testing.T) {
	h := newHandover(t)
	h.set(h.drained())
	g := h.holdNextPatch()
	h.handler(h.thing(h.drained()))
	<-g.arrived
	h.set(h.owned())
	h.handler(h.thing(h.owned()))
	close(g.proceed)
	<-g.applied // failed its test
	h.set(h.drained())
	h.handler(h.thing(h.drained()))
	close(g.respond)
	h.s.handWG.Wait()
	if _, ours := h.serverLabels()[h.s.shardLabel]; ours {
		t.Errorf("labels after the hand-overs ended: %v, want the object handed over", h.serverLabels())
	}
}

// TestHandOverReplayedAfterItsPatchDoesNotReclaim: after a hand-over, the
// informer delivers the drained object again before its delete event (a
// resync, or a relist served before the labels' removal). The second
// hand-over's test fails, as the object is gone to another replica; that
// must not reclaim it here, where the informer still holds it.
func TestHandOverReplayedAfterItsPatchDoesNotReclaim(t *testing.T) {
	h := newHandover(t)
	h.set(h.drained())
	h.handler(h.thing(h.drained()))
	h.s.handWG.Wait()
	h.handedOver()
	calls := h.calls.Load()
	h.handler(h.thing(h.drained())) // replayed
	h.noReconciliationSince(calls)
}

// TestHandOverEventsAfterItsPatchDoNotReclaim: the drain is taken back and
// set again before the hand-over's patch, whose test then passes, and the
// informer delivers those two events only after the hand-over ended. The
// event of the drain taken back must not reclaim the object, which its
// informer's cache still holds while its new owner reconciles it.
func TestHandOverEventsAfterItsPatchDoNotReclaim(t *testing.T) {
	h := newHandover(t)
	h.set(h.drained())
	g := h.holdNextPatch()
	close(g.respond)
	h.handler(h.thing(h.drained()))
	<-g.arrived
	h.set(h.owned())
	h.set(h.drained())
	close(g.proceed)
	h.s.handWG.Wait()
	h.handedOver()
	calls := h.calls.Load()
	h.handler(h.thing(h.owned())) // late
	h.handler(h.thing(h.drained()))
	h.noReconciliationSince(calls)
}

// TestHandOverObjectBackBeforeItsDeleteEvent: an object handed over comes
// back to this replica and its informer shows it without a delete event
// (a relist after a broken watch that missed the labels' removal): the
// event of it, ours and not drained, reclaims it.
func TestHandOverObjectBackBeforeItsDeleteEvent(t *testing.T) {
	h := newHandover(t)
	h.set(h.drained())
	h.handler(h.thing(h.drained()))
	h.s.handWG.Wait()
	calls := h.calls.Load()
	h.set(h.owned()) // assigned here again
	h.handler(h.thing(h.owned()))
	h.pollUntil("a reconciliation of the object back here", func() bool { return h.calls.Load() > calls })
}

// TestHandOverEndsWithTheDeleteEvent: a hand-over is kept until the
// object's delete event, and forgotten then, also when that event came
// before the patch's answer.
func TestHandOverEndsWithTheDeleteEvent(t *testing.T) {
	h := newHandover(t)
	kept := func() int {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		return len(h.s.handing)
	}
	h.set(h.drained())
	h.handler(h.thing(h.drained()))
	h.s.handWG.Wait()
	if n := kept(); n != 1 {
		t.Errorf("%d hand-overs kept before the delete event, want 1", n)
	}
	h.deleted(h.thing(nil))
	if n := kept(); n != 0 {
		t.Errorf("%d hand-overs kept after the delete event", n)
	}

	h.set(h.drained()) // back, and drained again
	g := h.holdNextPatch()
	close(g.proceed)
	h.handler(h.thing(h.drained()))
	<-g.applied
	h.deleted(cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: h.thing(nil)}) // before the answer
	close(g.respond)
	h.s.handWG.Wait()
	if n := kept(); n != 0 {
		t.Errorf("%d hand-overs kept after a delete event that came before the patch's answer", n)
	}
}

// TestHandOverReleasesTheFrameworksOfEveryInformerOfTheObject: two sharded
// informers of one resource hold the object (one over every namespace, one
// over its namespace), each with a Framework. The hand-over that the drain
// event of either starts must release both Frameworks before its patch:
// releasing only its own informer's, it gave the object away while the
// other Framework reconciled it.
func TestHandOverReleasesTheFrameworksOfEveryInformerOfTheObject(t *testing.T) {
	o, h := newHandoverOperator(t)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{things: "ThingList"}, h.thing(h.owned()))
	copyWatchedObjects(dyn)
	all, err := o.Informer(informer.Config{GVR: things, Client: dyn})
	if err != nil {
		t.Fatal(err)
	}
	inNS, err := o.Informer(informer.Config{GVR: things, Namespace: "ns", Client: dyn})
	if err != nil {
		t.Fatal(err)
	}
	quick, err := framework.New(framework.Config{Name: "quick", Informer: all, ResourceRouter: oneResource(t, &crudless{}), DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	h.block.Store(&block)
	slow, err := framework.New(framework.Config{Name: "slow", Informer: inNS, ResourceRouter: oneResource(t, handoverResource{h}), DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		if b := h.block.Swap(nil); b != nil {
			close(*b)
		}
		cancel()
		h.s.handWG.Wait()
		wg.Wait()
	})
	for _, si := range o.order {
		wg.Go(func() { _ = si.inf.Run(ctx) })
		if si.sharded {
			h.s.informed = append(h.s.informed, si)
		}
	}
	for _, f := range []*framework.Framework{quick, slow} {
		wg.Go(func() {
			if err := f.Boot(ctx); err != nil {
				t.Errorf("Boot() = %v", err)
			}
		})
	}
	if err := h.s.watchDrains(ctx, []*framework.Framework{quick, slow}); err != nil {
		t.Fatal(err)
	}
	// Both reconcile the object before its drain. (A test that ended
	// before the quick one's Boot registered its handler failed it: the
	// informers had stopped.)
	h.pollUntil("the Frameworks booted", func() bool { return isClosed(quick.Booted()) && isClosed(slow.Booted()) })
	h.pollUntil("the slow Framework reconciling", func() bool { return h.running.Load() == 1 })

	g := h.holdNextPatch()
	close(g.respond)
	h.set(h.drained())
	if _, err := dyn.Resource(things).Namespace("ns").Update(ctx, h.thing(h.drained()), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Either a hand-over sends its patch, or both informers' hand-overs
	// run, each waiting for the slow Framework's reconciliation before
	// its patch.
	arrived := func() bool {
		select {
		case <-g.arrived:
			return true
		default:
			return false
		}
	}
	h.pollUntil("the hand-overs", func() bool {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		return arrived() || len(h.s.handing) == 2
	})
	close(g.proceed)
	if arrived() {
		<-g.applied
	}
	close(*h.block.Swap(nil))
	h.pollUntil("the hand-over", func() bool { _, ours := h.serverLabels()[h.s.shardLabel]; return !ours })
	if n := h.overlaps.Load(); n != 0 {
		t.Errorf("the object was handed over while the Framework of its other informer reconciled it")
	}
}

// isClosed reports whether c is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// copyWatchedObjects makes each watch of dyn get copies of the objects it
// holds. The fake's tracker sends its own stored object to a watch that
// starts from a resourceVersion older than the object's (the object
// changed between an informer's list and its watch), the same object to
// every such watch: the informers' transforms (which drop managedFields
// in place, as they may with the API server's fresh objects) then wrote
// an object that other informers, their handlers and the fake read.
func copyWatchedObjects(dyn *dynamicfake.FakeDynamicClient) {
	dyn.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if a, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = a.ListOptions
		}
		w, err := dyn.Tracker().Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			e.Object = e.Object.DeepCopyObject()
			return e, true
		}), nil
	})
}

// crudless is a resource that does nothing.
type crudless struct{}

func (crudless) Name() string                             { return "nothing" }
func (crudless) EnsureCreated(context.Context, any) error { return nil }
func (crudless) EnsureDeleted(context.Context, any) error { return nil }

// TestHandOverOfAnObjectDeletedMeanwhile: an object is deleted (it has no
// finalizer) while it is drained, and its delete event reaches the
// Framework before the hand-over releases it: the Framework holds its last
// state for its delete chain, still queued. The hand-over's patch finds
// the object gone, which is no hand-over: the Framework must get the
// object back to run its delete chain. Kept released, the delete chain
// never ran and the object counted as waiting for a reconciliation for
// ever.
func TestHandOverOfAnObjectDeletedMeanwhile(t *testing.T) {
	h := newHandover(t)
	block := make(chan struct{})
	h.block.Store(&block)
	other := h.thing(h.owned())
	other.SetName("y")
	if err := h.inf.Add(other); err != nil {
		t.Fatal(err)
	}
	h.pollUntil("the worker busy with another object", func() bool { return h.running.Load() == 1 })
	if err := h.inf.Delete(h.thing(h.owned())); err != nil { // queued behind
		t.Fatal(err)
	}
	h.set(nil)
	h.handler(h.thing(h.drained())) // the drain's event, after the delete's to the Framework
	h.s.handWG.Wait()
	h.deleted(h.thing(h.drained()))
	close(*h.block.Swap(nil))
	h.pollUntil("the reconciliation of the deleted object", func() bool { return h.deletes.Load() > 0 || h.skips() > 0 })
	if n := h.deletes.Load(); n != 1 {
		t.Errorf("the delete chain of the object deleted during its hand-over ran %d times, want 1", n)
	}
}
