package operator

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/informer"
)

// TestReferences: the objects of the Framework's informer are indexed by
// the keys refs returns, and an object of source maps to the keys of the
// objects that refer to it; a refs that panics indexes its object as
// referring to nothing (the informer goes on); bad arguments are
// ErrInvalidConfig. Events reaching the Framework through the index are
// tested against a real API server (integration's TestBackupOperator).
func TestReferences(t *testing.T) {
	o, f := thingsFramework(t)
	secrets, err := o.Informer(informer.Config{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}})
	if err != nil {
		t.Fatal(err)
	}
	refs := func(obj any) []string {
		u := obj.(*unstructured.Unstructured)
		name, _, _ := unstructured.NestedString(u.Object, "spec", "secretName")
		if name == "panic" {
			panic("refs of " + u.GetName())
		}
		return []string{u.GetNamespace() + "/" + name}
	}
	for _, bad := range []struct {
		name string
		call func() error
		want string
	}{
		{"nil framework", func() error { return o.References(nil, secrets, refs) }, "must not be nil"},
		{"nil source", func() error { return o.References(f, nil, refs) }, "must not be nil"},
		{"nil refs", func() error { return o.References(f, secrets, nil) }, "must not be nil"},
		{"nil predicate", func() error { return o.References(f, secrets, refs, nil) }, "predicates[0]"},
	} {
		if err := bad.call(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: References = %v, want ErrInvalidConfig naming %q", bad.name, err, bad.want)
		}
	}
	if err := o.References(f, secrets, refs); err != nil {
		t.Fatal(err)
	}

	indexer := f.Informer().(*SharedInformer).SharedIndexInformer().GetIndexer()
	var index string
	for name := range indexer.GetIndexers() {
		if strings.HasPrefix(name, "operatorkit.io/references/") {
			index = name
		}
	}
	if index == "" {
		t.Fatalf("no References index on the Framework's informer: %v", indexer.GetIndexers())
	}
	thing := func(ns, name, secret string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("test.operatorkit.io/v1")
		u.SetKind("Thing")
		u.SetNamespace(ns)
		u.SetName(name)
		_ = unstructured.SetNestedField(u.Object, secret, "spec", "secretName")
		return u
	}
	for _, obj := range []*unstructured.Unstructured{
		thing("ns", "a", "s1"), thing("ns", "b", "s1"), thing("ns", "c", "s2"),
		thing("other", "d", "s1"), thing("ns", "e", "panic"),
	} {
		if err := indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	secret := func(ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	mapFunc := referrers(indexer, index)
	for _, tt := range []struct {
		secret *unstructured.Unstructured
		want   []string
	}{
		{secret("ns", "s1"), []string{"ns/a", "ns/b"}},
		{secret("ns", "s2"), []string{"ns/c"}},
		{secret("other", "s1"), []string{"other/d"}},
		{secret("ns", "s3"), nil},
	} {
		got := mapFunc(tt.secret)
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("the objects referring to %s/%s = %q, want %q", tt.secret.GetNamespace(), tt.secret.GetName(), got, tt.want)
		}
	}
	// The object whose refs panicked refers to nothing and is stored.
	if _, ok, _ := indexer.GetByKey("ns/e"); !ok {
		t.Error("the object whose refs panicked was not stored")
	}
	// A second References to the same source adds an index of its own.
	if err := o.References(f, secrets, refs); err != nil {
		t.Errorf("a second References: %v", err)
	}
}
