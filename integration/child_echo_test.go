package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

// lastSeenResource records the resourceVersion of the last owner its chain
// reached: once it holds a version, the resources before it have finished
// the reconciliation of that version.
type lastSeenResource struct{ rv atomic.Uint64 }

func (r *lastSeenResource) Name() string { return "last-seen" }
func (r *lastSeenResource) EnsureCreated(_ context.Context, obj any) error {
	if v, err := strconv.ParseUint(obj.(*unstructured.Unstructured).GetResourceVersion(), 10, 64); err == nil {
		r.rv.Store(v)
	}
	return nil
}
func (r *lastSeenResource) EnsureDeleted(context.Context, any) error { return nil }

// runChildOperator runs, until the test ends, an Operator named name whose
// Framework reconciles the widgets of ns with a child resource (wrapped by
// wrap, when not nil) that keeps a ConfigMap named after each widget,
// unless the widget has the annotation drop=true, and then a
// lastSeenResource; Owns wakes a widget for its ConfigMap. It returns the
// ConfigMaps' informer and the lastSeenResource.
func runChildOperator(t *testing.T, ns, name string, rc *rest.Config, wrap func(resource.Interface) resource.Interface) (*operatorpkg.SharedInformer, *lastSeenResource) {
	t.Helper()
	ensureWidgetCRD(t)
	op, err := operatorpkg.New(operatorpkg.Config{RESTConfig: rc, Name: name, Logger: log.NewNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	widgets, err := op.Informer(informer.Config{GVR: widgetGVR, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := op.Informer(informer.Config{GVR: configMapGVR, Namespace: ns, ObjectType: &corev1.ConfigMap{},
		LabelSelector: child.LabelManagedBy + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := child.New(child.Config[*unstructured.Unstructured, *corev1.ConfigMap]{
		Name:   "configmap",
		Client: child.Typed(op.Kubernetes().CoreV1().ConfigMaps),
		Cache:  cms,
		Desired: func(_ context.Context, w *unstructured.Unstructured) (*corev1.ConfigMap, error) {
			if w.GetAnnotations()["drop"] == "true" {
				return nil, nil
			}
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.GetName()}, Data: map[string]string{"owner": w.GetName()}}, nil
		},
		FieldManager: name,
		Writes:       op.OwnWrites(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var r resource.Interface = cr
	if wrap != nil {
		r = wrap(r)
	}
	seen := &lastSeenResource{}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "", r, seen)}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.New(framework.Config{Name: "widgets", Informer: widgets, ResourceRouter: rt,
		Client: op.Dynamic(), Resource: widgetGVR, Registerer: op.Registry(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Add(f); err != nil {
		t.Fatal(err)
	}
	if err := op.Owns(f, widgetKind, cms); err != nil {
		t.Fatal(err)
	}
	stop, _ := runOperator(op)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run() = %v", err)
		}
	})
	return cms, seen
}

// seenResource wraps a resource and records the resourceVersion of the
// last owner whose EnsureCreated it returned from, whatever it decided
// (a child resource that waits stops the chain before a lastSeenResource).
type seenResource struct {
	resource.Interface
	seen lastSeenResource
}

func (r *seenResource) EnsureCreated(ctx context.Context, obj any) error {
	err := r.Interface.EnsureCreated(ctx, obj)
	_ = r.seen.EnsureCreated(ctx, obj)
	return err
}

// TestChildRecreatedAfterFinalizedDelete: a child that the desired state
// stops naming is deleted, but a finalizer of someone else's holds it; the
// owner then wants it back while it is still terminating (nothing to write:
// the resource waits for the terminating child to go). When the finalizer
// goes and the child with it, the delete event wakes the owner, which
// creates the child again: that delete is not the echo of the operator's
// own delete, which only marked the child for deletion a while ago.
func TestChildRecreatedAfterFinalizedDelete(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	seen := &seenResource{}
	runChildOperator(t, ns, "finalized-child", env.Config(), func(r resource.Interface) resource.Interface {
		seen.Interface = r
		return seen
	})

	kc := kubeClient(t)
	wc := widgetClient(t, ns)
	createWidget(t, newWidget(ns, "w", "", nil))
	var first *corev1.ConfigMap
	poll(t, "the child created", func(ctx context.Context) (bool, error) {
		cm, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "w", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		first = cm
		return err == nil, err
	})
	// Someone else's finalizer holds the child.
	finalizer := []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`)
	if _, err := kc.CoreV1().ConfigMaps(ns).Patch(t.Context(), "w", types.MergePatchType, finalizer, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	annotate := func(value string) uint64 {
		t.Helper()
		var v any = value
		if value == "" {
			v = nil
		}
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{"drop": v}}})
		w, err := wc.Patch(t.Context(), "w", types.MergePatchType, body, metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rv, _ := strconv.ParseUint(w.GetResourceVersion(), 10, 64)
		return rv
	}
	// The owner stops wanting the child: the operator deletes it, and the
	// finalizer keeps it terminating.
	annotate("true")
	poll(t, "the child marked for deletion", func(ctx context.Context) (bool, error) {
		cm, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "w", metav1.GetOptions{})
		return err == nil && cm.DeletionTimestamp != nil, err
	})
	// The owner wants it back; its reconciliation finds the child
	// terminating, writes nothing and waits for it to go.
	rv := annotate("")
	poll(t, "the owner reconciled after it wants the child back", func(context.Context) (bool, error) {
		return seen.seen.rv.Load() >= rv, nil
	})
	// The finalizer goes, and the child with it.
	if _, err := kc.CoreV1().ConfigMaps(ns).Patch(t.Context(), "w", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the child created again", func(ctx context.Context) (bool, error) {
		cm, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "w", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && cm.UID != first.UID && cm.DeletionTimestamp == nil, err
	})
}

// TestChildOfAPreviousOwnerOfTheSameName: an owner deleted (its delete
// chain deletes its child) and created again under the same name gets its
// child, also when its first reconciliation still finds the previous
// owner's child in the cache (the watch lags: here it is held until then).
// The delete event of that child is the operator's own delete, which wakes
// no owner; the child is the previous owner's, not another controller's,
// so the reconciliation is retried until the cache shows it gone.
func TestChildOfAPreviousOwnerOfTheSameName(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	gate := &watchGate{}
	rc := rest.CopyConfig(env.Config())
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return gatedTransport{rt: rt, gate: gate, path: "/configmaps"}
	})
	failed := &failingOwners{}
	cms, _ := runChildOperator(t, ns, "previous-owner", rc, func(r resource.Interface) resource.Interface {
		failed.Interface = r
		return failed
	})
	t.Cleanup(gate.resume) // before the operator stops: its watch must not stay held

	kc := kubeClient(t)
	wc := widgetClient(t, ns)
	createWidget(t, newWidget(ns, "w", "", nil))
	poll(t, "the child in the cache", func(context.Context) (bool, error) {
		_, ok, err := cms.Get(ns + "/w")
		return ok, err
	})
	gate.pause()
	if err := wc.Delete(t.Context(), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the widget gone", func(ctx context.Context) (bool, error) {
		_, err := wc.Get(ctx, "w", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	again := createWidget(t, newWidget(ns, "w", "", nil))
	poll(t, "a reconciliation of the new widget that found the previous widget's child", func(context.Context) (bool, error) {
		return failed.failed(again.GetUID()), nil
	})
	gate.resume()
	poll(t, "the new widget's child", func(ctx context.Context) (bool, error) {
		cm, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "w", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		ref := metav1.GetControllerOf(cm)
		return ref != nil && ref.UID == again.GetUID(), nil
	})
}

// failingOwners is a resource that records the UIDs of the owners whose
// EnsureCreated failed.
type failingOwners struct {
	resource.Interface
	mu   sync.Mutex
	uids map[types.UID]bool
}

func (f *failingOwners) EnsureCreated(ctx context.Context, obj any) error {
	err := f.Interface.EnsureCreated(ctx, obj)
	if err != nil {
		f.mu.Lock()
		if f.uids == nil {
			f.uids = map[types.UID]bool{}
		}
		f.uids[obj.(*unstructured.Unstructured).GetUID()] = true
		f.mu.Unlock()
	}
	return err
}

func (f *failingOwners) failed(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.uids[uid]
}

// watchGate holds the events of watches while paused.
type watchGate struct {
	mu     sync.Mutex
	paused chan struct{} // closed by resume; nil while not paused
}

func (g *watchGate) pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused == nil {
		g.paused = make(chan struct{})
	}
}

func (g *watchGate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused != nil {
		close(g.paused)
		g.paused = nil
	}
}

func (g *watchGate) wait() {
	g.mu.Lock()
	ch := g.paused
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// gatedTransport passes the bytes of the watches of collections whose path
// ends in path through gate.
type gatedTransport struct {
	rt   http.RoundTripper
	gate *watchGate
	path string
}

func (t gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err == nil && req.URL.Query().Get("watch") == "true" && strings.HasSuffix(req.URL.Path, t.path) {
		resp.Body = gatedBody{ReadCloser: resp.Body, gate: t.gate}
	}
	return resp, err
}

// gatedBody holds what it read while its gate is paused.
type gatedBody struct {
	io.ReadCloser
	gate *watchGate
}

func (b gatedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.gate.wait()
	return n, err
}
