package main

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/bench/internal/item"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

// readmeName names the operatorkit-readme operator: its finalizer
// ("operatorkit.io/bench-readme"), the field manager and managed-by label
// of its ConfigMaps, its metrics' controller label and its clients' user
// agent.
const readmeName = "bench-readme"

// okitReadme is the Item operator written only from what README.md (its
// walk-through of the example) and docs/getting-started.md show an
// operator author, with no option those documents do not show:
//
//   - operator.New(operator.Config{RESTConfig, Name}): no leader election
//     and no HTTP endpoints (as the guide's test runs the operator), the
//     Operator's own metrics registry (with the Go and process collectors)
//     and its default nop logger (no contender logs);
//   - the Item informer from Operator.Informer with ObjectType &item.Item{}
//     (each event decoded once into that Go type, no scheme), as
//     example/webapp and the guide do; the ConfigMap informer from
//     Operator.Informer with ObjectType &corev1.ConfigMap{} and a label
//     selector on the child resource's managed-by label, as the guide does;
//     both in the namespace (the example's --namespace) and with the
//     Operator's default resync period (10 minutes: longer than a run);
//   - router.Single: one resource set handling every Item, with one
//     child.New for the ConfigMap (Desired, FieldManager and Writes:
//     Operator.OwnWrites, as the guide's newConfigMap);
//   - Operator.NewFramework(framework.Config{Name, Informer, ResourceRouter,
//     Resource, Conditions, Workers}), which fills in the clients (the
//     metadata client for finalizer patches), the logger and the event
//     recorder;
//   - Operator.Owns for the ConfigMap events, and Operator.Run.
//
// Compared with the tuned contender (okit), which reads Items and
// ConfigMaps through the same typed path (informer.Config.RESTConfig with
// ObjectType) but with informers of its own, it caches only the ConfigMaps
// it manages, resyncs every 10 minutes instead of never, wakes Items
// through Owns instead of a hand-written ConfigMap event filter, and has
// an event recorder because NewFramework gives it one (it records no Event
// in these phases: a Ready condition that first appears True is no change
// to report).
//
// One field is set for the benchmark alone: framework.Config.Registerer is
// the Operator's registry (what NewFramework would fill in) teed with a
// private registry, which Reconciles gathers.
//
// The ConfigMap it keeps and the status it writes are the tuned
// contender's: name and namespace of the Item, the label item.LabelItem,
// the data item.Data, a controller owner reference; Ready and
// observedGeneration by the Framework.
type okitReadme struct {
	op    *operator.Operator
	fw    *framework.Framework
	items *operator.SharedInformer
	// reconciles holds only the Framework's metrics, for Reconciles:
	// gathering the Operator's registry, with its Go and process
	// collectors, takes about 0.5 ms against 60 µs, and the driver polls
	// the count every 5 ms in the steady phase.
	reconciles *prometheus.Registry
}

// newOperatorkitReadme builds the operatorkit-readme contender.
func newOperatorkitReadme(cfg *rest.Config, ns string, workers int) (*okitReadme, error) {
	op, err := operator.New(operator.Config{RESTConfig: cfg, Name: readmeName})
	if err != nil {
		return nil, err
	}
	o := &okitReadme{op: op, reconciles: prometheus.NewRegistry()}

	// The caches: the Items of the namespace (typed, as the example's
	// WebApps), and the ConfigMaps this operator manages.
	o.items, err = op.Informer(informer.Config{
		GVR: item.GVR, ObjectType: &item.Item{}, Namespace: ns,
	})
	if err != nil {
		return nil, err
	}
	configMaps, err := op.Informer(informer.Config{
		GVR:           corev1.SchemeGroupVersion.WithResource("configmaps"),
		ObjectType:    &corev1.ConfigMap{},
		Namespace:     ns,
		LabelSelector: child.LabelManagedBy + "=" + readmeName,
	})
	if err != nil {
		return nil, err
	}

	// The resource: one ConfigMap per Item, as the guide's newConfigMap.
	configMap, err := child.New(child.Config[*item.Item, *corev1.ConfigMap]{
		Name:         "configmap",
		Client:       child.Typed(op.Kubernetes().CoreV1().ConfigMaps),
		Cache:        configMaps,
		FieldManager: readmeName,
		Writes:       op.OwnWrites(),
		Desired: func(_ context.Context, it *item.Item) (*corev1.ConfigMap, error) {
			return &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: it.Name, Labels: map[string]string{item.LabelItem: it.Name}},
				Data:       item.Data(it.Spec),
			}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	rtr, err := router.Single("v1", configMap)
	if err != nil {
		return nil, err
	}

	// The Framework, completed by the Operator; its metrics go to the
	// Operator's registry, as NewFramework would register them, and are
	// also collected into o.reconciles (the same collectors, read by the
	// benchmark only).
	o.fw, err = op.NewFramework(framework.Config{
		Name:           readmeName,
		Informer:       o.items,
		ResourceRouter: rtr,
		Resource:       item.GVR,
		Conditions:     true,
		Workers:        workers,
		Registerer:     teeRegisterer{op.Registry(), o.reconciles},
	})
	if err != nil {
		return nil, err
	}
	// A change to an Item's ConfigMap (not the echo of the operator's own
	// apply) reconciles the Item again.
	if err := op.Owns(o.fw, item.GVK.GroupKind(), configMaps); err != nil {
		return nil, err
	}
	return o, nil
}

// Metrics returns the handler of the Operator's registry: the Framework's
// and informers' metrics and the Go and process collectors.
func (o *okitReadme) Metrics() http.Handler {
	return promhttp.HandlerFor(o.op.Registry(), promhttp.HandlerOpts{})
}

// Ready reports whether the Framework booted: Operator.Run boots it once
// every shared informer has synced.
func (o *okitReadme) Ready() bool {
	select {
	case <-o.fw.Booted():
		return true
	default:
		return false
	}
}

func (o *okitReadme) Reconciles() int64 { return reconcileCount(o.reconciles) }

func (o *okitReadme) EnqueueAll() int {
	objs := o.items.List()
	for _, obj := range objs {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			o.fw.Enqueue(key)
		}
	}
	return len(objs)
}

func (o *okitReadme) Run(ctx context.Context) error { return o.op.Run(ctx) }

// teeRegisterer registers every collector on both registerers: the
// Operator's (what NewFramework fills in) and the benchmark's own.
type teeRegisterer struct{ main, tap prometheus.Registerer }

func (t teeRegisterer) Register(c prometheus.Collector) error {
	if err := t.main.Register(c); err != nil {
		return err
	}
	return t.tap.Register(c)
}

func (t teeRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := t.Register(c); err != nil {
			panic(err)
		}
	}
}

func (t teeRegisterer) Unregister(c prometheus.Collector) bool {
	ok := t.main.Unregister(c)
	return t.tap.Unregister(c) && ok
}

// reconcileCount returns the sum of operatorkit_framework_reconciliations_total
// in g, or -1 when g cannot be gathered.
func reconcileCount(g prometheus.Gatherer) int64 {
	families, err := g.Gather()
	if err != nil {
		return -1
	}
	var n float64
	for _, mf := range families {
		if mf.GetName() != "operatorkit_framework_reconciliations_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return int64(n)
}
