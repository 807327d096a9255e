package informer_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"

	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/informer/informertest"
)

// ExampleList lists the pods of a Deployment (its namespace and selector)
// from an informer of pods (here an in-memory one), as controller-runtime's
// client.List with InNamespace and MatchingLabels does.
func ExampleList() {
	pod := func(ns, name, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}}}
	}
	pods := informertest.New(pod("demo", "web-b", "web"), pod("demo", "web-a", "web"), pod("demo", "db-a", "db"), pod("other", "web-c", "web"))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}

	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		fmt.Println(err)
		return
	}
	list, err := informer.List[*corev1.Pod](pods, d.Namespace, selector)
	for _, p := range list {
		fmt.Println(p.Name)
	}
	fmt.Println(err)
	// Output:
	// web-a
	// web-b
	// <nil>
}

// TestList: objects of the namespace ("" for every namespace) whose labels
// match, sorted by namespace and name, typed, for an in-memory informer
// (scanned) and an *Informer (through its namespace index).
func TestList(t *testing.T) {
	objs := []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "x", Labels: map[string]string{"app": "web"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "z", Labels: map[string]string{"app": "web"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "y", Labels: map[string]string{"app": "db"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "w", Labels: map[string]string{"app": "web"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "v"}},
	}
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	client := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ConfigMapList"})
	indexed, err := informer.New(informer.Config{Client: client, GVR: gvr})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := indexed.SharedIndexInformer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	tests := []struct {
		namespace string
		selector  labels.Selector
		want      []string
	}{
		{"a", web, []string{"a/w", "a/z"}},
		{"a", nil, []string{"a/v", "a/w", "a/y", "a/z"}},
		{"a", labels.Everything(), []string{"a/v", "a/w", "a/y", "a/z"}},
		{"", web, []string{"a/w", "a/z", "b/x"}},
		{"b", labels.SelectorFromSet(labels.Set{"app": "db"}), []string{}},
		{"none", nil, []string{}},
	}
	for name, inf := range map[string]informer.Lister{"in-memory": informertest.New(objs...), "indexed": indexed} {
		for _, tt := range tests {
			got, err := informer.List[*corev1.ConfigMap](inf, tt.namespace, tt.selector)
			if err != nil {
				t.Fatalf("%s: List(%q, %v): %v", name, tt.namespace, tt.selector, err)
			}
			keys := []string{}
			for _, cm := range got {
				keys = append(keys, cm.Namespace+"/"+cm.Name)
			}
			if !slices.Equal(keys, tt.want) {
				t.Errorf("%s: List(%q, %v) = %v, want %v", name, tt.namespace, tt.selector, keys, tt.want)
			}
		}
	}
}

// TestListMetadataOnlyAndClusterScoped: a metadata-only cache lists as
// *metav1.PartialObjectMetadata, and a cluster-scoped kind with the empty
// namespace.
func TestListMetadataOnlyAndClusterScoped(t *testing.T) {
	pods := informertest.New(
		&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": "web"}}},
		&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"}},
	)
	got, err := informer.List[*metav1.PartialObjectMetadata](pods, "ns", labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil || len(got) != 1 || got[0].Name != "p" {
		t.Errorf("List(metadata-only) = %v, %v; want [p]", got, err)
	}
	namespaces := informertest.New(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	all, err := informer.List[*corev1.Namespace](namespaces, "", nil)
	if err != nil || len(all) != 2 || all[0].Name != "a" || all[1].Name != "b" {
		t.Errorf("List(namespaces) = %v, %v; want [a b]", all, err)
	}
}

// TestListWrongType: a matching cached object of another type than T is an
// error naming the informer's resource, the object and both types, not a
// panic; objects that do not match are not looked at.
func TestListWrongType(t *testing.T) {
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	client := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "SecretList"})
	inf, err := informer.New(informer.Config{Client: client, GVR: gvr})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetNamespace("ns")
	u.SetName("db")
	if err := inf.SharedIndexInformer().GetIndexer().Add(u); err != nil {
		t.Fatal(err)
	}
	got, err := informer.List[*corev1.Secret](inf, "ns", nil)
	want := "list secrets: ns/db: the cache holds a *unstructured.Unstructured, not a *v1.Secret: cached object of another type"
	if !errors.Is(err, informer.ErrWrongType) || err.Error() != want || got != nil {
		t.Fatalf("List() = %v, %v; want nil, %q (ErrWrongType)", got, err, want)
	}
	if got, err := informer.List[*corev1.Secret](inf, "other", nil); err != nil || len(got) != 0 {
		t.Errorf("List(other namespace) = %v, %v; want none, nil", got, err)
	}
}

// TestListNilInformer: a nil informer is ErrInvalidConfig, not a panic.
func TestListNilInformer(t *testing.T) {
	var inf *informer.Informer
	if _, err := informer.List[*corev1.Secret](inf, "ns", nil); !errors.Is(err, informer.ErrInvalidConfig) {
		t.Fatalf("List(nil *Informer) error = %v, want ErrInvalidConfig", err)
	}
	if _, err := informer.List[*corev1.Secret](nil, "ns", nil); !errors.Is(err, informer.ErrInvalidConfig) {
		t.Fatalf("List(nil) error = %v, want ErrInvalidConfig", err)
	}
}
