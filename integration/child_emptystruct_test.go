package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/resource/child"
)

// countingClient is a child.Client that counts its Patch calls: the
// resource's writes.
type countingClient[C any] struct {
	child.Client[C]
	patches *atomic.Int32
}

func (c countingClient[C]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (C, error) {
	c.patches.Add(1)
	return c.Client.Patch(ctx, name, pt, data, opts, subresources...)
}

// emptyStructsSteady creates desired, a child of the kind of gvr, in ns
// with a child resource over an informer of that kind, and fails t when,
// once the informer holds the child, the resource's plan has an update, or
// when any of a few reconciliations after writes it again.
func emptyStructsSteady[C child.Object](t *testing.T, rc rest.Interface, gvr schema.GroupVersionResource, obj runtime.Object, ns string, client func(string) child.Client[C], desired C) {
	t.Helper()
	t.Parallel()
	inf := childInformer(t, rc, gvr, obj, ns, true)
	owner := childOwner(t, kubeClient(t), ns)
	var patches atomic.Int32
	r, err := child.New(child.Config[*corev1.Secret, C]{
		Name: "child", Client: func(ns string) child.Client[C] { return countingClient[C]{client(ns), &patches} }, Cache: inf, FieldManager: childManager,
		Desired: func(context.Context, *corev1.Secret) (C, error) { return desired, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.EnsureCreated(t.Context(), owner); err != nil {
		t.Fatalf("create: %v", err)
	}
	key := ns + "/" + desired.GetName()
	poll(t, "cache", func(context.Context) (bool, error) {
		_, ok, _ := inf.SharedIndexInformer().GetIndexer().GetByKey(key)
		return ok, nil
	})
	plan, err := r.Plan(t.Context(), owner, false)
	if err != nil {
		t.Fatal(err)
	}
	if plan != nil {
		if c, ok := plan.UpdateChange(); ok {
			t.Errorf("created child has drift: %v: it would be applied in every reconciliation", framework.DescribeChange(c))
		}
	}
	for i := range 3 { // a resync's, or another event's, reconciliation
		if err := r.EnsureCreated(t.Context(), owner); err != nil {
			t.Fatalf("reconciliation %d: %v", i+2, err)
		}
	}
	if n := patches.Load(); n != 1 {
		t.Errorf("%d writes over 4 reconciliations, want 1 (the create): the child is applied in every reconciliation", n)
	}
}

// TestChildEmptyStructsAreSteady: a pointer to an empty struct is applied
// as {} and its absence is drift (resource/child, "What counts as drift"):
// children of built-in kinds holding such pointers where the API server
// keeps them, or defaults their fields (a Deployment's rollingUpdate, pod
// and container security contexts, affinities, volume sources, a
// NetworkPolicy's peers, a StatefulSet's and a DaemonSet's update
// strategies, a PodDisruptionBudget's selector, an HPA's behavior, a
// PVC's selector), show no drift once created: no write in every
// reconciliation. A Service's sessionAffinityConfig: {} under
// sessionAffinity None, which the server drops, is too: the resource learns
// from the create's answer that the server drops it there.
func TestChildEmptyStructsAreSteady(t *testing.T) {
	t.Parallel()
	kc := kubeClient(t)
	for i, mod := range []func(*corev1.PodSpec){
		func(p *corev1.PodSpec) { p.SecurityContext = &corev1.PodSecurityContext{} },
		func(p *corev1.PodSpec) {
			p.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{}}
		},
		func(p *corev1.PodSpec) {
			p.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{}}
		},
		func(p *corev1.PodSpec) { p.Affinity = &corev1.Affinity{} },
		func(p *corev1.PodSpec) {
			p.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}, PodAffinity: &corev1.PodAffinity{}, PodAntiAffinity: &corev1.PodAntiAffinity{}}
		},
		func(p *corev1.PodSpec) { p.DNSConfig = &corev1.PodDNSConfig{} },
		func(p *corev1.PodSpec) { p.Containers[0].SecurityContext = &corev1.SecurityContext{} },
		func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{}, SELinuxOptions: &corev1.SELinuxOptions{}}
		},
		func(p *corev1.PodSpec) { p.Containers[0].Lifecycle = &corev1.Lifecycle{} },
		func(p *corev1.PodSpec) {
			p.Volumes = []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, {Name: "b", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}, {Name: "c", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}}}
		},
		func(p *corev1.PodSpec) {
			p.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		},
		func(p *corev1.PodSpec) { p.Resources = &corev1.ResourceRequirements{} },
	} {
		t.Run(fmt.Sprint("pod template ", i), func(t *testing.T) {
			ns := newNamespace(t)
			d := childDeployment(1, "nginx")
			d.Spec.Strategy = appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{}}
			mod(&d.Spec.Template.Spec)
			emptyStructsSteady(t, kc.AppsV1().RESTClient(), appsv1.SchemeGroupVersion.WithResource("deployments"), &appsv1.Deployment{}, ns, child.Typed(kc.AppsV1().Deployments), d)
		})
	}
	t.Run("service-clientip", func(t *testing.T) {
		ns := newNamespace(t)
		emptyStructsSteady(t, kc.CoreV1().RESTClient(), corev1.SchemeGroupVersion.WithResource("services"), &corev1.Service{}, ns, child.Typed(kc.CoreV1().Services), &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, SessionAffinity: corev1.ServiceAffinityClientIP, SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{}}},
		})
	})
	t.Run("service-none", func(t *testing.T) {
		ns := newNamespace(t)
		emptyStructsSteady(t, kc.CoreV1().RESTClient(), corev1.SchemeGroupVersion.WithResource("services"), &corev1.Service{}, ns, child.Typed(kc.CoreV1().Services), &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, SessionAffinity: corev1.ServiceAffinityNone, SessionAffinityConfig: &corev1.SessionAffinityConfig{}},
		})
	})
	t.Run("pdb", func(t *testing.T) {
		ns := newNamespace(t)
		one := intstr.FromInt32(1)
		emptyStructsSteady(t, kc.PolicyV1().RESTClient(), policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), &policyv1.PodDisruptionBudget{}, ns, child.Typed(kc.PolicyV1().PodDisruptionBudgets), &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{}, MinAvailable: &one}})
	})
	t.Run("hpa", func(t *testing.T) {
		ns := newNamespace(t)
		emptyStructsSteady(t, kc.AutoscalingV2().RESTClient(), autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), &autoscalingv2.HorizontalPodAutoscaler{}, ns, child.Typed(kc.AutoscalingV2().HorizontalPodAutoscalers), &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"}, MaxReplicas: 3,
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{}}}})
	})
	t.Run("pvc", func(t *testing.T) {
		ns := newNamespace(t)
		emptyStructsSteady(t, kc.CoreV1().RESTClient(), corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), &corev1.PersistentVolumeClaim{}, ns, child.Typed(kc.CoreV1().PersistentVolumeClaims), &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Selector: &metav1.LabelSelector{},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})
	})
	t.Run("statefulset", func(t *testing.T) {
		ns := newNamespace(t)
		d := childDeployment(1, "nginx")
		s := &appsv1.StatefulSet{ObjectMeta: d.ObjectMeta, Spec: appsv1.StatefulSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template,
			UpdateStrategy:                       appsv1.StatefulSetUpdateStrategy{RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{},
			Ordinals:                             &appsv1.StatefulSetOrdinals{}}}
		emptyStructsSteady(t, kc.AppsV1().RESTClient(), appsv1.SchemeGroupVersion.WithResource("statefulsets"), &appsv1.StatefulSet{}, ns, child.Typed(kc.AppsV1().StatefulSets), s)
	})
	t.Run("daemonset", func(t *testing.T) {
		ns := newNamespace(t)
		d := childDeployment(1, "nginx")
		s := &appsv1.DaemonSet{ObjectMeta: d.ObjectMeta, Spec: appsv1.DaemonSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{RollingUpdate: &appsv1.RollingUpdateDaemonSet{}}}}
		emptyStructsSteady(t, kc.AppsV1().RESTClient(), appsv1.SchemeGroupVersion.WithResource("daemonsets"), &appsv1.DaemonSet{}, ns, child.Typed(kc.AppsV1().DaemonSets), s)
	})
	t.Run("networkpolicy", func(t *testing.T) {
		ns := newNamespace(t)
		np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}, {NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{}}}}},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}}, {}},
		}}
		emptyStructsSteady(t, kc.NetworkingV1().RESTClient(), networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), &networkingv1.NetworkPolicy{}, ns, child.Typed(kc.NetworkingV1().NetworkPolicies), np)
	})
}
