package integration

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// TestChildClusterScopedOfNamespacedOwner: a cluster-scoped child (a
// ClusterRole) of a namespaced owner, which Kubernetes does not allow (its
// garbage collector never resolves such an owner reference), is a
// permanent ErrInvalidChild, not an apply sent again (and a delete) in every
// reconciliation; the owner's delete chain deletes the one child written.
func TestChildClusterScopedOfNamespacedOwner(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	admin := kubeClient(t)
	kc, counter := countedClient(t)
	inf := childInformer(t, admin.RbacV1().RESTClient(), rbacv1.SchemeGroupVersion.WithResource("clusterroles"), &rbacv1.ClusterRole{}, "", true)
	owner := childOwner(t, admin, ns)
	name := "child-scope-" + ns
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	r, err := child.New(child.Config[*corev1.Secret, *rbacv1.ClusterRole]{
		Name: "clusterrole",
		Client: func(string) child.Client[*rbacv1.ClusterRole] {
			return kc.RbacV1().ClusterRoles()
		},
		Cache:        inf,
		FieldManager: childManager,
		Desired: func(context.Context, *corev1.Secret) (*rbacv1.ClusterRole, error) {
			return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var errs []error
	before := counter.Snapshot()
	for range 3 {
		errs = append(errs, r.EnsureCreated(ctx, owner))
		if cr, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err == nil {
			waitCached(t, inf, name, cr)
		}
	}
	if got := counter.Snapshot().Sub(before); got.Total > 1 {
		t.Errorf("3 reconciliations sent %d requests (%v), want at most 1", got.Total, got.ByVerb)
	}
	t.Logf("error: %v", errs[0])
	for i, err := range errs {
		if !errors.Is(err, child.ErrInvalidChild) || !retry.IsPermanent(err) {
			t.Errorf("reconciliation %d: error = %v, want a permanent ErrInvalidChild", i+1, err)
		}
	}
	// The owner's delete chain deletes the one child written.
	gone := owner.DeepCopy()
	gone.DeletionTimestamp = &metav1.Time{}
	if err := r.EnsureDeleted(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the child after the owner's delete chain: Get() error = %v, want NotFound", err)
	}
}
