package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/router"
)

// The Widget CRD used by the framework tests: spec.data is copied into a
// ConfigMap by configMapOps.
var widgetGVR = schema.GroupVersionResource{Group: "fw.test.operatorkit.io", Version: "v1", Resource: "widgets"}

const versionLabel = "fw.test.operatorkit.io/version"

var widgetCRDOnce sync.Once

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: widgetGVR.Resource + "." + widgetGVR.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGVR.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"data": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}},
						}},
						"status": {Type: "object", XPreserveUnknownFields: ptr(true)},
					},
				}},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// ensureWidgetCRD installs the Widget CRD once per test binary.
func ensureWidgetCRD(t *testing.T) {
	t.Helper()
	var err error
	widgetCRDOnce.Do(func() {
		var c *crdclient.CRDClient
		c, err = crdclient.New(crdclient.Config{Client: apiextensionsclient.NewForConfigOrDie(env.Config())})
		if err == nil {
			err = c.EnsureCreated(context.Background(), widgetCRD(), nil)
		}
	})
	if err != nil {
		t.Fatalf("ensure widget CRD: %v", err)
	}
}

func dynamicClient(t testing.TB, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func widgetClient(t testing.TB, ns string) dynamic.ResourceInterface {
	return dynamicClient(t, env.Config()).Resource(widgetGVR).Namespace(ns)
}

func newWidget(ns, name, version string, data map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(widgetGVR.Group + "/" + widgetGVR.Version)
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	if version != "" {
		u.SetLabels(map[string]string{versionLabel: version})
	}
	d := map[string]any{}
	for k, v := range data {
		d[k] = v
	}
	_ = unstructured.SetNestedMap(u.Object, d, "spec", "data")
	return u
}

func createWidget(t *testing.T, w *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := widgetClient(t, w.GetNamespace()).Create(t.Context(), w, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create widget %s: %v", w.GetName(), err)
	}
	return got
}

// poll waits for cond with a generous deadline and fails the test with what
// when it never holds.
func poll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 60*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// configMapOps is a crud.Ops that keeps a ConfigMap "<widget>-<suffix>" with
// the widget's spec.data. Hooks let tests inject failures and signals.
type configMapOps struct {
	name   string
	suffix string
	client kubernetes.Interface

	mu           sync.Mutex
	applyCreates int
	// beforeApplyCreate, when set, runs before each ApplyCreateChange; an
	// error fails the step.
	beforeApplyCreate func(ctx context.Context) error
	// onCurrent, when set, runs in GetCurrentState (to fire signals).
	onCurrent func(ctx context.Context)
	// onDeletePatch, when set, runs in NewDeletePatch (to fire signals).
	onDeletePatch func(ctx context.Context)
}

func newConfigMapOps(name, suffix string) *configMapOps {
	return &configMapOps{name: name, suffix: suffix, client: kubernetes.NewForConfigOrDie(env.Config())}
}

func (o *configMapOps) Name() string { return o.name }

func (o *configMapOps) cmName(obj any) (ns, name string) {
	u := obj.(*unstructured.Unstructured)
	return u.GetNamespace(), u.GetName() + "-" + o.suffix
}

func (o *configMapOps) GetCurrentState(ctx context.Context, obj any) (any, error) {
	if o.onCurrent != nil {
		o.onCurrent(ctx)
	}
	ns, name := o.cmName(obj)
	cm, err := o.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return (*corev1.ConfigMap)(nil), nil
	}
	return cm, err
}

func (o *configMapOps) GetDesiredState(ctx context.Context, obj any) (any, error) {
	ns, name := o.cmName(obj)
	data, _, err := unstructured.NestedStringMap(obj.(*unstructured.Unstructured).Object, "spec", "data")
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}, nil
}

func (o *configMapOps) NewUpdatePatch(ctx context.Context, obj, current, desired any) (*crud.Patch, error) {
	return configMapUpdatePatch(current, desired), nil
}

func (o *configMapOps) NewDeletePatch(ctx context.Context, obj, current, desired any) (*crud.Patch, error) {
	if o.onDeletePatch != nil {
		o.onDeletePatch(ctx)
	}
	p := crud.NewPatch()
	if cur := current.(*corev1.ConfigMap); cur != nil {
		p.SetDeleteChange(cur)
	}
	return p, nil
}

