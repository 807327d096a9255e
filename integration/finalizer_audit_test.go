package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/router"
)

// deletedOrGone waits until widget ns/name has a deletionTimestamp or is gone.
func deletedOrGone(ctx context.Context, t *testing.T, ns, name string) error {
	return wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		w, err := widgetClient(t, ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && w.GetDeletionTimestamp() != nil, err
	})
}

// TestDeletedWhileTheUpdateChainRuns: a Widget deleted while its first
// update chain runs, after its ConfigMap was read as missing and before it is
// created: the create lands after the delete, and the delete chain that
// follows must delete it, with finalizers and without (a tombstone).
func TestDeletedWhileTheUpdateChainRuns(t *testing.T) {
	t.Parallel()
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("disableFinalizers=%v", disable), func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			ops := newConfigMapOps("configmap", "cm")
			var once sync.Once
			entered := make(chan struct{})
			ops.beforeApplyCreate = func(ctx context.Context) error {
				once.Do(func() { close(entered) })
				return deletedOrGone(ctx, t, ns, "w1")
			}
			startStatusFramework(t, ns, statusOptions{disableFinalizers: disable}, resourceSet(t, "", crudResource(t, ops)))
			createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
			select {
			case <-entered:
			case <-time.After(60 * time.Second):
				t.Fatal("the update chain did not reach ApplyCreateChange")
			}
			if err := widgetClient(t, ns).Delete(t.Context(), "w1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitWidgetGone(t, ns, "w1")
			waitConfigMapData(t, ns, "w1-cm", nil)
		})
	}
}

// TestDeletedBeforeTheFirstReconciliation: a Widget deleted after the
// worker read it from the cache but before the finalizer is added (its
// routing is held), with a finalizer of someone else (it stays
// Terminating) and without (it is gone at once), with finalizers and
// without: no ConfigMap is left, and the Widget goes once the other
// finalizer does.
func TestDeletedBeforeTheFirstReconciliation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ other, disable bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		other := tc.other
		t.Run(fmt.Sprintf("otherFinalizer=%v,disableFinalizers=%v", tc.other, tc.disable), func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			ops := newConfigMapOps("configmap", "cm")
			var once sync.Once
			entered, deleted := make(chan struct{}), make(chan struct{})
			set, err := router.NewResourceSet(router.ResourceSetConfig{
				Name: "default",
				Handles: func(obj any) bool {
					once.Do(func() {
						close(entered)
						<-deleted
					})
					return true
				},
				Resources: []resource.Interface{crudResource(t, ops)},
			})
			if err != nil {
				t.Fatal(err)
			}
			startStatusFramework(t, ns, statusOptions{disableFinalizers: tc.disable}, set)
			w := newWidget(ns, "w1", "", map[string]string{"a": "1"})
			if other {
				w.SetFinalizers([]string{"test.operatorkit.io/other"})
			}
			created := createWidget(t, w)
			select {
			case <-entered:
			case <-time.After(60 * time.Second):
				t.Fatal("no reconciliation of w1")
			}
			if err := widgetClient(t, ns).Delete(t.Context(), "w1", metav1.DeleteOptions{}); err != nil {
				close(deleted)
				t.Fatal(err)
			}
			close(deleted)
			if other {
				// Reconciled again with the deletion, our finalizer never added.
				poll(t, "w1 reconciled in deletion", func(ctx context.Context) (bool, error) {
					cur, err := widgetClient(t, ns).Get(ctx, "w1", metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					if slices.Contains(cur.GetFinalizers(), "operatorkit.io/widgets") {
						return false, fmt.Errorf("finalizer added to an object in deletion: %v", cur.GetFinalizers())
					}
					return cur.GetDeletionTimestamp() != nil, nil
				})
				patch := fmt.Sprintf(`{"metadata":{"finalizers":null,"uid":%q}}`, created.GetUID())
				if _, err := widgetClient(t, ns).Patch(t.Context(), "w1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			waitWidgetGone(t, ns, "w1")
			waitConfigMapData(t, ns, "w1-cm", nil)
		})
	}
}

