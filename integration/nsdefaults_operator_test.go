package integration

// The operator of TestNamespaceDefaultsOperator, written from the docs
// alone (README.md, docs/getting-started.md, godoc): it reconciles a
// built-in, cluster-scoped kind that has no CRD of its own, core/v1
// Namespaces. Every Namespace labelled defaults.example.com/profile=<profile>
// gets, in it, a ResourceQuota, a LimitRange and a NetworkPolicy sized by
// that profile (read from a ConfigMap in the operator's namespace), and a
// RoleBinding of the admin ClusterRole to the group its annotation
// defaults.example.com/admins names.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
)

const (
	nsDefaultsOperator = "nsdefaults-operator"
	nsProfileLabel     = "defaults.example.com/profile" // small or large (a key of the profiles ConfigMap)
	nsAdminsAnnotation = "defaults.example.com/admins"  // the group that gets the admin ClusterRole
	nsProfiles         = "namespace-profiles"           // the ConfigMap of the profiles, in the operator's namespace
	nsDefaults         = "defaults"                     // the name of every child
)

// nsProfile is one profile of the profiles ConfigMap, a JSON object under
// the profile's name.
type nsProfile struct {
	Pods          resource.Quantity `json:"pods"`
	CPU           resource.Quantity `json:"cpu"`
	Memory        resource.Quantity `json:"memory"`
	DefaultCPU    resource.Quantity `json:"defaultCPU"`
	DefaultMemory resource.Quantity `json:"defaultMemory"`
}

