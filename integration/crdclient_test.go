package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/operatorkit/operatorkit/crdclient"
)

// crdTimeout bounds one EnsureCreated or EnsureDeleted in these tests.
const crdTimeout = time.Minute

var crdGroupCounter atomic.Int64

// uniqueCRDGroup returns an API group no other test on the shared server
// uses.
func uniqueCRDGroup(t *testing.T) string {
	return fmt.Sprintf("%s-%d.operatorkit.example", dnsName(t.Name()), crdGroupCounter.Add(1))
}

// namespacedCRD returns (without creating it) a namespaced CRD in group with
// the given kind, plural kind+"s" lower-cased, one served and stored version
// v1, and a schema that keeps any spec.
func namespacedCRD(group, kind string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: openObjectSchema()},
			}},
		},
	}
}

func openObjectSchema() *apiextensionsv1.JSONSchemaProps {
	preserve := true
	return &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", XPreserveUnknownFields: &preserve},
		},
	}
}

func apiextensionsClientset(t *testing.T) apiextensionsclient.Interface {
	t.Helper()
	c, err := apiextensionsclient.NewForConfig(env.Config())
	if err != nil {
		t.Fatalf("new apiextensions clientset: %v", err)
	}
	return c
}

func newCRDClient(t *testing.T) *crdclient.CRDClient {
	t.Helper()
	c, err := crdclient.New(crdclient.Config{Client: apiextensionsClientset(t)})
	if err != nil {
		t.Fatalf("crdclient.New: %v", err)
	}
	return c
}

// deleteCRDOnCleanup deletes crd when the test ends (t.Context is already
// cancelled then, hence a context of its own). A CRD the API server has not
// removed within crdTimeout is logged, not failed: its deletion was asked
// for and this server is the package's own; EnsureDeleted's waiting is
// asserted by TestCRDClientCreateUpdateDelete. (Seen once, in
// TestCRDClientNamesConflict under the full suite's load: the server's
// CRD finalizer had not removed customresourcecleanup.apiextensions.k8s.io
// from a CRD without objects after 60 s.)
func deleteCRDOnCleanup(t *testing.T, c *crdclient.CRDClient, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), crdTimeout)
		defer cancel()
		switch err := c.EnsureDeleted(ctx, crd, nil); {
		case errors.Is(err, crdclient.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
			t.Logf("cleanup: CRD %s not gone yet: %v", crd.Name, err)
		case err != nil:
			t.Errorf("cleanup: delete CRD %s: %v", crd.Name, err)
		}
	})
}

// createWidgetCRD creates a Widget CRD in a group of the test's own, waits
// until it is established, deletes it when the test ends, and returns the
// resource of its version v1.
func createWidgetCRD(t *testing.T) schema.GroupVersionResource {
	t.Helper()
	c := newCRDClient(t)
	crd := namespacedCRD(uniqueCRDGroup(t), "Widget")
	ctx, cancel := context.WithTimeout(t.Context(), crdTimeout)
	defer cancel()
	if err := c.EnsureCreated(ctx, crd, nil); err != nil {
		t.Fatalf("EnsureCreated(%s): %v", crd.Name, err)
	}
	deleteCRDOnCleanup(t, c, crd)
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
}

