package child_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/crud"
)

// benchConfigMap is the desired ConfigMap of both contenders.
func benchConfigMap(w *corev1.Secret) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": w.Name}},
		Data:       map[string]string{"index.html": "<h1>hello</h1>"},
	}
}

// handOps is a hand-written crud.Ops for the same ConfigMap, written the
// way example/webapp/configmap.go is: cache read, desired object, a compare
// of the owned label keys, owner reference and data key.
type handOps struct{ cache *informertest.Informer }

func (handOps) Name() string { return "configmap" }

func (h handOps) GetCurrentState(_ context.Context, obj any) (any, error) {
	w := obj.(*corev1.Secret)
	x, ok, err := h.cache.Get(w.Namespace + "/" + w.Name)
	if err != nil || !ok {
		return (*corev1.ConfigMap)(nil), err
	}
	return x.(*corev1.ConfigMap), nil
}

func (handOps) GetDesiredState(_ context.Context, obj any) (any, error) {
	w := obj.(*corev1.Secret)
	cm := benchConfigMap(w)
	cm.Labels[child.LabelManagedBy] = "bench"
	cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: w.Name, UID: w.UID, Controller: new(true), BlockOwnerDeletion: new(true)}}
	return cm, nil
}

func (handOps) NewUpdatePatch(_ context.Context, _, currentState, desiredState any) (*crud.Patch, error) {
	cur, des := currentState.(*corev1.ConfigMap), desiredState.(*corev1.ConfigMap)
	patch := crud.NewPatch()
	if cur == nil {
		patch.SetCreateChange(des)
		return patch, nil
	}
	differ := false
	for _, k := range []string{child.LabelManagedBy, "app.kubernetes.io/name", "app.kubernetes.io/instance"} {
		if cur.Labels[k] != des.Labels[k] {
			differ = true
		}
	}
	if ref := metav1.GetControllerOfNoCopy(cur); ref == nil || ref.UID != des.OwnerReferences[0].UID {
		differ = true
	}
	if cur.Data["index.html"] != des.Data["index.html"] {
		differ = true
	}
	if differ {
		patch.SetUpdateChange(des)
	}
	return patch, nil
}

func (handOps) NewDeletePatch(context.Context, any, any, any) (*crud.Patch, error) { return nil, nil }
func (handOps) ApplyCreateChange(context.Context, any, any) error                  { return fmt.Errorf("write") }
func (handOps) ApplyUpdateChange(context.Context, any, any) error                  { return fmt.Errorf("write") }
func (handOps) ApplyDeleteChange(context.Context, any, any) error                  { return fmt.Errorf("write") }

// BenchmarkNoOpReconcile compares EnsureCreated of one ConfigMap child that
// needs no write: the child package against a hand-written crud resource.
// The cache holds the ConfigMap as the API server returns it (server-set
// metadata and a foreign label and annotation).
func BenchmarkNoOpReconcile(b *testing.B) {
	w := owner()
	current := benchConfigMap(w)
	current.Labels[child.LabelManagedBy] = "bench"
	current.Labels["foreign"] = "x"
	current.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}
	current.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: w.Name, UID: w.UID, Controller: new(true), BlockOwnerDeletion: new(true)}}
	current.UID, current.ResourceVersion, current.Generation = "cm-uid", "42", 1
	current.CreationTimestamp = metav1.Now()

	run := func(b *testing.B, r *crud.Resource) {
		ctx := context.Background()
		if err := r.EnsureCreated(ctx, w); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := r.EnsureCreated(ctx, w); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("handwritten", func(b *testing.B) {
		r, err := crud.New(crud.Config{Ops: handOps{cache: informertest.New(current)}})
		if err != nil {
			b.Fatal(err)
		}
		run(b, r)
	})
	b.Run("child", func(b *testing.B) {
		r, err := child.New(child.Config[*corev1.Secret, *corev1.ConfigMap]{
			Name:         "configmap",
			Client:       newFakeClient[corev1.ConfigMap]().For,
			Cache:        informertest.New(current),
			FieldManager: "bench",
			Desired: func(_ context.Context, w *corev1.Secret) (*corev1.ConfigMap, error) {
				return benchConfigMap(w), nil
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		run(b, r)
	})
}
