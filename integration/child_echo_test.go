package integration

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
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

// TestChildRecreatedAfterFinalizedDelete: a child that the desired state
// stops naming is deleted, but a finalizer of someone else's holds it; the
// owner then wants it back while it is still terminating (nothing to write:
// the terminating child matches). When the finalizer goes and the child
// with it, the delete event wakes the owner, which creates the child again:
// that delete is not the echo of the operator's own delete, which only
// marked the child for deletion a while ago.
func TestChildRecreatedAfterFinalizedDelete(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	const manager = "finalized-child"
	op, err := operatorpkg.New(operatorpkg.Config{RESTConfig: env.Config(), Name: "finalized-child", Logger: log.NewNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	widgets, err := op.Informer(informer.Config{GVR: widgetGVR, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := op.Informer(informer.Config{GVR: configMapGVR, Namespace: ns, ObjectType: &corev1.ConfigMap{},
		LabelSelector: child.LabelManagedBy + "=" + manager})
	if err != nil {
		t.Fatal(err)
	}
	r, err := child.New(child.Config[*unstructured.Unstructured, *corev1.ConfigMap]{
		Name:   "configmap",
		Client: child.Typed(op.Kubernetes().CoreV1().ConfigMaps),
		Cache:  cms,
		Desired: func(_ context.Context, w *unstructured.Unstructured) (*corev1.ConfigMap, error) {
			if w.GetAnnotations()["drop"] == "true" {
				return nil, nil
			}
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.GetName()}, Data: map[string]string{"owner": w.GetName()}}, nil
		},
		FieldManager: manager,
		Writes:       op.OwnWrites(),
	})
	if err != nil {
		t.Fatal(err)
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
	t.Cleanup(func() { _ = stop() })

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
	// The owner wants it back; its reconciliation finds the terminating
	// child matching and writes nothing.
	rv := annotate("")
	poll(t, "the owner reconciled after it wants the child back", func(context.Context) (bool, error) {
		return seen.rv.Load() >= rv, nil
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
