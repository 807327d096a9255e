package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

// readsResource records, per reconciled Secret, the value of the ConfigMap
// "<secret>-cfg" it read from the cache.
type readsResource struct {
	cms  *operatorpkg.SharedInformer
	mu   sync.Mutex
	seen map[string]string
}

func (r *readsResource) Name() string { return "reads" }

func (r *readsResource) EnsureCreated(_ context.Context, obj any) error {
	s := obj.(*corev1.Secret)
	cm, ok, err := informer.Get[*corev1.ConfigMap](r.cms, s.Namespace, s.Name+"-cfg")
	if err != nil {
		return err
	}
	value := ""
	if ok {
		value = cm.Data["value"]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[s.Name] = value
	return nil
}

func (r *readsResource) EnsureDeleted(context.Context, any) error { return nil }

func (r *readsResource) value(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[name]
}

// TestReferencesEchoWakesAnObjectOfTheControllersName: one operator
// reconciles Widgets, each keeping a ConfigMap "<widget>-cfg" (a child),
// and Secrets, each referring to the ConfigMap "<secret>-cfg" (References).
// The Secret w refers to the child of the Widget w: another object, of
// another kind, that only has its controller's name. The echo of the
// operator's write of that ConfigMap spared every key named as the
// controller, so the Secret was not woken when its ConfigMap was created or
// changed (only at its next resync, here an hour away); it is now.
func TestReferencesEchoWakesAnObjectOfTheControllersName(t *testing.T) {
	t.Parallel()
	ensureWidgetCRD(t)
	ns := newNamespace(t)
	const name = "echo-referrer"
	op, err := operatorpkg.New(operatorpkg.Config{RESTConfig: env.Config(), Name: name, Logger: log.NewNopLogger(), ResyncPeriod: time.Hour})
	must(t, err)
	widgets, err := op.Informer(informer.Config{GVR: widgetGVR, Namespace: ns})
	must(t, err)
	cms, err := op.Informer(informer.Config{GVR: configMapGVR, Namespace: ns, ObjectType: &corev1.ConfigMap{},
		LabelSelector: child.LabelManagedBy + "=" + name})
	must(t, err)
	secrets, err := op.Informer(informer.Config{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Namespace: ns, ObjectType: &corev1.Secret{}})
	must(t, err)

	cfg, err := child.New(child.Config[*unstructured.Unstructured, *corev1.ConfigMap]{
		Name: "configmap", Client: child.Typed(op.Kubernetes().CoreV1().ConfigMaps), Cache: cms,
		FieldManager: name, Writes: op.OwnWrites(),
		Desired: func(_ context.Context, w *unstructured.Unstructured) (*corev1.ConfigMap, error) {
			value, _, _ := unstructured.NestedString(w.Object, "spec", "data", "value")
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.GetName() + "-cfg"}, Data: map[string]string{"value": value}}, nil
		},
	})
	must(t, err)
	wr, err := router.Single("v1", cfg)
	must(t, err)
	fw, err := framework.New(framework.Config{Name: "widgets", Informer: widgets, ResourceRouter: wr,
		Client: op.Dynamic(), Resource: widgetGVR, Registerer: op.Registry()})
	must(t, err)
	must(t, op.Add(fw))
	must(t, op.Owns(fw, widgetKind, cms))

	reads := &readsResource{cms: cms, seen: map[string]string{}}
	sr, err := router.Single("v1", reads)
	must(t, err)
	fs, err := framework.New(framework.Config{Name: "secrets", Informer: secrets, ResourceRouter: sr,
		Client: op.Dynamic(), Resource: corev1.SchemeGroupVersion.WithResource("secrets"), Registerer: op.Registry(), DisableFinalizers: true})
	must(t, err)
	must(t, op.Add(fs))
	must(t, op.References(fs, cms, func(obj any) []string {
		s := obj.(*corev1.Secret)
		return []string{s.Namespace + "/" + s.Name + "-cfg"}
	}))
	stop, _ := runOperator(op)
	t.Cleanup(func() { must(t, stop()) })

	kc := kubeClient(t)
	_, err = kc.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, metav1.CreateOptions{})
	must(t, err)
	createWidget(t, newWidget(ns, "w", "", map[string]string{"value": "one"}))
	poll(t, "the Secret w reconciled after the creation of the ConfigMap w-cfg it refers to", func(context.Context) (bool, error) {
		return reads.value("w") == "one", nil
	})

	_, err = widgetClient(t, ns).Patch(t.Context(), "w", types.MergePatchType, []byte(`{"spec":{"data":{"value":"two"}}}`), metav1.PatchOptions{})
	must(t, err)
	poll(t, "the Secret w reconciled after the change of the ConfigMap w-cfg it refers to", func(context.Context) (bool, error) {
		return reads.value("w") == "two", nil
	})
}
