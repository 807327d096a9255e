package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/bench/internal/item"
	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/router"
)

// okit is the operator written the idiomatic operatorkit way: a Framework
// over an Item informer, one ResourceSet with a child resource
// (resource/child) for the ConfigMap (current state from a ConfigMap
// informer, never a GET; server-side apply when the data differs), and
// status.observedGeneration with a Ready condition written by the Framework
// (framework.Config.Conditions) when they change. Both informers read
// through the informer's typed path (informer.Config.RESTConfig with
// ObjectType: Items as JSON with managedFields cut out before decoding,
// ConfigMaps as protobuf), drop managedFields, never resync, and watch
// only the namespace; the Framework's metrics go to a private registry
// (read for the reconcile count); everything else is left at its default.
// ConfigMap events wake the owner up through Framework.Enqueue when a
// ConfigMap is deleted or its data no longer matches its Item; the
// ConfigMap writes are recorded in the ConfigMap informer
// (Informer.Mutation, which the child resource calls). EnqueueAll calls
// Framework.Enqueue for every cached Item.
type okit struct {
	ns       string
	fw       *framework.Framework
	items    *informer.Informer
	cms      *informer.Informer
	registry *prometheus.Registry
}

// okitOptions are the operatorkit contender's variants.
type okitOptions struct {
	// items is how the Item informer reads Items: "typed" (the default)
	// lists and watches through informer.Config.RESTConfig with ObjectType,
	// so each event is decoded once into *item.Item, with no scheme and
	// with metadata.managedFields cut out of its JSON before decoding;
	// "rest-client" (the default until the typed path was measured the
	// faster one) through a REST client of its own with the Items' scheme
	// (informer.Config.RESTClient with informer.NewRESTClient), whose
	// serializer decodes managedFields before the informer drops them;
	// "transform" reads them with the dynamic client and converts them in
	// the informer's Transform; "unstructured" keeps them unstructured, and
	// the resources read the few fields they need.
	items string
	// configMapInformer is how the ConfigMap informer reads ConfigMaps:
	// "typed" (the default) through informer.Config.RESTConfig with
	// ObjectType (protobuf, as the clientset reads them); "rest-client"
	// through the clientset's CoreV1().RESTClient() as
	// informer.Config.RESTClient (the default until the typed path was
	// measured the faster one).
	configMapInformer string
	// status is how status.observedGeneration is written: "conditions"
	// (the default) by the Framework itself (framework.Config.Conditions:
	// one server-side apply of Ready and observedGeneration, without
	// precondition); "merge-precondition" by a status resource that
	// merge-patches it with a resourceVersion precondition; "merge" the
	// same without precondition.
	status string
	// configMap is how the ConfigMap is kept: "child" (the default) with
	// resource/child (Desired only: server-side apply, drift on the data
	// alone); "crud" with the hand-written crud.Ops below (create and
	// update with the typed client).
	configMap string
	// traceObjects is framework.Config.TraceObjects.
	traceObjects int
	// runSuperseded is framework.Config.RunSuperseded.
	runSuperseded bool
}

