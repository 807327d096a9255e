package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/router"
)

// gadgetVersions returns the versions of a Gadget CRD: each name in served
// served, stored is the storage version. The schemas are the same (None
// conversion).
func gadgetVersions(stored string, served ...string) []apiextensionsv1.CustomResourceDefinitionVersion {
	var vs []apiextensionsv1.CustomResourceDefinitionVersion
	for _, name := range served {
		vs = append(vs, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: name, Served: true, Storage: name == stored,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: openObjectSchema()},
		})
	}
	return vs
}

// listAll lists every object of gvr, a page at a time, by namespace/name.
func listAll(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource) (map[string]unstructured.Unstructured, error) {
	t.Helper()
	all := map[string]unstructured.Unstructured{}
	cont := ""
	for {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 100, Continue: cont})
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			all[o.GetNamespace()+"/"+o.GetName()] = o
		}
		if cont = list.GetContinue(); cont == "" {
			return all, nil
		}
	}
}

// TestCRDClientMigrateStorage: objects created while v1alpha1 was the
// storage version stay stored in it after v1 becomes the storage version,
// and status.storedVersions keeps v1alpha1, so that a later CRD without
// v1alpha1 is refused. MigrateStorage rewrites every object (a page of 7
// at a time, in two namespaces, while others are created) and leaves
// storedVersions [v1]: the CRD without v1alpha1 is then accepted, every
// object (which the API server could not read if it were still stored in
// v1alpha1) reads back unchanged, and a second call writes nothing.
func TestCRDClientMigrateStorage(t *testing.T) {
	t.Parallel() // a CRD in a group of its own
	const perNamespace = 125
	dyn := dynamicClientset(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*crdTimeout)
	defer cancel()
	c, crd, old, v1 := installGadgets(ctx, t, crdclient.Config{Client: apiextensionsClientset(t), Dynamic: dyn, MigrationPageSize: 7}, gadgetVersions("v1alpha1", "v1alpha1"))

	namespaces := []string{newNamespace(t), newNamespace(t)}
	for _, ns := range namespaces {
		for i := range perNamespace {
			g := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": old.GroupVersion().String(), "kind": "Gadget",
				"metadata": map[string]any{"name": fmt.Sprintf("g-%03d", i), "namespace": ns},
				"spec":     map[string]any{"n": int64(i), "name": fmt.Sprintf("gadget %d", i)},
			}}
			if _, err := dyn.Resource(old).Namespace(ns).Create(ctx, g, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create gadget %s/%s: %v", ns, g.GetName(), err)
			}
		}
	}
	before, err := listAll(ctx, t, dyn, old)
	if err != nil {
		t.Fatalf("list gadgets: %v", err)
	}

	// The next release: v1 is the storage version, v1alpha1 still served.
	crd.Spec.Versions = gadgetVersions("v1", "v1alpha1", "v1")
	if err := c.EnsureCreated(ctx, crd, nil); err != nil {
		t.Fatalf("EnsureCreated(%s) with storage version v1: %v", crd.Name, err)
	}
	ext := apiextensionsClientset(t)
	got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"v1alpha1", "v1"}; !slices.Equal(got.Status.StoredVersions, want) {
		t.Fatalf("storedVersions after the storage version changed = %v, want %v", got.Status.StoredVersions, want)
	}
	// The release after cannot drop v1alpha1 yet.
	withoutOld := crd.DeepCopy()
	withoutOld.Spec.Versions = gadgetVersions("v1", "v1")
	if err := c.EnsureCreated(ctx, withoutOld, nil); !errors.Is(err, crdclient.ErrInvalidCRD) {
		t.Fatalf("EnsureCreated without v1alpha1 before the migration = %v, want ErrInvalidCRD", err)
	}

	// Gadgets created while the migration runs are stored in v1.
	var wg sync.WaitGroup
	created := make(chan error, 1)
	wg.Go(func() {
		defer close(created)
		for i := range 20 {
			g := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": v1.GroupVersion().String(), "kind": "Gadget",
				"metadata": map[string]any{"name": fmt.Sprintf("new-%02d", i), "namespace": namespaces[0]},
				"spec":     map[string]any{"n": int64(1000 + i)},
			}}
			if _, err := dyn.Resource(v1).Namespace(namespaces[0]).Create(ctx, g, metav1.CreateOptions{}); err != nil {
				created <- fmt.Errorf("create gadget %s: %w", g.GetName(), err)
				return
			}
		}
	})
	m, err := c.MigrateStorage(ctx, crd, nil)
	wg.Wait()
	if err != nil {
		t.Fatalf("MigrateStorage: %v (did %+v)", err, m)
	}
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if m.StorageVersion != "v1" || !slices.Equal(m.StoredVersions, []string{"v1alpha1", "v1"}) || m.Rewritten+m.Skipped < 2*perNamespace || m.Rewritten == 0 {
		t.Errorf("MigrateStorage = %+v, want storage version v1 from [v1alpha1 v1], at least %d objects rewritten or skipped", m, 2*perNamespace)
	}
	got, err = ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"v1"}; !slices.Equal(got.Status.StoredVersions, want) {
		t.Fatalf("storedVersions after MigrateStorage = %v, want %v", got.Status.StoredVersions, want)
	}

	// The release after drops v1alpha1: accepted now.
	if err := c.EnsureCreated(ctx, withoutOld, nil); err != nil {
		t.Fatalf("EnsureCreated without v1alpha1 after the migration: %v", err)
	}
	// An object still stored in v1alpha1 would fail this list: the API
	// server can no longer convert from it.
	var after map[string]unstructured.Unstructured
	poll(t, "every gadget read in v1 after v1alpha1 was dropped", func(ctx context.Context) (bool, error) {
		after, err = listAll(ctx, t, dyn, v1)
		if err != nil {
			t.Logf("list gadgets in v1: %v", err)
			return false, nil
		}
		return len(after) == len(before)+20, nil
	})
	for key, b := range before {
		a, ok := after[key]
		switch {
		case !ok:
			t.Errorf("gadget %s lost", key)
		case a.GetUID() != b.GetUID() || !equality.Semantic.DeepEqual(a.Object["spec"], b.Object["spec"]):
			t.Errorf("gadget %s changed: uid %s spec %v, was uid %s spec %v", key, a.GetUID(), a.Object["spec"], b.GetUID(), b.Object["spec"])
		}
	}

	// Nothing to do the second time: no object and not the CRD is written.
	got, err = ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crdVersion := got.ResourceVersion
	m, err = c.MigrateStorage(ctx, withoutOld, nil)
	if err != nil || m.Rewritten != 0 || m.Skipped != 0 || !slices.Equal(m.StoredVersions, []string{"v1"}) {
		t.Fatalf("second MigrateStorage = %+v, %v; want nothing done", m, err)
	}
	again, err := listAll(ctx, t, dyn, v1)
	if err != nil {
		t.Fatal(err)
	}
	for key, a := range after {
		if b := again[key]; b.GetResourceVersion() != a.GetResourceVersion() {
			t.Errorf("second MigrateStorage wrote gadget %s: resourceVersion %s, was %s", key, b.GetResourceVersion(), a.GetResourceVersion())
		}
	}
	got, err = ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != crdVersion {
		t.Errorf("second MigrateStorage wrote the CRD: resourceVersion %s, was %s", got.ResourceVersion, crdVersion)
	}
}

