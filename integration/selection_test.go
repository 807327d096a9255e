package integration

import (
	"context"
	"testing"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/router"
)

// TestObjectLeavingTheSelectionIsNotDeleted: the Framework's informer
// selects widgets by a label. Removing the label makes the informer report
// the widget deleted, but it still exists: its delete chain must not run
// (its ConfigMap stays, its finalizer stays). When the label comes back the
// widget is reconciled again, and a real delete still runs the delete chain.
func TestObjectLeavingTheSelectionIsNotDeleted(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	dc := dynamicClient(t, env.Config())
	reg := prometheus.NewRegistry()
	inf, err := informer.New(informer.Config{Client: dc, GVR: widgetGVR, Namespace: ns, Registerer: reg, LabelSelector: "shard=a"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "1", crudResource(t, newConfigMapOps("configmap", "cm")))}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.New(framework.Config{Name: "selected-widgets", Informer: inf, ResourceRouter: rt, Client: dc, Resource: widgetGVR,
		Logger: log.NewNopLogger(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)

	w := newWidget(ns, "w", "1", map[string]string{"k": "v1"})
	w.SetLabels(map[string]string{versionLabel: "1", "shard": "a"})
	createWidget(t, w)
	waitConfigMapData(t, ns, "w-cm", map[string]string{"k": "v1"})

	skipped := func() float64 {
		return metricSum(t, reg, "operatorkit_framework_reconciliations_total", map[string]string{"result": framework.ResultSkipped})
	}
	before := skipped()
	patch := func(data string) {
		t.Helper()
		if _, err := widgetClient(t, ns).Patch(t.Context(), "w", types.MergePatchType, []byte(data), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch(`{"metadata":{"labels":{"shard":null}}}`)
	poll(t, "the widget that left the selection to be forgotten", func(context.Context) (bool, error) {
		return skipped() > before, nil
	})
	if cm, err := getConfigMap(t.Context(), t, ns, "w-cm"); err != nil || cm == nil {
		t.Fatalf("the ConfigMap of a widget that only left the selection: %v, %v (its delete chain ran)", cm, err)
	}
	got, err := widgetClient(t, ns).Get(t.Context(), "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fs := got.GetFinalizers(); len(fs) != 1 || fs[0] != f.Finalizer() {
		t.Fatalf("finalizers of the widget that left the selection = %v, want [%s]", fs, f.Finalizer())
	}

	// Back in the selection, with new data: reconciled again.
	patch(`{"metadata":{"labels":{"shard":"a"}},"spec":{"data":{"k":"v2"}}}`)
	waitConfigMapData(t, ns, "w-cm", map[string]string{"k": "v2"})

	// A real delete runs the delete chain.
	if err := widgetClient(t, ns).Delete(t.Context(), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWidgetGone(t, ns, "w")
	waitConfigMapData(t, ns, "w-cm", nil)
}
