package integration

// The Memcached operator of the operator-sdk tutorial, ported from
// controller-runtime to operatorkit from operatorkit's docs alone (README.md,
// docs/*.md, the packages' doc.go and godoc): a Memcached gets a Deployment
// of spec.size memcached pods, and status.nodes lists the names of the pods
// that carry the Deployment's selector labels. Those pods are not the
// Memcached's children (a ReplicaSet of the Deployment owns them), so a watch
// of pods maps each to its Memcached by label.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operatorkit/operatorkit/context/statuscontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

// ---- the operator (counted: see the report of this port) ----

const memcachedOperator = "memcached-operator"

// Memcached asks for a Deployment of Spec.Size memcached pods.
type Memcached struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MemcachedSpec   `json:"spec"`
	Status            MemcachedStatus `json:"status,omitempty"`
}

// MemcachedSpec is the desired state of a Memcached.
type MemcachedSpec struct {
	Size          int32 `json:"size"`
	ContainerPort int32 `json:"containerPort,omitempty"`
}

// MemcachedStatus is written by the operator's Framework, in one apply: the
// conditions, observedGeneration, and Nodes, which the nodes resource sets.
type MemcachedStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Nodes              []string           `json:"nodes,omitempty"`
}

// DeepCopyObject is what controller-gen would write.
func (m *Memcached) DeepCopyObject() runtime.Object {
	c := *m
	m.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Status.Conditions = slices.Clone(m.Status.Conditions)
	c.Status.Nodes = slices.Clone(m.Status.Nodes)
	return &c
}

// memcachedCRD is the Memcached CRD in group, as controller-gen writes it.
func memcachedCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	crd := backupCRD(group)
	crd.Name = "memcacheds." + group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "memcacheds", Kind: "Memcached"}
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer", Minimum: ptr(0.0)}
	props["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"size"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": integer, "containerPort": integer}}
	props["status"].Properties["nodes"] = apiextensionsv1.JSONSchemaProps{Type: "array",
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}}
	return crd
}

// memcachedLabels are the labels of a Memcached's pods, its Deployment's
// selector.
func memcachedLabels(m *Memcached) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": m.Name}
}

// runMemcachedOperator runs the operator for namespace ns until the test
// ends, installing the CRD first.
func runMemcachedOperator(t *testing.T, config operatorpkg.Config, ns string, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	op, err := operatorpkg.New(config)
	must(t, err)
	memcacheds, err := op.Informer(informer.Config{GVR: gvr, ObjectType: &Memcached{}, Namespace: ns})
	must(t, err)
	deployments, err := op.Informer(informer.Config{GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), ObjectType: &appsv1.Deployment{},
		Namespace: ns, LabelSelector: child.LabelManagedBy + "=" + memcachedOperator})
	must(t, err)
	// The pods are the ReplicaSets', not the operator's: only their
	// metadata is cached, and only those of memcached.
	pods, err := op.Informer(informer.Config{GVR: corev1.SchemeGroupVersion.WithResource("pods"), ObjectType: &metav1.PartialObjectMetadata{},
		Namespace: ns, LabelSelector: "app.kubernetes.io/name=memcached"})
	must(t, err)

	deployment, err := child.New(child.Config[*Memcached, *appsv1.Deployment]{
		Name: "deployment", Client: child.Typed(op.Kubernetes().AppsV1().Deployments), Cache: deployments,
		FieldManager: memcachedOperator, Writes: op.OwnWrites(),
		Desired: func(_ context.Context, m *Memcached) (*appsv1.Deployment, error) {
			port := m.Spec.ContainerPort
			if port == 0 {
				port = 11211
			}
			return &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: m.Name},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr(m.Spec.Size),
					Selector: &metav1.LabelSelector{MatchLabels: memcachedLabels(m)},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: memcachedLabels(m)},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{
							Name: "memcached", Image: "memcached:1.6.26-alpine3.19", Command: []string{"memcached", "--memory-limit=64", "-o", "modern", "-v"},
							Ports: []corev1.ContainerPort{{ContainerPort: port, Name: "memcached"}},
						}}},
					},
				},
			}, nil
		},
	})
	must(t, err)
	nodes := &memcachedNodes{pods: pods}
	rtr, err := router.Single("v1", deployment, nodes)
	must(t, err)
	f, err := op.NewFramework(framework.Config{Name: memcachedOperator, Informer: memcacheds, ResourceRouter: rtr, Resource: gvr, Conditions: true, CRD: crd})
	must(t, err)
	must(t, op.Owns(f, schema.GroupKind{Group: gvr.Group, Kind: "Memcached"}, deployments))
	// A pod wakes the Memcached its instance label names.
	must(t, op.Watches(f, pods, func(obj any) []string {
		p := obj.(*metav1.PartialObjectMetadata)
		if name := p.Labels["app.kubernetes.io/instance"]; name != "" {
			return []string{p.Namespace + "/" + name}
		}
		return nil
	}))
	stop, _ := runOperator(op)
	t.Cleanup(func() { must(t, stop()) })
}