// TestOperatorMigratesStorage: framework.Config.MigrateStorage on an
// Operator migrates the CRD's stored objects before the Framework boots
// (status.storedVersions is the storage version alone then), with the
// crdclient the Operator makes; in a dry run it writes nothing.
func TestOperatorMigratesStorage(t *testing.T) {
	t.Parallel() // CRDs and namespaces of their own
	for _, dryRun := range []bool{false, true} {
		t.Run(fmt.Sprintf("dryRun=%v", dryRun), func(t *testing.T) {
			t.Parallel()
			dyn := dynamicClientset(t)
			ctx, cancel := context.WithTimeout(t.Context(), 2*crdTimeout)
			defer cancel()
			c, crd, old, v1 := installGadgets(ctx, t, crdclient.Config{Client: apiextensionsClientset(t), Dynamic: dyn}, gadgetVersions("v1alpha1", "v1alpha1"))
			ns := newNamespace(t)
			for i := range 10 {
				g := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": old.GroupVersion().String(), "kind": "Gadget",
					"metadata": map[string]any{"name": fmt.Sprintf("g-%d", i), "namespace": ns},
				}}
				if _, err := dyn.Resource(old).Namespace(ns).Create(ctx, g, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			crd.Spec.Versions = gadgetVersions("v1", "v1alpha1", "v1")
			if dryRun { // a dry run does not install the CRD
				if err := c.EnsureCreated(ctx, crd, nil); err != nil {
					t.Fatal(err)
				}
			}

			runMigrator(t, ns, v1, crd, dryRun)
			got, err := apiextensionsClientset(t).ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"v1"}
			if dryRun {
				want = []string{"v1alpha1", "v1"}
			}
			if !slices.Equal(got.Status.StoredVersions, want) {
				t.Errorf("storedVersions once booted = %v, want %v", got.Status.StoredVersions, want)
			}
		})
	}
}

