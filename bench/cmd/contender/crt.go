package main

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/operatorkit/operatorkit/bench/internal/item"
)

// crt is the operator written the idiomatic controller-runtime way: a
// manager with its cached client restricted to the namespace, a controller
// For(&Item{}) that Owns(&ConfigMap{}), controllerutil.CreateOrUpdate for the
// ConfigMap, controllerutil.AddFinalizer/RemoveFinalizer plus Update, and a
// Status().Update only when observedGeneration changes. No predicates, the
// default rate limiter, no metrics or health servers, no leader election,
// logging discarded. EnqueueAll sends a GenericEvent per cached Item through
// a source.Channel. The cache drops managedFields
// (cache.TransformStripManagedFields), as the other contenders do.
type crt struct {
	mgr        ctrl.Manager
	client     client.Client
	ns         string
	events     chan event.GenericEvent
	ready      atomic.Bool
	reconciles atomic.Int64
}

const crtFinalizer = "bench.operatorkit.io/controller-runtime"

func newCRT(cfg *rest.Config, ns string, workers int) (*crt, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := item.AddToScheme(scheme); err != nil {
		return nil, err
	}
	ctrl.SetLogger(logr.Discard())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 logr.Discard(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			DefaultTransform:  cache.TransformStripManagedFields(),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("new manager: %w", err)
	}
	c := &crt{mgr: mgr, client: mgr.GetClient(), ns: ns, events: make(chan event.GenericEvent, 1024)}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&item.Item{}).
		Owns(&corev1.ConfigMap{}).
		WatchesRawSource(source.Channel(c.events, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(c)
	if err != nil {
		return nil, fmt.Errorf("new controller: %w", err)
	}
	return c, nil
}

// Reconcile implements reconcile.Reconciler.
func (c *crt) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c.reconciles.Add(1)
	it := &item.Item{}
	if err := c.client.Get(ctx, req.NamespacedName, it); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !it.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(it, crtFinalizer) {
			return ctrl.Result{}, nil
		}
		cm := &corev1.ConfigMap{}
		err := c.client.Get(ctx, req.NamespacedName, cm)
		switch {
		case err == nil:
			if err := c.client.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		case !apierrors.IsNotFound(err):
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(it, crtFinalizer)
		return ctrl.Result{}, c.client.Update(ctx, it)
	}
	if controllerutil.AddFinalizer(it, crtFinalizer) {
		if err := c.client.Update(ctx, it); err != nil {
			return ctrl.Result{}, err
		}
	}
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = it.Namespace, it.Name
	if _, err := controllerutil.CreateOrUpdate(ctx, c.client, cm, func() error {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[item.LabelItem] = it.Name
		cm.Data = item.Data(it.Spec)
		return controllerutil.SetControllerReference(it, cm, c.mgr.GetScheme())
	}); err != nil {
		return ctrl.Result{}, err
	}
	if it.Status.ObservedGeneration != it.Generation {
		it.Status.ObservedGeneration = it.Generation
		if err := c.client.Status().Update(ctx, it); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// Metrics returns the handler of controller-runtime's metrics registry.
func (c *crt) Metrics() http.Handler {
	return promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{})
}

func (c *crt) Ready() bool       { return c.ready.Load() }
func (c *crt) Reconciles() int64 { return c.reconciles.Load() }

func (c *crt) EnqueueAll() int {
	list := &item.List{}
	if err := c.mgr.GetCache().List(context.Background(), list, client.InNamespace(c.ns)); err != nil {
		logf("controller-runtime: list items: %v", err)
		return 0
	}
	for i := range list.Items {
		c.events <- event.GenericEvent{Object: &list.Items[i]}
	}
	return len(list.Items)
}

func (c *crt) Run(ctx context.Context) error {
	go func() {
		// GetInformer blocks until the informer the controller watches with
		// has synced; the controller starts its workers right after.
		for _, obj := range []client.Object{&item.Item{}, &corev1.ConfigMap{}} {
			if _, err := c.mgr.GetCache().GetInformer(ctx, obj); err != nil {
				return
			}
		}
		c.ready.Store(true)
	}()
	return c.mgr.Start(ctx)
}
