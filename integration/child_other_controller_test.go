package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/resource/child"
)

// TestChildNameHeldByAnotherControllerBeingDeleted: the object of a
// Tenant's child's name is another Tenant's ConfigMap, deleted, held by a
// finalizer: the Tenant waits for it (Ready False, WaitingForChild, the
// message naming the other Tenant), and makes its own ConfigMap once the
// finalizer lets the other go. That ConfigMap's delete event wakes the
// other Tenant, not this one: the requeue after WaitDelay runs it again.
// The step failed with a permanent ErrInvalidChild, and the Tenant stayed
// failed until its resync.
func TestChildNameHeldByAnotherControllerBeingDeleted(t *testing.T) {
	t.Parallel()
	x := runTenantConfigMapOperator(t, time.Second, func(*Tenant) string { return "shared" })
	gvr, ns, name, kube := x.gvr, x.ns, x.name, x.kube

	// The other Tenant's ConfigMap, with the operator's label, held by a
	// finalizer and deleted.
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: ns,
		Labels:     map[string]string{child.LabelManagedBy: name},
		Finalizers: []string{"example.com/hold"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: gvr.GroupVersion().String(), Kind: "Tenant", Name: "other",
			UID: "0d6b3d0e-0000-4000-8000-000000000001", Controller: new(true)}}}}
	_, err := kube.CoreV1().ConfigMaps(ns).Create(t.Context(), held, metav1.CreateOptions{})
	must(t, err)
	must(t, kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), "shared", metav1.DeleteOptions{}))

	tenants := dynamicClientset(t).Resource(gvr)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var u *unstructured.Unstructured
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err = tenants.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": "Tenant", "metadata": map[string]any{"name": "zeta-" + ns},
			"spec": map[string]any{"namespace": ns, "pods": int64(1)}}}, metav1.CreateOptions{})
		return err == nil, nil // the CRD is served a moment after it is created
	}); err != nil {
		t.Fatalf("creating the Tenant: %v", err)
	}
	obj, err := env.WaitCondition(ctx, gvr, "", u.GetName(), conditioncontext.Reconciling, metav1.ConditionTrue, child.ReasonWaitingForChild)
	must(t, err)
	if c := findCondition(obj, conditioncontext.Reconciling); !strings.Contains(c, "controlled by Tenant other") {
		t.Errorf("Reconciling message %q, want it to name the other Tenant", c)
	}
	_, err = kube.CoreV1().ConfigMaps(ns).Patch(t.Context(), "shared", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	must(t, err)
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "shared", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ref := metav1.GetControllerOf(c)
		return c.DeletionTimestamp == nil && ref != nil && ref.UID == u.GetUID(), nil
	}); err != nil {
		t.Fatalf("waiting for the Tenant's own ConfigMap: %v", err)
	}
	_, err = env.WaitReady(ctx, gvr, "", u.GetName())
	must(t, err)
	// Deleted while the operator runs, which removes its finalizer: the
	// CRD's delete then does not wait for it.
	must(t, tenants.Delete(ctx, u.GetName(), metav1.DeleteOptions{}))
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := tenants.Get(ctx, u.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("waiting for the Tenant to go: %v", err)
	}
}

// findCondition returns the message of the condition condType of obj.
func findCondition(obj *unstructured.Unstructured, condType string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			s, _ := m["message"].(string)
			return s
		}
	}
	return ""
}