// memcachedNodes is the resource that keeps status.nodes: the names of the
// pods that carry the Memcached's labels, sorted, set for the Framework's
// status write (which writes them only when they changed).
type memcachedNodes struct {
	pods *operatorpkg.SharedInformer
}

func (r *memcachedNodes) Name() string { return "nodes" }

func (r *memcachedNodes) EnsureCreated(ctx context.Context, obj any) error {
	m := obj.(*Memcached)
	pods, err := informer.List[*metav1.PartialObjectMetadata](r.pods, m.Namespace, labels.SelectorFromSet(memcachedLabels(m)))
	if err != nil {
		return err
	}
	nodes := make([]string, 0, len(pods))
	for _, p := range pods {
		nodes = append(nodes, p.Name)
	}
	statuscontext.Set(ctx, "nodes", nodes)
	return nil
}

func (r *memcachedNodes) EnsureDeleted(context.Context, any) error { return nil }

// ---- the test ----

// TestMemcachedOperator runs the Memcached operator against the real API
// server and plays the Deployment and ReplicaSet controllers that it does
// not run: a Memcached gets its Deployment of spec.size replicas; the pods
// the test creates, owned by a ReplicaSet of the Deployment, appear in
// status.nodes, and those it deletes leave it; a new size changes the
// Deployment; a manual edit of its replicas is reverted; a steady Memcached
// is neither reconciled nor written in a loop; size 0 scales the Deployment
// to zero and empties status.nodes once its pods are gone; and its delete
// removes the Deployment.
func TestMemcachedOperator(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	crd := memcachedCRD(uniqueCRDGroup(t))
	deleteCRDOnCleanup(t, newCRDClient(t), crd)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	reg, counter := prometheus.NewRegistry(), requestcount.New()
	runMemcachedOperator(t, operatorpkg.Config{Name: memcachedOperator, RESTConfig: counter.Wrap(env.Config()), Logger: log.NewNopLogger(), Registry: reg}, ns, crd)
	kube := kubeClient(t)
	memcacheds := dynamicClientset(t).Resource(gvr).Namespace(ns)
	eventually := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	replicas := func(want int32) wait.ConditionWithContextFunc {
		return func(ctx context.Context) (bool, error) {
			d, err := kube.AppsV1().Deployments(ns).Get(ctx, "cache", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas == want, err
		}
	}
	nodesAre := func(want ...string) {
		t.Helper()
		slices.Sort(want)
		eventually("status.nodes "+strings.Join(want, ","), func(ctx context.Context) (bool, error) {
			u, err := memcacheds.Get(ctx, "cache", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			got, _, _ := unstructured.NestedStringSlice(u.Object, "status", "nodes")
			return slices.Equal(got, want), nil
		})
	}

	eventually("the Memcached CRD", func(ctx context.Context) (bool, error) {
		_, err := memcacheds.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": "Memcached", "metadata": map[string]any{"name": "cache"},
			"spec": map[string]any{"size": int64(3)}}}, metav1.CreateOptions{})
		return err == nil, nil
	})
	eventually("a Deployment of 3 replicas", replicas(3))
	_, err := env.WaitReady(t.Context(), gvr, ns, "cache")
	must(t, err)

	// The Deployment controller: a ReplicaSet of the Deployment's template.
	d, err := kube.AppsV1().Deployments(ns).Get(t.Context(), "cache", metav1.GetOptions{})
	must(t, err)
	rs, err := kube.AppsV1().ReplicaSets(ns).Create(t.Context(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "cache-5d4f", Labels: d.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template},
	}, metav1.CreateOptions{})
	must(t, err)
	// The ReplicaSet controller: pods of its template, owned by it.
	createPod := func(name string, labels map[string]string) {
		t.Helper()
		_, err := kube.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Spec: d.Spec.Template.Spec,
		}, metav1.CreateOptions{})
		must(t, err)
	}
	deletePod := func(name string) {
		t.Helper()
		must(t, kube.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}))
	}
	for _, name := range []string{"cache-5d4f-a", "cache-5d4f-b", "cache-5d4f-c"} {
		createPod(name, d.Spec.Template.Labels)
	}
	// A pod of another memcached, and one with other labels: neither is a node.
	createPod("other-1", map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "other"})
	createPod("unrelated", map[string]string{"app": "web"})
	nodesAre("cache-5d4f-a", "cache-5d4f-b", "cache-5d4f-c")
	deletePod("cache-5d4f-b")
	nodesAre("cache-5d4f-a", "cache-5d4f-c")

	// A new size changes the Deployment, and its new pods become nodes.
	_, err = memcacheds.Patch(t.Context(), "cache", types.MergePatchType, []byte(`{"spec":{"size":5}}`), metav1.PatchOptions{})
	must(t, err)
	eventually("a Deployment of 5 replicas", replicas(5))
	for _, name := range []string{"cache-5d4f-d", "cache-5d4f-e", "cache-5d4f-f"} {
		createPod(name, d.Spec.Template.Labels)
	}
	nodesAre("cache-5d4f-a", "cache-5d4f-c", "cache-5d4f-d", "cache-5d4f-e", "cache-5d4f-f")

	// A manual edit of the replicas is reverted.
	_, err = kube.AppsV1().Deployments(ns).Patch(t.Context(), "cache", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{})
	must(t, err)
	eventually("the Deployment's replicas reverted to 5", replicas(5))
	_, err = env.WaitReady(t.Context(), gvr, ns, "cache")
	must(t, err)

	// Steady: no reconciliation loop. Over 3 s, a handful of
	// reconciliations at most (the revert's own echo may still be in
	// flight) and no write.
	reconciles := func() float64 {
		return metricSum(t, reg, "operatorkit_framework_reconciliations_total", nil)
	}
	before, requests := reconciles(), counter.Snapshot()
	window := time.Now().Add(3 * time.Second)
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if n := reconciles() - before; n > 2 {
			return false, fmt.Errorf("%v reconciliations of a steady Memcached", n)
		}
		if w := counter.Snapshot().Sub(requests); w.Writes > 0 {
			return false, fmt.Errorf("a steady Memcached was written to: %v", w)
		}
		return time.Now().After(window), nil
	})
	must(t, err)

	// Scaled to zero: no replicas, and no nodes once the pods are gone.
	_, err = memcacheds.Patch(t.Context(), "cache", types.MergePatchType, []byte(`{"spec":{"size":0}}`), metav1.PatchOptions{})
	must(t, err)
	eventually("a Deployment of 0 replicas", replicas(0))
	for _, name := range []string{"cache-5d4f-a", "cache-5d4f-c", "cache-5d4f-d", "cache-5d4f-e", "cache-5d4f-f"} {
		deletePod(name)
	}
	nodesAre()

	// Delete: the Deployment goes (the operator deletes it; no garbage
	// collector runs here), and so does the Memcached.
	must(t, memcacheds.Delete(t.Context(), "cache", metav1.DeleteOptions{}))
	eventually("the Memcached and its Deployment deleted", func(ctx context.Context) (bool, error) {
		if _, err := memcacheds.Get(ctx, "cache", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, nil
		}
		_, err := kube.AppsV1().Deployments(ns).Get(ctx, "cache", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