func dynamicClientset(t *testing.T) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatalf("new dynamic client: %v", err)
	}
	return c
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType) apiextensionsv1.ConditionStatus {
	for _, c := range crd.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func TestCRDClientCreateUpdateDelete(t *testing.T) {
	t.Parallel() // CRDs in a group of its own
	c := newCRDClient(t)
	crds := apiextensionsClientset(t).ApiextensionsV1().CustomResourceDefinitions()
	crd := namespacedCRD(uniqueCRDGroup(t), "Widget")
	deleteCRDOnCleanup(t, c, crd)
	ctx, cancel := context.WithTimeout(t.Context(), 3*crdTimeout)
	defer cancel()

	// Create: established when EnsureCreated returns.
	if err := c.EnsureCreated(ctx, crd, nil); err != nil {
		t.Fatalf("EnsureCreated: %v", err)
	}
	got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crdCondition(got, apiextensionsv1.Established) != apiextensionsv1.ConditionTrue ||
		crdCondition(got, apiextensionsv1.NamesAccepted) != apiextensionsv1.ConditionTrue {
		t.Fatalf("after EnsureCreated: conditions %+v, want Established and NamesAccepted True", got.Status.Conditions)
	}
	rv := got.ResourceVersion

	// Idempotent: the same spec again changes nothing.
	if err := c.EnsureCreated(ctx, crd, nil); err != nil {
		t.Fatalf("EnsureCreated again: %v", err)
	}
	if got, err = crds.Get(ctx, crd.Name, metav1.GetOptions{}); err != nil || got.ResourceVersion != rv {
		t.Errorf("EnsureCreated with the same spec wrote the CRD: resourceVersion %s -> %s (err %v)", rv, got.ResourceVersion, err)
	}

	// Update: a printer column and a second served version.
	updated := crd.DeepCopy()
	updated.Spec.Versions[0].AdditionalPrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "string", JSONPath: ".spec.size"}}
	updated.Spec.Versions = append(updated.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
		Name: "v2", Served: true, Storage: false,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: openObjectSchema()},
	})
	if err := c.EnsureCreated(ctx, updated, nil); err != nil {
		t.Fatalf("EnsureCreated with an updated spec: %v", err)
	}
	if got, err = crds.Get(ctx, crd.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Versions) != 2 || len(got.Spec.Versions[0].AdditionalPrinterColumns) != 1 {
		t.Errorf("after update: versions %+v, want v1 with a printer column and v2", got.Spec.Versions)
	}
	// v2 is served at once: a custom resource can be created through it.
	v2 := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v2", Resource: "widgets"}
	ns := newNamespace(t)
	w := &unstructured.Unstructured{}
	w.SetAPIVersion(crd.Spec.Group + "/v2")
	w.SetKind("Widget")
	w.SetName("w1")
	if _, err := dynamicClientset(t).Resource(v2).Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a Widget through v2: %v", err)
	}

	// Delete: gone when EnsureDeleted returns, with its custom resources.
	if err := c.EnsureDeleted(ctx, crd, nil); err != nil {
		t.Fatalf("EnsureDeleted: %v", err)
	}
	if _, err := crds.Get(ctx, crd.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after EnsureDeleted: get = %v, want NotFound", err)
	}
	if err := c.EnsureDeleted(ctx, crd, nil); err != nil {
		t.Errorf("EnsureDeleted of a missing CRD: %v", err)
	}
}

func TestCRDClientInvalidSchema(t *testing.T) {
	t.Parallel()
	c := newCRDClient(t)
	crd := namespacedCRD(uniqueCRDGroup(t), "Widget")
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema = &apiextensionsv1.JSONSchemaProps{Type: "string"}
	ctx, cancel := context.WithTimeout(t.Context(), crdTimeout)
	defer cancel()

	start := time.Now()
	err := c.EnsureCreated(ctx, crd, nil)
	if !errors.Is(err, crdclient.ErrInvalidCRD) || !apierrors.IsInvalid(err) {
		t.Fatalf("EnsureCreated with a string root schema = %v, want ErrInvalidCRD and an Invalid API error", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "must be object at the root") || !strings.Contains(msg, "openAPIV3Schema.type") {
		t.Errorf("error = %q, want the server's field error (openAPIV3Schema.type: must be object at the root)", msg)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("EnsureCreated took %v: a rejection must not be retried", d)
	}
	if _, err := apiextensionsClientset(t).ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the invalid CRD exists: get = %v", err)
	}
}

