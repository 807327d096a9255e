package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/statuscontext"
	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/trace"
)

// gizmoGVR is a CRD whose status has a structural schema, as kubebuilder
// generates it: the API server refuses a status field it does not declare
// and a value it does not allow.
var gizmoGVR = schema.GroupVersionResource{Group: "schema.test.operatorkit.io", Version: "v1", Resource: "gizmos"}

func ensureGizmoCRD(t *testing.T) {
	t.Helper()
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: gizmoGVR.Resource + "." + gizmoGVR.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gizmoGVR.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr(true)},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"conditions": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
								Type: "object", XPreserveUnknownFields: ptr(true)}}},
							"observedGeneration": {Type: "integer"},
							"nodes":              {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
							"replicas":           {Type: "integer", Minimum: ptr(0.0)},
						}},
					},
				}},
			}},
		},
	}
	c, err := crdclient.New(crdclient.Config{Client: apiextensionsclient.NewForConfigOrDie(env.Config())})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureCreated(t.Context(), crd, nil); err != nil {
		t.Fatalf("ensure gizmo CRD: %v", err)
	}
}

// TestStatusFieldRefusedBySchema: a status field the CRD's schema does not
// declare (a typo), or a value it does not allow, made the API server
// refuse the Framework's whole status apply: neither the conditions nor the
// valid fields were written, and the reconciliation was retried with
// backoff as if the write could succeed later. The field is invalid: the
// reconciliation fails with a permanent error matching
// framework.ErrInvalidStatusField, and the conditions (Ready False, reason
// InvalidStatusField) and the other fields are written without it.
func TestStatusFieldRefusedBySchema(t *testing.T) {
	t.Parallel()
	ensureGizmoCRD(t)
	ns := newNamespace(t)
	r := &statusResource{name: "fields", create: func(ctx context.Context, u *unstructured.Unstructured) error {
		statuscontext.Set(ctx, "nodes", []string{u.GetName() + "-0"})
		switch u.GetName() {
		case "undeclared":
			statuscontext.Set(ctx, "node", "typo")
		case "invalid":
			statuscontext.Set(ctx, "replicas", -1)
		}
		return nil
	}}
	f := startStatusFramework(t, ns, statusOptions{gvr: gizmoGVR, backOff: constantBackOff(50 * time.Millisecond)}, resourceSet(t, "", r))
	rc := dynamicClient(t, env.Config()).Resource(gizmoGVR).Namespace(ns)
	for _, name := range []string{"undeclared", "invalid"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(gizmoGVR.GroupVersion().String())
		u.SetKind("Gizmo")
		u.SetName(name)
		u.Object["spec"] = map[string]any{}
		if _, err := rc.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"undeclared", "invalid"} {
		s := waitStatus(t, rc, name, "Ready False, reason InvalidStatusField, with nodes", func(s widgetStatus) bool {
			c := s.condition(conditioncontext.Ready)
			nodes, _, _ := unstructured.NestedStringSlice(s.obj.Object, "status", "nodes")
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == framework.ReasonInvalidStatusField &&
				len(nodes) == 1 && nodes[0] == name+"-0"
		})
		if c := s.condition(conditioncontext.Ready); c.ObservedGeneration != s.generation {
			t.Errorf("%s: Ready at generation %d, want %d", name, c.ObservedGeneration, s.generation)
		}
		tr := lastTrace(t, f.Framework, ns+"/"+name, func(tr trace.Trace) bool { return tr.Result == framework.ResultPermanent })
		if !strings.Contains(tr.Error, "status."+map[string]string{"undeclared": "node", "invalid": "replicas"}[name]) {
			t.Errorf("%s: the permanent error %q does not name the field", name, tr.Error)
		}
	}
}
