package integration

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/crdclient"
)

// TestMigrateStorageManagedFields: a Gadget written in v1alpha1, by
// server-side apply and by a merge patch, has managedFields entries of
// v1alpha1, which the API server converts the object to on every
// server-side apply. After MigrateStorage and a CRD without v1alpha1, no
// entry names v1alpha1, and both writers write the Gadget again in v1
// (before, the apply failed with "request to convert CR to an invalid
// group/version").
func TestMigrateStorageManagedFields(t *testing.T) {
	t.Parallel() // a CRD in a group of its own
	dyn := dynamicClientset(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*crdTimeout)
	defer cancel()
	c, crd, old, v1 := installGadgets(ctx, t, crdclient.Config{Client: apiextensionsClientset(t), Dynamic: dyn}, gadgetVersions("v1alpha1", "v1alpha1"))
	ns := newNamespace(t)

	// apply applies the Gadget's spec.n in version gvr as the manager "user".
	apply := func(gvr schema.GroupVersionResource, n int64) error {
		g := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": "Gadget",
			"metadata": map[string]any{"name": "g", "namespace": ns},
			"spec":     map[string]any{"n": n},
		}}
		_, err := dyn.Resource(gvr).Namespace(ns).Apply(ctx, "g", g, metav1.ApplyOptions{FieldManager: "user", Force: true})
		return err
	}
	// label sets a label in version gvr as the manager "editor".
	label := func(gvr schema.GroupVersionResource, value string) error {
		patch := []byte(`{"metadata":{"labels":{"edited":"` + value + `"}}}`)
		_, err := dyn.Resource(gvr).Namespace(ns).Patch(ctx, "g", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "editor"})
		return err
	}
	if err := apply(old, 1); err != nil {
		t.Fatalf("apply in v1alpha1: %v", err)
	}
	if err := label(old, "one"); err != nil {
		t.Fatalf("label in v1alpha1: %v", err)
	}

	crd.Spec.Versions = gadgetVersions("v1", "v1alpha1", "v1")
	if err := c.EnsureCreated(ctx, crd, nil); err != nil {
		t.Fatalf("EnsureCreated(%s) with storage version v1: %v", crd.Name, err)
	}
	if m, err := c.MigrateStorage(ctx, crd, nil); err != nil || m.Rewritten != 1 {
		t.Fatalf("MigrateStorage = %+v, %v; want 1 rewritten", m, err)
	}
	withoutOld := crd.DeepCopy()
	withoutOld.Spec.Versions = gadgetVersions("v1", "v1")
	if err := c.EnsureCreated(ctx, withoutOld, nil); err != nil {
		t.Fatalf("EnsureCreated without v1alpha1 after the migration: %v", err)
	}

	g, err := dyn.Resource(v1).Namespace(ns).Get(ctx, "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range g.GetManagedFields() {
		if e.APIVersion != v1.GroupVersion().String() {
			t.Errorf("managedFields entry of %s (%s) names %s after the migration", e.Manager, e.Operation, e.APIVersion)
		}
	}
	// The API server may serve the CRD without v1alpha1 a moment after
	// EnsureCreated: a write that fails is tried again until it passes.
	poll(t, "an apply in v1 after v1alpha1 was dropped", func(context.Context) (bool, error) {
		err := apply(v1, 2)
		if err != nil {
			t.Logf("apply in v1: %v", err)
		}
		return err == nil, nil
	})
	poll(t, "a merge patch in v1 after v1alpha1 was dropped", func(context.Context) (bool, error) {
		err := label(v1, "two")
		if err != nil {
			t.Logf("label in v1: %v", err)
		}
		return err == nil, nil
	})
}

// TestMigrateStorageMergesEntriesOfOneManager: a manager that updated a
// Gadget through v1alpha1 and then through v1 has an entry of each (the API
// server tells Update entries apart by version). After MigrateStorage its
// one entry, of v1, still owns the fields of both; before, the two entries
// of the same name reached the API server, which kept one of them, and the
// manager lost the fields of the other.
func TestMigrateStorageMergesEntriesOfOneManager(t *testing.T) {
	t.Parallel() // a CRD in a group of its own
	dyn := dynamicClientset(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*crdTimeout)
	defer cancel()
	c, crd, old, v1 := installGadgets(ctx, t, crdclient.Config{Client: apiextensionsClientset(t), Dynamic: dyn}, gadgetVersions("v1alpha1", "v1alpha1"))
	ns := newNamespace(t)
	g := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": old.GroupVersion().String(), "kind": "Gadget",
		"metadata": map[string]any{"name": "g", "namespace": ns},
		"spec":     map[string]any{"n": int64(1)},
	}}
	if _, err := dyn.Resource(old).Namespace(ns).Create(ctx, g, metav1.CreateOptions{FieldManager: "creator"}); err != nil {
		t.Fatal(err)
	}
	// label sets a label in version gvr as the manager "editor".
	label := func(gvr schema.GroupVersionResource, key string) error {
		patch := []byte(`{"metadata":{"labels":{"` + key + `":"x"}}}`)
		_, err := dyn.Resource(gvr).Namespace(ns).Patch(ctx, "g", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "editor"})
		return err
	}
	if err := label(old, "old"); err != nil {
		t.Fatalf("label in v1alpha1: %v", err)
	}
	crd.Spec.Versions = gadgetVersions("v1", "v1alpha1", "v1")
	if err := c.EnsureCreated(ctx, crd, nil); err != nil {
		t.Fatalf("EnsureCreated(%s) with storage version v1: %v", crd.Name, err)
	}
	poll(t, "a label in v1", func(context.Context) (bool, error) {
		err := label(v1, "new")
		if err != nil {
			t.Logf("label in v1: %v", err)
		}
		return err == nil, nil
	})
	if m, err := c.MigrateStorage(ctx, crd, nil); err != nil || m.Rewritten != 1 {
		t.Fatalf("MigrateStorage = %+v, %v; want 1 rewritten", m, err)
	}

	got, err := dyn.Resource(v1).Namespace(ns).Get(ctx, "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var editor []metav1.ManagedFieldsEntry
	for _, e := range got.GetManagedFields() {
		if e.APIVersion != v1.GroupVersion().String() {
			t.Errorf("managedFields entry of %s (%s) names %s after the migration", e.Manager, e.Operation, e.APIVersion)
		}
		if e.Manager == "editor" {
			editor = append(editor, e)
		}
	}
	if len(editor) != 1 || editor[0].FieldsV1 == nil {
		t.Fatalf("entries of editor after the migration: %+v, want one", editor)
	}
	for _, key := range []string{`"f:old"`, `"f:new"`} {
		if !strings.Contains(string(editor[0].FieldsV1.Raw), key) {
			t.Errorf("editor's entry %s does not own the label %s any more", editor[0].FieldsV1.Raw, key)
		}
	}
}