// installGadgets installs a CRD of Gadgets in a group of its own with
// versions (see gadgetVersions), deleted when the test ends, through a
// crdclient of config, and returns the client, the CRD, and its resources
// in v1alpha1 (old) and v1.
func installGadgets(ctx context.Context, t *testing.T, config crdclient.Config, versions []apiextensionsv1.CustomResourceDefinitionVersion) (c *crdclient.CRDClient, crd *apiextensionsv1.CustomResourceDefinition, old, v1 schema.GroupVersionResource) {
	t.Helper()
	c, err := crdclient.New(config)
	if err != nil {
		t.Fatal(err)
	}
	crd = namespacedCRD(uniqueCRDGroup(t), "Gadget")
	crd.Spec.Versions = versions
	if err := c.EnsureCreated(ctx, crd, nil); err != nil {
		t.Fatalf("EnsureCreated(%s): %v", crd.Name, err)
	}
	deleteCRDOnCleanup(t, c, crd)
	old = schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1alpha1", Resource: crd.Spec.Names.Plural}
	return c, crd, old, old.GroupResource().WithVersion("v1")
}

// runMigrator runs an operator with a Framework of Gadgets in ns (read as
// v1) that installs crd with MigrateStorage (and dryRun), until the test
// ends, and waits until the Framework booted: the migration is over then.
func runMigrator(t *testing.T, ns string, v1 schema.GroupVersionResource, crd *apiextensionsv1.CustomResourceDefinition, dryRun bool) {
	t.Helper()
	op, err := operatorpkg.New(operatorpkg.Config{RESTConfig: env.Config(), Name: "migrator"})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := op.Informer(informer.Config{GVR: v1, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "", nopResource{})}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := op.NewFramework(framework.Config{Name: "gadgets", Informer: inf, ResourceRouter: rt, Resource: v1,
		CRD: crd, MigrateStorage: true, DryRun: dryRun, DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runOperator(op)
	t.Cleanup(func() { _ = stop() })
	awaitBoot(t, f, done, func() {}) // on failure, the cleanup stops Run
}

// nopResource does nothing.
type nopResource struct{}

func (nopResource) Name() string                             { return "nop" }
func (nopResource) EnsureCreated(context.Context, any) error { return nil }
func (nopResource) EnsureDeleted(context.Context, any) error { return nil }

// sealedGadgetVersions returns the versions of a Gadget CRD as
// gadgetVersions does, whose schema refuses any update of a gadget whose
// spec was sealed (a CEL transition rule: a write-once object), the
// migration's unchanged write too.
func sealedGadgetVersions(stored string, served ...string) []apiextensionsv1.CustomResourceDefinitionVersion {
	vs := gadgetVersions(stored, served...)
	for i := range vs {
		s := vs[i].Schema.OpenAPIV3Schema.DeepCopy()
		spec := s.Properties["spec"]
		spec.Properties = map[string]apiextensionsv1.JSONSchemaProps{"sealed": {Type: "boolean"}}
		spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "!has(oldSelf.sealed)", Message: "sealed gadgets are read-only"}}
		s.Properties["spec"] = spec
		vs[i].Schema.OpenAPIV3Schema = s
	}
	return vs
}

// TestOperatorStartsWhenAnObjectRefusesItsMigration: an object whose
// rewrite the API server refuses (a validation rule of the CRD) fails the
// storage migration, and status.storedVersions keeps the old version; the
// operator starts all the same, as the CRD is installed and serves the old
// version still (the next start migrates again). The failed migration
// failed EnsureCRD, and so operator.Run at every start: no object was
// reconciled until someone changed the object.
func TestOperatorStartsWhenAnObjectRefusesItsMigration(t *testing.T) {
	t.Parallel() // a CRD and a namespace of its own
	dyn := dynamicClientset(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*crdTimeout)
	defer cancel()
	_, crd, old, v1 := installGadgets(ctx, t, crdclient.Config{Client: apiextensionsClientset(t), Dynamic: dyn}, sealedGadgetVersions("v1alpha1", "v1alpha1"))
	ns := newNamespace(t)
	versions := map[string]string{}
	for name, spec := range map[string]map[string]any{"g-0": {}, "g-1": {"sealed": true}} {
		g := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": old.GroupVersion().String(), "kind": "Gadget",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     spec,
		}}
		created, err := dyn.Resource(old).Namespace(ns).Create(ctx, g, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create gadget %s: %v", name, err)
		}
		versions[name] = created.GetResourceVersion()
	}

	// The release that makes v1 the storage version migrates.
	crd.Spec.Versions = sealedGadgetVersions("v1", "v1alpha1", "v1")
	runMigrator(t, ns, v1, crd, false)
	got, err := apiextensionsClientset(t).ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"v1alpha1", "v1"}; !slices.Equal(got.Status.StoredVersions, want) {
		t.Errorf("storedVersions after a migration that failed = %v, want %v", got.Status.StoredVersions, want)
	}
	// The migration ran: the object it could write, it wrote.
	g0, err := dyn.Resource(v1).Namespace(ns).Get(ctx, "g-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g0.GetResourceVersion() == versions["g-0"] {
		t.Errorf("gadget g-0 not rewritten (resourceVersion %s): the migration did not run", versions["g-0"])
	}
}