// TestDeletedInATerminatingNamespace: the namespace of two Widgets is
// deleted (testenv runs no namespace controller, so it stays Terminating
// and the test deletes the Widgets itself, as that controller would): w1
// was reconciled before, w2 was created while no Framework ran and its
// ConfigMap cannot be created any more (the namespace refuses new content).
// Both delete chains run and both Widgets go.
func TestDeletedInATerminatingNamespace(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ops := newConfigMapOps("configmap", "cm")
	f := startStatusFramework(t, ns, statusOptions{}, resourceSet(t, "", crudResource(t, ops)))
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "1"})
	f.stop()
	createWidget(t, newWidget(ns, "w2", "", map[string]string{"b": "2"}))
	if err := kubeClient(t).CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	startStatusFramework(t, ns, statusOptions{}, resourceSet(t, "", crudResource(t, newConfigMapOps("configmap", "cm"))))
	poll(t, "w2 Ready False (its ConfigMap refused)", func(ctx context.Context) (bool, error) {
		w, err := widgetClient(t, ns).Get(ctx, "w2", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" && m["status"] == "False" {
				return true, nil
			}
		}
		return false, nil
	})
	for _, name := range []string{"w1", "w2"} {
		if err := widgetClient(t, ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitWidgetGone(t, ns, "w1")
	waitWidgetGone(t, ns, "w2")
	waitConfigMapData(t, ns, "w1-cm", nil)
	waitConfigMapData(t, ns, "w2-cm", nil)
}

// TestFinalizerWritesUnderConflicts: another controller writes the Widget
// (its own finalizer, an annotation) between the Framework's read and each
// of its finalizer patches: both patches conflict (409), are retried with
// the latest object, and lose nothing of the other writer's; the delete
// chain ends with the other finalizer alone on the Widget.
func TestFinalizerWritesUnderConflicts(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ops := newConfigMapOps("configmap", "cm")
	other := func(ctx context.Context, patch string) {
		if _, err := widgetClient(t, ns).Patch(ctx, "w1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Errorf("the other writer's patch: %v", err)
		}
	}
	var addOnce, removeOnce sync.Once
	set, err := router.NewResourceSet(router.ResourceSetConfig{
		Name: "default",
		Handles: func(any) bool {
			addOnce.Do(func() {
				other(context.Background(), `{"metadata":{"finalizers":["test.operatorkit.io/other"]}}`)
			})
			return true
		},
		Resources: []resource.Interface{crudResource(t, ops)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ops.onDeletePatch = func(ctx context.Context) {
		removeOnce.Do(func() { other(ctx, `{"metadata":{"annotations":{"other":"wrote"}}}`) })
	}
	reg := prometheus.NewRegistry()
	f := startFramework(t, ns, frameworkOptions{registry: reg}, set)
	created := createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "1"})
	w, err := widgetClient(t, ns).Get(t.Context(), "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"test.operatorkit.io/other", f.Finalizer()}; !slices.Equal(w.GetFinalizers(), want) {
		t.Fatalf("finalizers = %v, want %v", w.GetFinalizers(), want)
	}
	if err := widgetClient(t, ns).Delete(t.Context(), "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConfigMapData(t, ns, "w1-cm", nil)
	poll(t, "our finalizer removed, the other's kept", func(ctx context.Context) (bool, error) {
		w, err := widgetClient(t, ns).Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if w.GetAnnotations()["other"] != "wrote" {
			return false, nil
		}
		return slices.Equal(w.GetFinalizers(), []string{"test.operatorkit.io/other"}), nil
	})
	patch := fmt.Sprintf(`{"metadata":{"finalizers":null,"uid":%q}}`, created.GetUID())
	if _, err := widgetClient(t, ns).Patch(t.Context(), "w1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWidgetGone(t, ns, "w1")
	// The faults happened: both finalizer patches conflicted, once each: a
	// retry waits until the informer has the other writer's version, also
	// when it lags behind the backoff (50 ms) on a busy machine.
	if n := metricSum(t, reg, "operatorkit_framework_reconciliations_total", map[string]string{"result": framework.ResultConflict}); n != 2 {
		t.Errorf("conflicts = %v, want 2 (the finalizer's addition and removal)", n)
	}
}

// failingDeleteOps is configMapOps whose ApplyDeleteChange fails while
// fail is above zero.
type failingDeleteOps struct {
	*configMapOps
	mu   sync.Mutex
	fail int
}

func (o *failingDeleteOps) ApplyDeleteChange(ctx context.Context, obj, change any) error {
	o.mu.Lock()
	failing := o.fail > 0
	o.fail--
	o.mu.Unlock()
	if failing {
		return errInjected
	}
	return o.configMapOps.ApplyDeleteChange(ctx, obj, change)
}

// TestDeleteChainFailsAndIsRetried: a delete chain that fails three times
// keeps the finalizer (its status written on the Terminating Widget, with
// Config.Conditions), is retried with backoff, and once it succeeds the
// ConfigMap and the Widget go, after exactly three failed reconciliations.
func TestDeleteChainFailsAndIsRetried(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ops := &failingDeleteOps{configMapOps: newConfigMapOps("configmap", "cm"), fail: 3}
	f := startStatusFramework(t, ns, statusOptions{}, resourceSet(t, "", crudResource(t, ops)))
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "1"})
	if err := widgetClient(t, ns).Delete(t.Context(), "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWidgetGone(t, ns, "w1")
	waitConfigMapData(t, ns, "w1-cm", nil)
	failed := 0
	for _, tr := range f.Traces(ns + "/w1") {
		if tr.Result == framework.ResultError {
			failed += 1 + tr.Repeats
		}
	}
	if failed != 3 {
		t.Errorf("failed delete reconciliations = %d, want 3", failed)
	}
}

// TestDeleteChainOwnWriteAfterAnotherFinalizerLeft: while the delete chain
// runs, another controller removes its own finalizer, and then a resource
// writes the object itself (a status patch, its version reported with
// resourceversioncontext). The Framework's finalizer patch, which carries
// that version as precondition, must not send the finalizers as read: the
// other controller's is back in that list, and the API server refuses a
// finalizer added to an object in deletion (422), so the delete failed once
// (a Warning event, the error metric) and ran again.
func TestDeleteChainOwnWriteAfterAnotherFinalizerLeft(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	rc := widgetClient(t, ns)
	const other = "test.operatorkit.io/other"
	var once sync.Once
	r := &signalResource{name: "record", onDelete: func(ctx context.Context) {
		once.Do(func() {
			// The other controller is done: it removes its finalizer.
			w, err := rc.Get(ctx, "w1", metav1.GetOptions{})
			if err == nil {
				w.SetFinalizers(slices.DeleteFunc(w.GetFinalizers(), func(s string) bool { return s == other }))
				_, err = rc.Update(ctx, w, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Errorf("the other controller's update: %v", err)
				return
			}
			// The resource's own write of the object.
			u, err := rc.Patch(ctx, "w1", types.MergePatchType, []byte(`{"status":{"note":"deleting"}}`), metav1.PatchOptions{}, "status")
			if err != nil {
				t.Errorf("the resource's status patch: %v", err)
				return
			}
			resourceversioncontext.SetResourceVersion(ctx, u.GetResourceVersion())
		})
	}}
	f := startStatusFramework(t, ns, statusOptions{backOff: constantBackOff(50 * time.Millisecond)}, resourceSet(t, "", r))
	w := newWidget(ns, "w1", "", nil)
	w.SetFinalizers([]string{other})
	createWidget(t, w)
	waitStatus(t, rc, "w1", "Ready", readyAt)
	if err := rc.Delete(t.Context(), "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWidgetGone(t, ns, "w1")
	for _, tr := range f.Traces(ns + "/w1") {
		if tr.Result == framework.ResultError {
			t.Errorf("a delete reconciliation failed: %s %v", tr.Error, stepNames(tr))
		}
	}
}