// runNSDefaultsOperator runs the operator until the test ends, with the
// profiles ConfigMap in profilesNS, every Namespace reconciled again every
// resync (0: informer.DefaultResyncPeriod).
func runNSDefaultsOperator(t *testing.T, config operatorpkg.Config, profilesNS string, resync time.Duration) {
	t.Helper()
	op, err := operatorpkg.New(config)
	must(t, err)
	kube := op.Kubernetes()
	namespacesGVR := corev1.SchemeGroupVersion.WithResource("namespaces")
	// Every Namespace, not only the labelled ones: a Namespace whose label
	// is removed must stay in the Framework's informer for its children to
	// be deleted (one that leaves the informer's selection is forgotten).
	namespaces, err := op.Informer(informer.Config{GVR: namespacesGVR, ObjectType: &corev1.Namespace{}, ResyncPeriod: resync})
	must(t, err)
	profiles, err := op.Informer(informer.Config{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), ObjectType: &corev1.ConfigMap{},
		Namespace: profilesNS, FieldSelector: "metadata.name=" + nsProfiles})
	must(t, err)
	cache := func(gvr schema.GroupVersionResource, obj runtime.Object) *operatorpkg.SharedInformer {
		i, err := op.Informer(informer.Config{GVR: gvr, ObjectType: obj, LabelSelector: child.LabelManagedBy + "=" + nsDefaultsOperator})
		must(t, err)
		return i
	}
	quotas := cache(corev1.SchemeGroupVersion.WithResource("resourcequotas"), &corev1.ResourceQuota{})
	limitRanges := cache(corev1.SchemeGroupVersion.WithResource("limitranges"), &corev1.LimitRange{})
	policies := cache(networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), &networkingv1.NetworkPolicy{})
	roleBindings := cache(rbacv1.SchemeGroupVersion.WithResource("rolebindings"), &rbacv1.RoleBinding{})

	// profileOf returns the profile of ns, false for a Namespace without
	// the label (it should have no children).
	profileOf := func(ns *corev1.Namespace) (p nsProfile, ok bool, err error) {
		name, labelled := ns.Labels[nsProfileLabel]
		if !labelled {
			return p, false, nil
		}
		cm, found, err := informer.Get[*corev1.ConfigMap](profiles, profilesNS, nsProfiles)
		if err != nil || !found {
			return p, false, fmt.Errorf("profiles ConfigMap %s/%s: not found (%v)", profilesNS, nsProfiles, err)
		}
		data, found := cm.Data[name]
		if !found {
			return p, false, retry.Permanent(fmt.Errorf("namespace %s: no profile %q in ConfigMap %s/%s", ns.Name, name, profilesNS, nsProfiles))
		}
		if err := json.Unmarshal([]byte(data), &p); err != nil {
			return p, false, retry.Permanent(fmt.Errorf("profile %q of ConfigMap %s/%s: %w", name, profilesNS, nsProfiles, err))
		}
		return p, true, nil
	}
	meta := func(ns *corev1.Namespace) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: nsDefaults, Namespace: ns.Name}
	}
	quota, err := child.New(child.Config[*corev1.Namespace, *corev1.ResourceQuota]{
		Name: "resourcequota", Client: child.Typed(kube.CoreV1().ResourceQuotas), Cache: quotas, FieldManager: nsDefaultsOperator, Writes: op.OwnWrites(),
		Desired: nsSized(profileOf, func(ns *corev1.Namespace, p nsProfile) *corev1.ResourceQuota {
			return &corev1.ResourceQuota{ObjectMeta: meta(ns), Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				corev1.ResourcePods: p.Pods, corev1.ResourceRequestsCPU: p.CPU, corev1.ResourceRequestsMemory: p.Memory}}}
		}),
	})
	must(t, err)
	limits, err := child.New(child.Config[*corev1.Namespace, *corev1.LimitRange]{
		Name: "limitrange", Client: child.Typed(kube.CoreV1().LimitRanges), Cache: limitRanges, FieldManager: nsDefaultsOperator, Writes: op.OwnWrites(),
		Desired: nsSized(profileOf, func(ns *corev1.Namespace, p nsProfile) *corev1.LimitRange {
			return &corev1.LimitRange{ObjectMeta: meta(ns), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type:           corev1.LimitTypeContainer,
				Default:        corev1.ResourceList{corev1.ResourceCPU: p.DefaultCPU, corev1.ResourceMemory: p.DefaultMemory},
				DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: p.DefaultCPU, corev1.ResourceMemory: p.DefaultMemory}}}}}
		}),
	})
	must(t, err)
	// Ingress only from pods of the same Namespace.
	policy, err := child.New(child.Config[*corev1.Namespace, *networkingv1.NetworkPolicy]{
		Name: "networkpolicy", Client: child.Typed(kube.NetworkingV1().NetworkPolicies), Cache: policies, FieldManager: nsDefaultsOperator, Writes: op.OwnWrites(),
		Desired: nsSized(profileOf, func(ns *corev1.Namespace, _ nsProfile) *networkingv1.NetworkPolicy {
			return &networkingv1.NetworkPolicy{ObjectMeta: meta(ns), Spec: networkingv1.NetworkPolicySpec{
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}}}
		}),
	})
	must(t, err)
	roleBinding, err := child.New(child.Config[*corev1.Namespace, *rbacv1.RoleBinding]{
		Name: "rolebinding", Client: child.Typed(kube.RbacV1().RoleBindings), Cache: roleBindings, FieldManager: nsDefaultsOperator, Writes: op.OwnWrites(),
		Desired: nsSized(profileOf, func(ns *corev1.Namespace, _ nsProfile) *rbacv1.RoleBinding {
			group := ns.Annotations[nsAdminsAnnotation]
			if group == "" {
				return nil
			}
			return &rbacv1.RoleBinding{ObjectMeta: meta(ns),
				Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}}
		}),
	})
	must(t, err)
	rtr, err := router.Single("v1", quota, limits, policy, roleBinding)
	must(t, err)
	// The Namespace's status is the namespace controller's: no Conditions.
	// No finalizer: the children are in the Namespace, and go with it.
	f, err := op.NewFramework(framework.Config{Name: nsDefaultsOperator, Informer: namespaces, ResourceRouter: rtr, Resource: namespacesGVR, DisableFinalizers: true})
	must(t, err)
	for _, children := range []*operatorpkg.SharedInformer{quotas, limitRanges, policies, roleBindings} {
		must(t, op.Owns(f, schema.GroupKind{Kind: "Namespace"}, children))
	}
	// A labelled Namespace refers to the profiles: a change of them
	// re-applies every one.
	must(t, op.References(f, profiles, func(obj any) []string {
		if _, ok := obj.(*corev1.Namespace).Labels[nsProfileLabel]; ok {
			return []string{profilesNS + "/" + nsProfiles}
		}
		return nil
	}))
	stop, _ := runOperator(op)
	t.Cleanup(func() { must(t, stop()) })
}

// nsSized returns the Desired of a child built from a Namespace's profile
// by build: none for a Namespace without the label.
func nsSized[C any](profileOf func(*corev1.Namespace) (nsProfile, bool, error), build func(*corev1.Namespace, nsProfile) C) func(context.Context, *corev1.Namespace) (C, error) {
	return func(_ context.Context, ns *corev1.Namespace) (C, error) {
		p, ok, err := profileOf(ns)
		if !ok || err != nil {
			var none C
			return none, err
		}
		return build(ns, p), nil
	}
}