// newOperatorkit builds the operatorkit contender.
func newOperatorkit(cfg *rest.Config, ns string, workers int, opts okitOptions) (*okit, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube client: %w", err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	// The Items' REST client with their scheme: the "rest-client" Item
	// informer's and the status resource's.
	var items rest.Interface
	if opts.items == "rest-client" || opts.status == "merge" || opts.status == "merge-precondition" {
		if items, err = informer.NewRESTClient(cfg, item.GroupVersion, item.AddToScheme); err != nil {
			return nil, err
		}
	}
	reg := prometheus.NewRegistry()
	o := &okit{ns: ns, registry: reg}

	itemConfig := informer.Config{
		GVR: item.GVR, Namespace: ns, ResyncPeriod: -1,
		DropManagedFields: true, Registerer: reg,
	}
	switch opts.items {
	case "typed", "":
		itemConfig.RESTConfig, itemConfig.ObjectType = cfg, &item.Item{}
	case "rest-client":
		itemConfig.RESTClient, itemConfig.ObjectType = items, &item.Item{}
	case "transform":
		itemConfig.Client = dyn
		itemConfig.Transform = informer.ConvertTo[*item.Item](nil)
	case "unstructured":
		itemConfig.Client = dyn
	default:
		return nil, fmt.Errorf("--items %q: want typed, rest-client, transform or unstructured", opts.items)
	}
	o.items, err = informer.New(itemConfig)
	if err != nil {
		return nil, err
	}
	cmConfig := informer.Config{
		GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), ObjectType: &corev1.ConfigMap{},
		Namespace: ns, ResyncPeriod: -1, DropManagedFields: true, Registerer: reg,
	}
	switch opts.configMapInformer {
	case "typed", "":
		cmConfig.RESTConfig = cfg
	case "rest-client":
		cmConfig.RESTClient = kube.CoreV1().RESTClient()
	default:
		return nil, fmt.Errorf("--configmap-informer %q: want typed or rest-client", opts.configMapInformer)
	}
	o.cms, err = informer.New(cmConfig)
	if err != nil {
		return nil, err
	}

	var cmResource resource.Interface
	switch opts.configMap {
	case "child", "":
		cmResource, err = child.New(child.Config[*item.Item, *corev1.ConfigMap]{
			Name:         "configmap",
			Client:       child.Typed(kube.CoreV1().ConfigMaps),
			Cache:        o.cms,
			OwnerGVK:     item.GVK,
			FieldManager: "bench",
			Desired: func(_ context.Context, it *item.Item) (*corev1.ConfigMap, error) {
				return &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: it.Name, Labels: map[string]string{item.LabelItem: it.Name}},
					Data:       item.Data(it.Spec),
				}, nil
			},
		})
	case "crud":
		cmResource, err = crud.New(crud.Config{Ops: &configMapOps{kube: kube, cms: o.cms}})
	default:
		return nil, fmt.Errorf("--configmap %q: want child or crud", opts.configMap)
	}
	if err != nil {
		return nil, err
	}
	resources := []resource.Interface{cmResource}
	switch opts.status {
	case "conditions", "":
	case "merge", "merge-precondition":
		resources = append(resources, &statusResource{client: items, precondition: opts.status == "merge-precondition"})
	default:
		return nil, fmt.Errorf("--status %q: want conditions, merge or merge-precondition", opts.status)
	}
	set, err := router.NewResourceSet(router.ResourceSetConfig{
		Name:      "v1",
		Handles:   func(any) bool { return true },
		Resources: resources,
	})
	if err != nil {
		return nil, err
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		return nil, err
	}
	o.fw, err = framework.New(framework.Config{
		Name:           "bench",
		Informer:       o.items,
		ResourceRouter: rt,
		MetadataClient: meta,
		Client:         dyn,
		Conditions:     opts.status == "conditions" || opts.status == "",
		Resource:       item.GVR,
		Registerer:     reg,
		Workers:        workers,
		TraceObjects:   opts.traceObjects,
		RunSuperseded:  opts.runSuperseded,
	})
	if err != nil {
		return nil, err
	}
	if _, err := o.cms.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, newObj any) {
			cm := newObj.(*corev1.ConfigMap)
			if it, ok := o.owner(cm); ok && !item.DataEqual(cm.Data, it.Spec) {
				o.fw.Enqueue(ns + "/" + it.Name)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				if it, ok := o.owner(cm); ok && it.DeletionTimestamp == nil {
					o.fw.Enqueue(ns + "/" + it.Name)
				}
			}
		},
	}); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *okit) owner(cm *corev1.ConfigMap) (*item.Item, bool) {
	name := cm.Labels[item.LabelItem]
	if name == "" {
		return nil, false
	}
	obj, ok, err := o.items.Get(cm.Namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	it, err := asItem(obj)
	return it, err == nil
}

// Metrics returns the handler of the Framework's and informers' metrics.
func (o *okit) Metrics() http.Handler { return promhttp.HandlerFor(o.registry, promhttp.HandlerOpts{}) }

func (o *okit) Ready() bool {
	select {
	case <-o.fw.Booted():
		return o.cms.HasSynced()
	default:
		return false
	}
}

func (o *okit) Reconciles() int64 { return reconcileCount(o.registry) }

func (o *okit) EnqueueAll() int {
	objs := o.items.List()
	for _, obj := range objs {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			o.fw.Enqueue(key)
		}
	}
	return len(objs)
}

func (o *okit) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- o.cms.Run(ctx) }()
	if err := o.cms.WaitForCacheSync(ctx); err != nil {
		return err
	}
	if err := o.fw.Boot(ctx); err != nil {
		return err
	}
	return <-errc
}

