package integration

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// sizeCRD is namespacedCRD with spec.size of the given type.
func sizeCRD(group, sizeType string) *apiextensionsv1.CustomResourceDefinition {
	crd := namespacedCRD(group, "Gadget")
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema = &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: sizeType}}},
		},
	}
	return crd
}

// createGadget creates a Gadget with spec.size size through gvr.
func createGadget(ctx context.Context, t *testing.T, gvr schema.GroupVersionResource, ns, name string, size any) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.Group + "/" + gvr.Version, "kind": "Gadget",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"size": size},
	}}
	_, err := dynamicClientset(t).Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	return err
}

// TestCRDClientAnotherSchemaInForce: a CRD that exists with another schema
// (spec.size a string) is updated by EnsureCreated (spec.size an integer),
// and when it returns the new schema is the one custom resources are
// validated against.
func TestCRDClientAnotherSchemaInForce(t *testing.T) {
	t.Parallel()
	c := newCRDClient(t)
	group := uniqueCRDGroup(t)
	old := sizeCRD(group, "string")
	deleteCRDOnCleanup(t, c, old)
	ctx, cancel := context.WithTimeout(t.Context(), 3*crdTimeout)
	defer cancel()
	if err := c.EnsureCreated(ctx, old, nil); err != nil {
		t.Fatalf("EnsureCreated: %v", err)
	}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	ns := newNamespace(t)
	if err := createGadget(ctx, t, gvr, ns, "g0", "small"); err != nil {
		t.Fatalf("create under the old schema: %v", err)
	}
	if err := c.EnsureCreated(ctx, sizeCRD(group, "integer"), nil); err != nil {
		t.Fatalf("EnsureCreated with another schema: %v", err)
	}
	if err := createGadget(ctx, t, gvr, ns, "g1", int64(3)); err != nil {
		t.Fatalf("create under the new schema right after EnsureCreated: %v", err)
	}
}
