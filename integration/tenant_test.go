package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	resourcepkg "github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

// Tenant is a cluster-scoped custom resource: it asks for a Namespace of
// its own with a quota of pods, and (from release v2) a RoleBinding that
// lets the tenant's group edit it.
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TenantSpec `json:"spec"`
	Status            struct {
		ObservedGeneration int64              `json:"observedGeneration,omitempty"`
		Conditions         []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}

// TenantSpec names a Tenant's Namespace and its quota of pods.
type TenantSpec struct {
	Namespace string `json:"namespace"`
	Pods      int64  `json:"pods"`
}

// DeepCopyObject is what controller-gen would write.
func (t *Tenant) DeepCopyObject() runtime.Object {
	c := *t
	t.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Status.Conditions = slices.Clone(t.Status.Conditions)
	return &c
}

const (
	tenantRelease = "tenant.example.com/release" // "v1" (or none) or "v2": the release that reconciles a Tenant
	tenantQuota   = "tenant"                     // the name of the ResourceQuota and the RoleBinding
)

// tenantCRD is the cluster-scoped Tenant CRD in group, with a status
// subresource and the conditions as a map list, as controller-gen writes
// them.
func tenantCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	crd := backupCRD(group)
	crd.Name = "tenants." + group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "tenants", Kind: "Tenant"}
	crd.Spec.Scope = apiextensionsv1.ClusterScoped
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{
		Type: "object", Required: []string{"namespace", "pods"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"namespace": {Type: "string"}, "pods": {Type: "integer"}}}
	return crd
}

// runTenantOperator runs the Tenant operator named name until the test
// ends, installing the CRD first: release v1 keeps each Tenant's Namespace
// and ResourceQuota, release v2 its RoleBinding too.
func runTenantOperator(t *testing.T, name string, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	op, err := operatorpkg.New(operatorpkg.Config{Name: name, RESTConfig: env.Config(), Logger: log.NewNopLogger()})
	must(t, err)
	kube := op.Kubernetes()
	inf := func(gvr schema.GroupVersionResource, obj runtime.Object) *operatorpkg.SharedInformer {
		i, err := op.Informer(informer.Config{GVR: gvr, ObjectType: obj, LabelSelector: child.LabelManagedBy + "=" + name})
		must(t, err)
		return i
	}
	tenants, err := op.Informer(informer.Config{GVR: gvr, ObjectType: &Tenant{}})
	must(t, err)
	namespaces := inf(corev1.SchemeGroupVersion.WithResource("namespaces"), &corev1.Namespace{})
	quotas := inf(corev1.SchemeGroupVersion.WithResource("resourcequotas"), &corev1.ResourceQuota{})
	roleBindings := inf(rbacv1.SchemeGroupVersion.WithResource("rolebindings"), &rbacv1.RoleBinding{})

	sets := make([]*router.ResourceSet, 0, 2)
	for _, release := range []string{"v1", "v2"} {
		namespace, err := child.New(child.Config[*Tenant, *corev1.Namespace]{
			Name: "namespace", Cache: namespaces, FieldManager: name, Writes: op.OwnWrites(),
			Client: func(string) child.Client[*corev1.Namespace] { return kube.CoreV1().Namespaces() },
			Desired: func(_ context.Context, tn *Tenant) (*corev1.Namespace, error) {
				return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tn.Spec.Namespace}}, nil
			},
		})
		must(t, err)
		quota, err := child.New(child.Config[*Tenant, *corev1.ResourceQuota]{
			Name: "resourcequota", Cache: quotas, FieldManager: name, Writes: op.OwnWrites(),
			Client: child.Typed(kube.CoreV1().ResourceQuotas),
			Desired: func(_ context.Context, tn *Tenant) (*corev1.ResourceQuota, error) {
				return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: tenantQuota, Namespace: tn.Spec.Namespace},
					Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(tn.Spec.Pods, resource.DecimalSI)}}}, nil
			},
		})
		must(t, err)
		// Release v1 has a RoleBinding resource that desires none, so that
		// a Tenant moved back from v2 loses its RoleBinding (router's doc).
		roleBinding, err := child.New(child.Config[*Tenant, *rbacv1.RoleBinding]{
			Name: "rolebinding", Cache: roleBindings, FieldManager: name, Writes: op.OwnWrites(),
			Client: child.Typed(kube.RbacV1().RoleBindings),
			Desired: func(_ context.Context, tn *Tenant) (*rbacv1.RoleBinding, error) {
				if release == "v1" {
					return nil, nil
				}
				return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: tenantQuota, Namespace: tn.Spec.Namespace},
					Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "tenant:" + tn.Name}},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}}, nil
			},
		})
		must(t, err)
		set, err := router.NewResourceSet(router.ResourceSetConfig{Name: release, Handles: router.LabelIs(tenantRelease, release, release == "v1"),
			Resources: []resourcepkg.Interface{namespace, quota, roleBinding}})
		must(t, err)
		sets = append(sets, set)
	}
	rtr, err := router.New(router.Config{ResourceSets: sets})
	must(t, err)
	f, err := op.NewFramework(framework.Config{Name: name, Informer: tenants, ResourceRouter: rtr, Resource: gvr, Conditions: true, CRD: crd})
	must(t, err)
	// A change of a child, cluster-scoped (the Namespace) or in the
	// Tenant's Namespace (the quota and the RoleBinding), wakes its Tenant.
	kind := schema.GroupKind{Group: gvr.Group, Kind: "Tenant"}
	for _, children := range []*operatorpkg.SharedInformer{namespaces, quotas, roleBindings} {
		must(t, op.Owns(f, kind, children))
	}
	stop, _ := runOperator(op)
	t.Cleanup(func() { must(t, stop()) })
}