func (o *configMapOps) ApplyCreateChange(ctx context.Context, obj, change any) error {
	o.mu.Lock()
	o.applyCreates++
	hook := o.beforeApplyCreate
	o.mu.Unlock()
	if hook != nil {
		if err := hook(ctx); err != nil {
			return err
		}
	}
	cm := change.(*corev1.ConfigMap)
	_, err := o.client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

func (o *configMapOps) ApplyUpdateChange(ctx context.Context, obj, change any) error {
	cm := change.(*corev1.ConfigMap)
	_, err := o.client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

func (o *configMapOps) ApplyDeleteChange(ctx context.Context, obj, change any) error {
	cm := change.(*corev1.ConfigMap)
	err := o.client.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func crudResource(t *testing.T, ops crud.Ops) resource.Interface {
	t.Helper()
	r, err := crud.New(crud.Config{Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// resourceSet handles widgets whose version label equals version ("" handles
// widgets without the label).
func resourceSet(t *testing.T, version string, resources ...resource.Interface) *router.ResourceSet {
	t.Helper()
	name := version
	if name == "" {
		name = "default"
	}
	s, err := router.NewResourceSet(router.ResourceSetConfig{
		Name: name,
		Handles: func(obj any) bool {
			return obj.(*unstructured.Unstructured).GetLabels()[versionLabel] == version
		},
		Resources: resources,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type frameworkOptions struct {
	backOff  func() backoff.BackOff
	dryRun   bool
	config   *rest.Config // defaults to env.Config()
	registry *prometheus.Registry
}

// runningFramework is a Framework booted by a test.
type runningFramework struct {
	*framework.Framework
	stop func() // cancels Boot and waits for it to return (nil error)
}

// startFramework boots a Framework over the widgets of namespace ns and
// stops it in t.Cleanup (stop may be called earlier).
func startFramework(t *testing.T, ns string, opts frameworkOptions, sets ...*router.ResourceSet) *runningFramework {
	t.Helper()
	ensureWidgetCRD(t)
	cfg := opts.config
	if cfg == nil {
		cfg = env.Config()
	}
	dc := dynamicClient(t, cfg)
	reg := opts.registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	inf, err := informer.New(informer.Config{Client: dc, GVR: widgetGVR, Namespace: ns, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: sets})
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.New(framework.Config{
		Name:           "widgets",
		Informer:       inf,
		ResourceRouter: rt,
		Client:         dc,
		Resource:       widgetGVR,
		Logger:         log.NewNopLogger(),
		Registerer:     reg,
		BackOffFactory: opts.backOff,
		Workers:        2,
		DryRun:         opts.dryRun,
	})
	if err != nil {
		t.Fatal(err)
	}
	return boot(t, f)
}

// boot runs f until the test ends (or its stop is called) and waits until it
// has booted.
func boot(t *testing.T, f *framework.Framework) *runningFramework {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Boot(ctx) }()
	awaitBoot(t, f, done, cancel)
	return &runningFramework{Framework: f, stop: bootStopper(t, cancel, done, nil)}
}

// awaitBoot waits until f, whose Boot (or operator.Run) reports to done and
// stops with cancel, has booted; it fails the test when that returns first
// or after 60 s.
func awaitBoot(t *testing.T, f *framework.Framework, done <-chan error, cancel context.CancelFunc) {
	t.Helper()
	select {
	case <-f.Booted():
	case err := <-done:
		cancel()
		t.Fatalf("Boot (or Run) returned before booting: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("framework did not boot within 60s")
	}
}

// bootStopper returns an idempotent stop, also run by t.Cleanup, that
// cancels Boot, checks that it returned nil and then runs after (if any).
func bootStopper(t *testing.T, cancel context.CancelFunc, done <-chan error, after func()) func() {
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Boot returned %v, want nil", err)
			}
			if after != nil {
				after()
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func getConfigMap(ctx context.Context, t *testing.T, ns, name string) (*corev1.ConfigMap, error) {
	cm, err := kubeClient(t).CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cm, err
}

// waitConfigMapData waits until ConfigMap ns/name has data want (nil want:
// until it does not exist).
func waitConfigMapData(t *testing.T, ns, name string, want map[string]string) {
	t.Helper()
	poll(t, fmt.Sprintf("configmap %s/%s to have data %v", ns, name, want), func(ctx context.Context) (bool, error) {
		cm, err := getConfigMap(ctx, t, ns, name)
		if err != nil {
			return false, err
		}
		if want == nil {
			return cm == nil, nil
		}
		return cm != nil && maps.Equal(cm.Data, want), nil
	})
}

func waitWidgetGone(t *testing.T, ns, name string) {
	t.Helper()
	poll(t, fmt.Sprintf("widget %s/%s to be gone", ns, name), func(ctx context.Context) (bool, error) {
		_, err := widgetClient(t, ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

var errInjected = errors.New("injected failure")

// configMapUpdatePatch creates a missing ConfigMap and updates one whose
// data differs from the desired data; the fixtures' Ops share it.
func configMapUpdatePatch(current, desired any) *crud.Patch {
	cur, des := current.(*corev1.ConfigMap), desired.(*corev1.ConfigMap)
	p := crud.NewPatch()
	switch {
	case cur == nil:
		p.SetCreateChange(des)
	case !maps.Equal(cur.Data, des.Data):
		upd := cur.DeepCopy()
		upd.Data = des.Data
		p.SetUpdateChange(upd)
	}
	return p
}
