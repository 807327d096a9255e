package integration

import (
	"context"
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/router"
)

// TestOperatorInstallsTheCRD: a Framework with Config.CRD, on an Operator,
// against a cluster without that CRD. Run waited for the informer's cache
// before the Framework's Boot (which installed the CRD) ran: the cache
// never synced, and the operator never started. Run now ensures the
// Frameworks' CRDs first.
func TestOperatorInstallsTheCRD(t *testing.T) {
	t.Parallel() // a CRD and a namespace of its own
	gvr := schema.GroupVersionResource{Group: "install.test.operatorkit.io", Version: "v1", Resource: "gadgets"}
	crd := widgetCRD()
	crd.Name = gvr.Resource + "." + gvr.Group
	crd.Spec.Group = gvr.Group
	crd.Spec.Names.Plural, crd.Spec.Names.Singular, crd.Spec.Names.Kind, crd.Spec.Names.ListKind = "gadgets", "gadget", "Gadget", "GadgetList"
	ext := apiextensionsclient.NewForConfigOrDie(env.Config())
	crds, err := crdclient.New(crdclient.Config{Client: ext})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.EnsureDeleted(context.Background(), crd, nil) })
	ns := newNamespace(t)

	op, err := operatorpkg.New(operatorpkg.Config{RESTConfig: env.Config(), Name: "installer"})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := op.Informer(informer.Config{GVR: gvr, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ops := newOwnedConfigMapOps("gadget", op.OwnWrites())
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "", crudResource(t, ops))}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := op.NewFramework(framework.Config{Name: "gadgets", Informer: inf, ResourceRouter: rt, Resource: gvr, CRD: crd, CRDClient: crds})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runOperator(op)
	t.Cleanup(func() { _ = stop() })
	awaitBoot(t, f, done, func() {}) // on the CRD it installed; on failure, the cleanup stops Run
	g := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "Gadget",
		"metadata": map[string]any{"namespace": ns, "name": "g1"},
		"spec":     map[string]any{"data": map[string]any{"k": "v"}},
	}}
	if _, err := dynamicClient(t, env.Config()).Resource(gvr).Namespace(ns).Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the gadget reconciled", func(ctx context.Context) (bool, error) {
		return ops.reconciles("g1") > 0, nil
	})
	// Deleted while the operator runs (it holds the gadget's finalizer),
	// so that the CRD's deletion afterwards does not wait on it.
	gadgets := dynamicClient(t, env.Config()).Resource(gvr).Namespace(ns)
	if err := gadgets.Delete(t.Context(), "g1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the gadget gone", func(ctx context.Context) (bool, error) {
		_, err := gadgets.Get(ctx, "g1", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