// TestTenantOperator runs an operator of a third shape: a cluster-scoped
// Tenant that owns a cluster-scoped Namespace and, in it, a ResourceQuota
// and (release v2) a RoleBinding; two releases routed by a label, a Tenant
// moving from v1 to v2, back to v1, to another Namespace and to a release
// no set handles, and deletes, among them one of a Tenant relabelled to v2
// an instant before, while the operator may still be on v1's chain.
func TestTenantOperator(t *testing.T) {
	t.Parallel()
	crd := tenantCRD(uniqueCRDGroup(t))
	deleteCRDOnCleanup(t, newCRDClient(t), crd)
	name := fmt.Sprintf("tenant-operator-%d", nsCounter.Add(1))
	runTenantOperator(t, name, crd)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	kube := kubeClient(t)
	tenants := dynamicClientset(t).Resource(gvr)
	eventually := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	// ready waits until the Tenant is Ready, reconciled by set (a label
	// change makes no new generation: Ready of the old set is Ready for it).
	ready := func(tenant, set string) {
		t.Helper()
		_, err := env.WaitReady(t.Context(), gvr, "", tenant)
		must(t, err)
		eventually("Tenant "+tenant+" reconciled by resource set "+set, func(ctx context.Context) (bool, error) {
			u, err := tenants.Get(ctx, tenant, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			return slices.ContainsFunc(conds, func(c any) bool {
				m, _ := c.(map[string]any)
				return m["type"] == conditioncontext.Ready && m["status"] == "True" && m["message"] == "reconciled by resource set "+set
			}), nil
		})
	}
	create := func(tenant, ns, release string, pods int64) {
		t.Helper()
		meta := map[string]any{"name": tenant}
		if release != "" {
			meta["labels"] = map[string]any{tenantRelease: release}
		}
		eventually("the Tenant CRD", func(ctx context.Context) (bool, error) {
			_, err := tenants.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": gvr.GroupVersion().String(), "kind": "Tenant", "metadata": meta,
				"spec": map[string]any{"namespace": ns, "pods": pods}}}, metav1.CreateOptions{})
			return err == nil, nil
		})
	}
	patch := func(tenant, p string) {
		t.Helper()
		_, err := tenants.Patch(t.Context(), tenant, types.MergePatchType, []byte(p), metav1.PatchOptions{})
		must(t, err)
	}
	quotaIs := func(ns string, pods int64) wait.ConditionWithContextFunc {
		return func(ctx context.Context) (bool, error) {
			q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, tenantQuota, metav1.GetOptions{})
			return err == nil && q.Spec.Hard.Pods().Value() == pods, nil
		}
	}
	roleBindingExists := func(ns string) wait.ConditionWithContextFunc {
		return func(ctx context.Context) (bool, error) {
			_, err := kube.RbacV1().RoleBindings(ns).Get(ctx, tenantQuota, metav1.GetOptions{})
			return err == nil, nil
		}
	}
	// gone waits until the Tenant is deleted, its quota and RoleBinding
	// too, and its Namespace is deleted: Terminating, as it stays on this
	// API server, which has no namespace controller to empty it.
	gone := func(tenant, ns string) {
		t.Helper()
		eventually("Tenant "+tenant+" and its children deleted", func(ctx context.Context) (bool, error) {
			_, err1 := tenants.Get(ctx, tenant, metav1.GetOptions{})
			_, err2 := kube.CoreV1().ResourceQuotas(ns).Get(ctx, tenantQuota, metav1.GetOptions{})
			_, err3 := kube.RbacV1().RoleBindings(ns).Get(ctx, tenantQuota, metav1.GetOptions{})
			n, err4 := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			terminating := apierrors.IsNotFound(err4) || err4 == nil && n.DeletionTimestamp != nil
			return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2) && apierrors.IsNotFound(err3) && terminating, nil
		})
	}

	// Release v1 (no label): the Namespace and its quota, no RoleBinding.
	nsA := fmt.Sprintf("tenant-acme-%d", nsCounter.Add(1))
	create("acme", nsA, "", 10)
	ready("acme", "v1")
	n, err := kube.CoreV1().Namespaces().Get(t.Context(), nsA, metav1.GetOptions{})
	must(t, err)
	if ref := metav1.GetControllerOf(n); ref == nil || ref.Kind != "Tenant" || ref.Name != "acme" {
		t.Errorf("Namespace %s: controller %+v, want Tenant acme", nsA, ref)
	}
	eventually("the quota", quotaIs(nsA, 10))
	if _, err := kube.RbacV1().RoleBindings(nsA).Get(t.Context(), tenantQuota, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding under release v1: Get() error = %v, want NotFound", err)
	}
	// A new quota: the ResourceQuota follows.
	patch("acme", `{"spec":{"pods":20}}`)
	eventually("the new quota", quotaIs(nsA, 20))
	ready("acme", "v1")

	// Relabelled to v2: release v2 takes the Tenant over and adds its
	// RoleBinding, which comes back when someone deletes it.
	patch("acme", `{"metadata":{"labels":{"`+tenantRelease+`":"v2"}}}`)
	eventually("the RoleBinding", roleBindingExists(nsA))
	ready("acme", "v2")
	must(t, kube.RbacV1().RoleBindings(nsA).Delete(t.Context(), tenantQuota, metav1.DeleteOptions{}))
	eventually("the RoleBinding back", roleBindingExists(nsA))
	must(t, kube.CoreV1().ResourceQuotas(nsA).Delete(t.Context(), tenantQuota, metav1.DeleteOptions{}))
	eventually("the quota back", quotaIs(nsA, 20))

	// Deleted: release v2's delete chain deletes the Namespace, the quota
	// and the RoleBinding, and removes the finalizer.
	must(t, tenants.Delete(t.Context(), "acme", metav1.DeleteOptions{}))
	gone("acme", nsA)

	// Created under v1, relabelled to v2 and deleted an instant later: no
	// delete is lost, whichever release's chain sees it first.
	nsB := fmt.Sprintf("tenant-beta-%d", nsCounter.Add(1))
	create("beta", nsB, "v1", 5)
	ready("beta", "v1")
	eventually("beta's quota", quotaIs(nsB, 5))
	patch("beta", `{"metadata":{"labels":{"`+tenantRelease+`":"v2"}}}`)
	must(t, tenants.Delete(t.Context(), "beta", metav1.DeleteOptions{}))
	gone("beta", nsB)

	// Moved back to v1, the Tenant loses its RoleBinding (v1's resource
	// desires none); to another Namespace, it loses the first one; moved
	// to a release no set handles, it is Stalled, and its delete runs the
	// chain of the set that last reconciled it.
	nsD, nsE := fmt.Sprintf("tenant-delta-%d", nsCounter.Add(1)), fmt.Sprintf("tenant-delta-%d", nsCounter.Add(1))
	create("delta", nsD, "v2", 7)
	ready("delta", "v2")
	eventually("delta's RoleBinding", roleBindingExists(nsD))
	patch("delta", `{"metadata":{"labels":{"`+tenantRelease+`":"v1"}}}`)
	eventually("delta's RoleBinding deleted by v1", func(ctx context.Context) (bool, error) {
		_, err := kube.RbacV1().RoleBindings(nsD).Get(ctx, tenantQuota, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	ready("delta", "v1")
	patch("delta", `{"spec":{"namespace":"`+nsE+`"}}`)
	eventually("delta's quota in its new Namespace", quotaIs(nsE, 7))
	ready("delta", "v1")
	eventually("delta's first Namespace deleted", func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Namespaces().Get(ctx, nsD, metav1.GetOptions{})
		_, err2 := kube.CoreV1().ResourceQuotas(nsD).Get(ctx, tenantQuota, metav1.GetOptions{})
		return (apierrors.IsNotFound(err) || err == nil && n.DeletionTimestamp != nil) && apierrors.IsNotFound(err2), nil
	})
	patch("delta", `{"metadata":{"labels":{"`+tenantRelease+`":"v3"}}}`)
	_, err = env.WaitCondition(t.Context(), gvr, "", "delta", conditioncontext.Stalled, metav1.ConditionTrue, "")
	must(t, err)
	// Its events, as those of every cluster-scoped object, are in default.
	eventually("a Warning event about delta", func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		return err == nil && slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Name == "delta" && e.InvolvedObject.Kind == "Tenant" && e.Type == corev1.EventTypeWarning
		}), err
	})
	must(t, tenants.Delete(t.Context(), "delta", metav1.DeleteOptions{}))
	gone("delta", nsE)
}

