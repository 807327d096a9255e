package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestFinalizerRemovedBySomeoneElseIsAddedBack: another writer removes the
// Framework's finalizer from a Widget that is not being deleted (a spec
// that does not change, so no update predicate lets it through). The
// Framework adds it back at once, not at the next resync (5 minutes): in
// between, a delete while the operator is down would be lost.
func TestFinalizerRemovedBySomeoneElseIsAddedBack(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	f := startFramework(t, ns, frameworkOptions{}, resourceSet(t, "", crudResource(t, newConfigMapOps("configmap", "cm"))))
	created := createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "1"})
	hasFinalizer := func(ctx context.Context) (bool, error) {
		w, err := widgetClient(t, ns).Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.Contains(w.GetFinalizers(), f.Finalizer()), nil
	}
	poll(t, "the finalizer on w1", hasFinalizer)
	patch := fmt.Sprintf(`{"metadata":{"finalizers":null,"uid":%q}}`, created.GetUID())
	if _, err := widgetClient(t, ns).Patch(t.Context(), "w1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the finalizer added back to w1", hasFinalizer)
}