// asItem returns obj as an *item.Item: itself when the cache holds typed
// Items, otherwise a view holding the metadata and spec read from the
// unstructured object (without converting all of it).
func asItem(obj any) (*item.Item, error) {
	switch o := obj.(type) {
	case *item.Item:
		return o, nil
	case *unstructured.Unstructured:
		it := &item.Item{}
		it.Namespace, it.Name, it.UID = o.GetNamespace(), o.GetName(), o.GetUID()
		it.Generation, it.ResourceVersion = o.GetGeneration(), o.GetResourceVersion()
		it.DeletionTimestamp = o.GetDeletionTimestamp()
		it.Spec.Message, _, _ = unstructured.NestedString(o.Object, "spec", "message")
		it.Spec.Count, _, _ = unstructured.NestedInt64(o.Object, "spec", "count")
		it.Status.ObservedGeneration, _, _ = unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		return it, nil
	}
	return nil, fmt.Errorf("unexpected object type %T", obj)
}

// configMapOps is the crud.Ops of the Item's ConfigMap.
type configMapOps struct {
	kube kubernetes.Interface
	cms  *informer.Informer
}

var _ crud.Ops = (*configMapOps)(nil)

func (c *configMapOps) Name() string { return "configmap" }

func (c *configMapOps) GetCurrentState(_ context.Context, obj any) (any, error) {
	it, err := asItem(obj)
	if err != nil {
		return nil, err
	}
	cm, ok, err := c.cms.Get(it.Namespace + "/" + it.Name)
	if err != nil || !ok {
		return nil, err
	}
	return cm.(*corev1.ConfigMap), nil
}

func (c *configMapOps) GetDesiredState(_ context.Context, obj any) (any, error) {
	it, err := asItem(obj)
	if err != nil {
		return nil, err
	}
	return item.ConfigMap(it), nil
}

func (c *configMapOps) NewUpdatePatch(_ context.Context, _, current, desired any) (*crud.Patch, error) {
	want := desired.(*corev1.ConfigMap)
	cur, _ := current.(*corev1.ConfigMap)
	switch {
	case cur == nil:
		p := crud.NewPatch()
		p.SetCreateChange(want)
		return p, nil
	case !dataEqual(cur.Data, want.Data):
		up := cur.DeepCopy()
		up.Data = want.Data
		p := crud.NewPatch()
		p.SetUpdateChange(up)
		return p, nil
	}
	return nil, nil
}

func (c *configMapOps) NewDeletePatch(_ context.Context, _, current, _ any) (*crud.Patch, error) {
	if cur, _ := current.(*corev1.ConfigMap); cur != nil {
		p := crud.NewPatch()
		p.SetDeleteChange(cur)
		return p, nil
	}
	return nil, nil
}

// The Apply methods record what they wrote with Informer.Mutation, so that
// the next reconciliation reads it even before the watch delivers it.

func (c *configMapOps) ApplyCreateChange(ctx context.Context, _, change any) error {
	cm := change.(*corev1.ConfigMap)
	res, err := c.kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		c.cms.Mutation(res)
	}
	return err
}

func (c *configMapOps) ApplyUpdateChange(ctx context.Context, _, change any) error {
	cm := change.(*corev1.ConfigMap)
	res, err := c.kube.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	if err == nil {
		c.cms.Mutation(res)
	}
	return err
}

func (c *configMapOps) ApplyDeleteChange(ctx context.Context, _, change any) error {
	cm := change.(*corev1.ConfigMap)
	err := c.kube.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func dataEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// statusResource writes status.observedGeneration when it differs from
// metadata.generation, as a merge patch of the status subresource with a
// resourceVersion precondition unless precondition is false, and reports
// the written resourceVersion with resourceversioncontext.
type statusResource struct {
	client       rest.Interface // the Item API's typed REST client
	precondition bool
}

var _ resource.Interface = (*statusResource)(nil)

func (s *statusResource) Name() string { return "status" }

func (s *statusResource) EnsureCreated(ctx context.Context, obj any) error {
	it, err := asItem(obj)
	if err != nil {
		return err
	}
	if it.Status.ObservedGeneration == it.Generation {
		return nil
	}
	body := []byte(`{"status":{"observedGeneration":` + strconv.FormatInt(it.Generation, 10) + `}}`)
	if s.precondition {
		body = []byte(`{"metadata":{"resourceVersion":` + strconv.Quote(it.ResourceVersion) +
			`},"status":{"observedGeneration":` + strconv.FormatInt(it.Generation, 10) + `}}`)
	}
	res := &item.Item{}
	err = s.client.Patch(types.MergePatchType).Namespace(it.Namespace).Resource(item.Resource).
		Name(it.Name).SubResource("status").Body(body).Do(ctx).Into(res)
	if err != nil {
		return err
	}
	// Tell the Framework which version of the Item this write made, so that
	// it does not reconcile again from an older cache.
	resourceversioncontext.SetResourceVersion(ctx, res.ResourceVersion)
	return nil
}

func (s *statusResource) EnsureDeleted(context.Context, any) error { return nil }