// TestTenantNamespaceTerminating: while a Tenant's Namespace is Terminating
// (someone deleted it; this API server has no namespace controller, the
// test plays it), the Tenant is not Ready but waits for it, saying so, and
// gets it back, with its quota, once it is gone. A Tenant created again
// while the previous one's Namespace is Terminating waits for it too.
func TestTenantNamespaceTerminating(t *testing.T) {
	t.Parallel()
	crd := tenantCRD(uniqueCRDGroup(t))
	deleteCRDOnCleanup(t, newCRDClient(t), crd)
	runTenantOperator(t, fmt.Sprintf("tenant-operator-%d", nsCounter.Add(1)), crd)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	kube := kubeClient(t)
	tenants := dynamicClientset(t).Resource(gvr)
	ns := fmt.Sprintf("tenant-gamma-%d", nsCounter.Add(1))
	poll := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	create := func() {
		t.Helper()
		poll("the Tenant created", func(ctx context.Context) (bool, error) {
			_, err := tenants.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": gvr.GroupVersion().String(), "kind": "Tenant", "metadata": map[string]any{"name": "gamma"},
				"spec": map[string]any{"namespace": ns, "pods": int64(3)}}}, metav1.CreateOptions{})
			return err == nil, nil
		})
	}
	ready := func() {
		t.Helper()
		_, err := env.WaitReady(t.Context(), gvr, "", "gamma")
		must(t, err)
		_, err = kube.CoreV1().ResourceQuotas(ns).Get(t.Context(), tenantQuota, metav1.GetOptions{})
		must(t, err)
	}
	// finalize does what the namespace controller does once the Namespace
	// is empty: it removes the finalizer kubernetes, and the Namespace goes.
	finalize := func() {
		t.Helper()
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
			if err == nil {
				n.Spec.Finalizers = nil
				_, err = kube.CoreV1().Namespaces().Finalize(t.Context(), n, metav1.UpdateOptions{})
			}
			return err
		}))
	}
	create()
	ready()

	// Someone deletes the Namespace: the Tenant waits for it to go.
	must(t, kube.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}))
	_, err := env.WaitCondition(t.Context(), gvr, "", "gamma", conditioncontext.Reconciling, metav1.ConditionTrue, child.ReasonWaitingForChild)
	must(t, err)
	u, err := env.WaitCondition(t.Context(), gvr, "", "gamma", conditioncontext.Ready, metav1.ConditionFalse, child.ReasonWaitingForChild)
	must(t, err)
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if c := c.(map[string]any); c["type"] == conditioncontext.Ready && c["message"] != "namespace "+ns+" not ready: being deleted" {
			t.Errorf("Ready message %q, want the Namespace being deleted", c["message"])
		}
	}
	// The namespace controller empties it, and it goes: the Tenant gets
	// its Namespace and quota again.
	must(t, kube.CoreV1().ResourceQuotas(ns).Delete(t.Context(), tenantQuota, metav1.DeleteOptions{}))
	finalize()
	poll("the Namespace created again", func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil && n.DeletionTimestamp == nil, nil
	})
	ready()

	// Deleted and created again at once: the new Tenant waits until the
	// previous one's Namespace is gone (a wait, not an error retried with
	// backoff and a Warning event each time), then makes its own.
	must(t, tenants.Delete(t.Context(), "gamma", metav1.DeleteOptions{}))
	poll("the first Tenant gone", func(ctx context.Context) (bool, error) {
		_, err := tenants.Get(ctx, "gamma", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	create()
	u, err = env.WaitCondition(t.Context(), gvr, "", "gamma", conditioncontext.Ready, metav1.ConditionFalse, child.ReasonWaitingForChild)
	must(t, err)
	conds, _, _ = unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if c := c.(map[string]any); c["type"] == conditioncontext.Ready && c["message"] != "namespace "+ns+" not ready: being deleted" {
			t.Errorf("the new Tenant's Ready message %q, want the previous Namespace being deleted", c["message"])
		}
	}
	finalize()
	ready()
	must(t, tenants.Delete(t.Context(), "gamma", metav1.DeleteOptions{}))
	poll("the second Tenant gone", func(ctx context.Context) (bool, error) {
		_, err := tenants.Get(ctx, "gamma", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// TestTenantChildOfThePreviousTenantGoes: a namespaced child of a
// cluster-scoped owner wakes the owner of its name when it goes, also when
// that owner was created again since (another UID), as a namespaced
// owner's child does: a Tenant deleted while finalizers hold its
// ConfigMap, and created again, waits for that ConfigMap to go, and makes
// its own as soon as it goes, not after WaitDelay (an hour here).
func TestTenantChildOfThePreviousTenantGoes(t *testing.T) {
	t.Parallel()
	x := runTenantConfigMapOperator(t, time.Hour, func(tn *Tenant) string { return "tenant-" + tn.Name })
	gvr, ns, kube := x.gvr, x.ns, x.kube

	tenants := dynamicClientset(t).Resource(gvr)
	poll := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	create := func() types.UID {
		t.Helper()
		var uid types.UID
		poll("the Tenant created", func(ctx context.Context) (bool, error) {
			u, err := tenants.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": gvr.GroupVersion().String(), "kind": "Tenant", "metadata": map[string]any{"name": "zeta"},
				"spec": map[string]any{"namespace": ns, "pods": int64(1)}}}, metav1.CreateOptions{})
			if err == nil {
				uid = u.GetUID()
			}
			return err == nil, nil
		})
		return uid
	}
	controlledBy := func(uid types.UID) wait.ConditionWithContextFunc {
		return func(ctx context.Context) (bool, error) {
			c, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "tenant-zeta", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			ref := metav1.GetControllerOf(c)
			return c.DeletionTimestamp == nil && ref != nil && ref.UID == uid, nil
		}
	}
	first := create()
	poll("the first Tenant's ConfigMap", controlledBy(first))
	// Someone else's finalizer holds the ConfigMap when the Tenant's
	// delete chain deletes it.
	_, err := kube.CoreV1().ConfigMaps(ns).Patch(t.Context(), "tenant-zeta", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`), metav1.PatchOptions{})
	must(t, err)
	must(t, tenants.Delete(t.Context(), "zeta", metav1.DeleteOptions{}))
	poll("the first Tenant gone", func(ctx context.Context) (bool, error) {
		_, err := tenants.Get(ctx, "zeta", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	second := create()
	_, err = env.WaitCondition(t.Context(), gvr, "", "zeta", conditioncontext.Ready, metav1.ConditionFalse, child.ReasonWaitingForChild)
	must(t, err)
	// The finalizer goes, and the ConfigMap with it: its delete event
	// wakes the new Tenant, which makes its own.
	_, err = kube.CoreV1().ConfigMaps(ns).Patch(t.Context(), "tenant-zeta", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	must(t, err)
	poll("the second Tenant's ConfigMap", controlledBy(second))
	_, err = env.WaitReady(t.Context(), gvr, "", "zeta")
	must(t, err)
	must(t, tenants.Delete(t.Context(), "zeta", metav1.DeleteOptions{}))
	poll("the second Tenant gone", func(ctx context.Context) (bool, error) {
		_, err := tenants.Get(ctx, "zeta", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// tenantConfigMapOperator is a running operator of Tenants (of a CRD of
// its own) that keep one ConfigMap each, in a Namespace of the test.
type tenantConfigMapOperator struct {
	gvr  schema.GroupVersionResource
	ns   string // the ConfigMaps' Namespace
	name string // the operator's name, its ConfigMaps' LabelManagedBy
	kube kubernetes.Interface
}

// runTenantConfigMapOperator runs, until the test ends, an operator whose
// Tenants keep the ConfigMap configMapName names, waiting waitDelay for a
// child not ready (one being deleted).
func runTenantConfigMapOperator(t *testing.T, waitDelay time.Duration, configMapName func(*Tenant) string) tenantConfigMapOperator {
	t.Helper()
	crd := tenantCRD(uniqueCRDGroup(t))
	deleteCRDOnCleanup(t, newCRDClient(t), crd)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	ns := newNamespace(t)
	name := fmt.Sprintf("tenant-operator-%d", nsCounter.Add(1))
	op, err := operatorpkg.New(operatorpkg.Config{Name: name, RESTConfig: env.Config(), Logger: log.NewNopLogger()})
	must(t, err)
	kube := op.Kubernetes()
	tenantInf, err := op.Informer(informer.Config{GVR: gvr, ObjectType: &Tenant{}})
	must(t, err)
	cms, err := op.Informer(informer.Config{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), ObjectType: &corev1.ConfigMap{},
		LabelSelector: child.LabelManagedBy + "=" + name})
	must(t, err)
	cm, err := child.New(child.Config[*Tenant, *corev1.ConfigMap]{
		Name: "configmap", Cache: cms, FieldManager: name, Writes: op.OwnWrites(), WaitDelay: waitDelay,
		Client: child.Typed(kube.CoreV1().ConfigMaps),
		Desired: func(_ context.Context, tn *Tenant) (*corev1.ConfigMap, error) {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: configMapName(tn), Namespace: ns}}, nil
		},
	})
	must(t, err)
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, Resources: []resourcepkg.Interface{cm}})
	must(t, err)
	rtr, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	must(t, err)
	f, err := op.NewFramework(framework.Config{Name: name, Informer: tenantInf, ResourceRouter: rtr, Resource: gvr, Conditions: true, CRD: crd})
	must(t, err)
	must(t, op.Owns(f, schema.GroupKind{Group: gvr.Group, Kind: "Tenant"}, cms))
	stop, _ := runOperator(op)
	t.Cleanup(func() { must(t, stop()) })
	return tenantConfigMapOperator{gvr: gvr, ns: ns, name: name, kube: kube}
}