func TestCRDClientNamesConflict(t *testing.T) {
	t.Parallel()
	c := newCRDClient(t)
	group := uniqueCRDGroup(t)
	widgets := namespacedCRD(group, "Widget")
	// Same group, other plural, same kind: the names controller refuses it.
	gadgets := namespacedCRD(group, "Gadget")
	gadgets.Spec.Names.Kind = "Widget"
	gadgets.Spec.Names.ListKind = "GadgetList" // so that only the kind conflicts
	deleteCRDOnCleanup(t, c, widgets)
	deleteCRDOnCleanup(t, c, gadgets)
	ctx, cancel := context.WithTimeout(t.Context(), 2*crdTimeout)
	defer cancel()

	if err := c.EnsureCreated(ctx, widgets, nil); err != nil {
		t.Fatalf("EnsureCreated(%s): %v", widgets.Name, err)
	}
	err := c.EnsureCreated(ctx, gadgets, nil)
	if !errors.Is(err, crdclient.ErrCRDNotAccepted) {
		t.Fatalf("EnsureCreated of a CRD with a taken kind = %v, want ErrCRDNotAccepted", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "KindConflict") || !strings.Contains(msg, `"Widget" is already in use`) {
		t.Errorf("error = %q, want the condition's reason KindConflict and its message", msg)
	}
}

// TestCRDClientNamesConflictOnUpdate: an update of an established CRD that
// takes a short name another CRD of its group uses fails at once with
// ErrCRDNotAccepted naming that CRD. The update that follows succeeds,
// although NamesAccepted is still False from the conflict when
// EnsureCreated reads the CRD after it (this API server does not report
// the conditions' observedGeneration): when it takes the name back out, the
// API server never sets NamesAccepted again (its names controller skips a
// CRD whose names are its accepted ones); when it takes a free short name
// instead, NamesAccepted turns True a moment later.
func TestCRDClientNamesConflictOnUpdate(t *testing.T) {
	t.Parallel()
	c := newCRDClient(t)
	group := uniqueCRDGroup(t)
	widgets := namespacedCRD(group, "Widget")
	gadgets := namespacedCRD(group, "Gadget")
	deleteCRDOnCleanup(t, c, widgets)
	deleteCRDOnCleanup(t, c, gadgets)
	ctx, cancel := context.WithTimeout(t.Context(), 3*crdTimeout)
	defer cancel()
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{widgets, gadgets} {
		if err := c.EnsureCreated(ctx, crd, nil); err != nil {
			t.Fatalf("EnsureCreated(%s): %v", crd.Name, err)
		}
	}

	for i := range 4 {
		taken := widgets.DeepCopy()
		taken.Spec.Names.ShortNames = []string{"gadgets"}
		start := time.Now()
		err := c.EnsureCreated(ctx, taken, nil)
		if !errors.Is(err, crdclient.ErrCRDNotAccepted) {
			t.Fatalf("%d: EnsureCreated with the short name gadgets = %v, want ErrCRDNotAccepted", i, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "ShortNamesConflict") || !strings.Contains(msg, gadgets.Name) {
			t.Errorf("%d: error = %q, want the reason ShortNamesConflict and the CRD that uses the name, %s", i, msg, gadgets.Name)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%d: EnsureCreated took %v: a names conflict must fail at once", i, d)
		}

		fixed := widgets.DeepCopy()
		if i%2 == 1 {
			fixed.Spec.Names.ShortNames = []string{fmt.Sprintf("wd%d", i)}
		}
		if err := c.EnsureCreated(ctx, fixed, nil); err != nil {
			t.Fatalf("%d: EnsureCreated with short names %v = %v, want nil", i, fixed.Spec.Names.ShortNames, err)
		}
	}
}

// TestCRDClientUpdateOutlastsConflicts: other writers change the CRD (its
// annotations) without pause while EnsureCreated updates its spec, so that
// the update's resourceVersion is stale again and again for a second and a
// half: EnsureCreated keeps trying at its backoff's pace, and succeeds once
// they stop, instead of failing with the conflict after a few quick tries.
func TestCRDClientUpdateOutlastsConflicts(t *testing.T) {
	t.Parallel()
	c := newCRDClient(t)
	crds := apiextensionsClientset(t).ApiextensionsV1().CustomResourceDefinitions()
	crd := namespacedCRD(uniqueCRDGroup(t), "Widget")
	deleteCRDOnCleanup(t, c, crd)
	ctx, cancel := context.WithTimeout(t.Context(), 2*crdTimeout)
	defer cancel()
	if err := c.EnsureCreated(ctx, crd, nil); err != nil {
		t.Fatalf("EnsureCreated: %v", err)
	}

	busy, stop := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer stop()
	var writers sync.WaitGroup
	var writes atomic.Int64
	for w := range 8 {
		writers.Go(func() {
			for i := 0; busy.Err() == nil; i++ {
				patch := fmt.Sprintf(`{"metadata":{"annotations":{"writer-%d":"%d"}}}`, w, i)
				if _, err := crds.Patch(busy, crd.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
					writes.Add(1)
				}
			}
		})
	}
	updated := crd.DeepCopy()
	updated.Spec.Versions[0].AdditionalPrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "string", JSONPath: ".spec.size"}}
	err := c.EnsureCreated(ctx, updated, nil)
	stop()
	writers.Wait()
	if err != nil {
		t.Fatalf("EnsureCreated while others write the CRD (%d writes) = %v, want nil", writes.Load(), err)
	}
	got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cols := got.Spec.Versions[0].AdditionalPrinterColumns; len(cols) != 1 || cols[0].Name != "Size" {
		t.Errorf("printer columns = %+v, want the updated spec's", cols)
	}
}
