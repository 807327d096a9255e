package informer_test

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"

	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/informer/informertest"
)

// ExampleGet reads the Secret that an object names, typed, from the
// informer of Secrets (here an in-memory one).
func ExampleGet() {
	secrets := informertest.New(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "db"},
		Data:       map[string][]byte{"password": []byte("one")},
	})
	secret, ok, err := informer.Get[*corev1.Secret](secrets, "demo", "db")
	fmt.Println(ok, err, string(secret.Data["password"]))
	_, ok, err = informer.Get[*corev1.Secret](secrets, "demo", "missing")
	fmt.Println(ok, err)
	_, _, err = informer.Get[*corev1.ConfigMap](secrets, "demo", "db")
	fmt.Println(err)
	// Output:
	// true <nil> one
	// false <nil>
	// get *informertest.Informer demo/db: the cache holds a *v1.Secret, not a *v1.ConfigMap: cached object of another type
}

// TestGet: the key is "namespace/name", or "name" for a cluster-scoped
// object; the object comes back typed, a missing one as the zero T, for
// typed, metadata-only and unstructured caches.
func TestGet(t *testing.T) {
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	secret := &corev1.Secret{ObjectMeta: meta("ns", "db")}
	namespace := &corev1.Namespace{ObjectMeta: meta("", "ns")}
	partial := &metav1.PartialObjectMetadata{ObjectMeta: meta("ns", "partial")}
	u := &unstructured.Unstructured{}
	u.SetNamespace("ns")
	u.SetName("u")
	inf := informertest.New(secret, namespace, partial, u)

	if got, ok, err := informer.Get[*corev1.Secret](inf, "ns", "db"); err != nil || !ok || got != secret {
		t.Errorf("Get(ns, db) = %p, %v, %v; want %p, true, nil", got, ok, err, secret)
	}
	if got, ok, err := informer.Get[*corev1.Namespace](inf, "", "ns"); err != nil || !ok || got != namespace {
		t.Errorf("Get(\"\", ns) = %p, %v, %v; want %p, true, nil", got, ok, err, namespace)
	}
	if got, ok, err := informer.Get[*metav1.PartialObjectMetadata](inf, "ns", "partial"); err != nil || !ok || got != partial {
		t.Errorf("Get(ns, partial) = %p, %v, %v; want %p, true, nil", got, ok, err, partial)
	}
	if got, ok, err := informer.Get[*unstructured.Unstructured](inf, "ns", "u"); err != nil || !ok || got != u {
		t.Errorf("Get(ns, u) = %p, %v, %v; want %p, true, nil", got, ok, err, u)
	}
	for _, key := range [][2]string{{"", "db"}, {"ns", "ns"}, {"other", "db"}} {
		if got, ok, err := informer.Get[*corev1.Secret](inf, key[0], key[1]); err != nil || ok || got != nil {
			t.Errorf("Get(%q, %q) = %v, %v, %v; want nil, false, nil", key[0], key[1], got, ok, err)
		}
	}
}

// TestGetWrongType: a cached object of another type than T is an error
// naming the informer's resource, the key and both types, not a panic.
func TestGetWrongType(t *testing.T) {
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	client := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "SecretList"})
	inf, err := informer.New(informer.Config{Client: client, GVR: gvr})
	if err != nil {
		t.Fatal(err)
	}
	// What a typed informer of another ObjectType, or a metadata-only one,
	// would hold.
	for _, obj := range []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}},
		&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
	} {
		if err := inf.SharedIndexInformer().GetIndexer().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, namespace, objName string
		get                      func(inf informer.Getter, namespace, name string) (any, bool, error)
		want                     string
	}{{
		name: "typed", namespace: "ns", objName: "db", get: get[*corev1.Secret],
		want: "get secrets ns/db: the cache holds a *v1.ConfigMap, not a *v1.Secret: cached object of another type",
	}, {
		name: "metadata only", objName: "cluster", get: get[*corev1.Secret],
		want: "get secrets cluster: the cache holds a *v1.PartialObjectMetadata, not a *v1.Secret: cached object of another type",
	}, {
		name: "unstructured", namespace: "ns", objName: "db", get: get[*unstructured.Unstructured],
		want: "get secrets ns/db: the cache holds a *v1.ConfigMap, not a *unstructured.Unstructured: cached object of another type",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := tt.get(inf, tt.namespace, tt.objName)
			if !errors.Is(err, informer.ErrWrongType) || err.Error() != tt.want {
				t.Fatalf("Get() error = %v, want %q (ErrWrongType)", err, tt.want)
			}
			if !ok || !isNilPointer(got) {
				t.Errorf("Get() = %v, %v; want the zero T, true", got, ok)
			}
		})
	}
}

// TestGetError: an error of the informer's Get is returned wrapped, with
// the resource and the key.
func TestGetError(t *testing.T) {
	boom := errors.New("boom")
	_, _, err := informer.Get[*corev1.Secret](failingGetter{boom}, "ns", "db")
	if !errors.Is(err, boom) || err.Error() != "get informer_test.failingGetter ns/db: boom" {
		t.Fatalf("Get() error = %v", err)
	}
}

// get is informer.Get with its result as any, for a table of types.
func get[T runtime.Object](inf informer.Getter, namespace, name string) (any, bool, error) {
	return informer.Get[T](inf, namespace, name)
}

func isNilPointer(v any) bool {
	switch v := v.(type) {
	case *corev1.Secret:
		return v == nil
	case *unstructured.Unstructured:
		return v == nil
	}
	return false
}

type failingGetter struct{ err error }

func (g failingGetter) Get(string) (any, bool, error) { return nil, false, g.err }

// TestGetNilInformer: a nil informer (an interface left nil, or a
// *Informer never made) is an error matching ErrInvalidConfig that names
// the key, not a nil pointer dereference inside Get.
func TestGetNilInformer(t *testing.T) {
	var never *informer.Informer
	tests := []struct {
		name string
		inf  informer.Getter
		want string
	}{
		{"nil", nil, "invalid config: get ns/db: the informer is nil (<nil>)"},
		{"nil *Informer", never, "invalid config: get ns/db: the informer is nil (*informer.Informer)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Get() with a nil informer panicked: %v", r)
				}
			}()
			got, ok, err := informer.Get[*corev1.Secret](tt.inf, "ns", "db")
			if !errors.Is(err, informer.ErrInvalidConfig) || err.Error() != tt.want || ok || got != nil {
				t.Fatalf("Get() = %v, %v, %v; want nil, false, %q (ErrInvalidConfig)", got, ok, err, tt.want)
			}
		})
	}
}
