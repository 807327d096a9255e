package webapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/router"
)

// Defaults of Config.
const (
	// DefaultName is the default Config.Name: the framework's finalizer is
	// "operatorkit.io/webapp-operator".
	DefaultName = "webapp-operator"
	// DefaultWorkers is the default Config.Workers.
	DefaultWorkers = 2
	// DefaultResyncPeriod is the default Config.ResyncPeriod.
	DefaultResyncPeriod = 10 * time.Minute
	// DefaultReconcileTimeout is the default Config.ReconcileTimeout.
	DefaultReconcileTimeout = time.Minute
)

// Config configures an Operator.
type Config struct {
	// Client reads and writes child objects and records events. Required.
	Client kubernetes.Interface
	// Dynamic reads WebApps and writes their finalizers and statuses.
	// Required.
	Dynamic dynamic.Interface
	// CRDClient installs or updates the WebApp CRD when Run starts.
	// Optional: nil means the CRD must be installed already.
	CRDClient apiextensionsclient.Interface
	// Namespace restricts the operator to one namespace. Optional: ""
	// watches every namespace.
	Namespace string
	// Name names the framework: finalizer "operatorkit.io/<Name>", metrics
	// label controller, event source. Defaults to DefaultName.
	Name string
	// Workers is the number of objects reconciled at the same time.
	// Defaults to DefaultWorkers.
	Workers int
	// ResyncPeriod is how often every WebApp is reconciled again without a
	// change. Defaults to DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// ReconcileTimeout bounds one reconciliation. Defaults to
	// DefaultReconcileTimeout.
	ReconcileTimeout time.Duration
	// DryRun reconciles and records plans without writing anything (no
	// children, statuses, finalizers or events).
	DryRun bool
	// EventRecorder records Events on WebApps. Optional: nil means Run
	// records them through Client with client-go's event broadcaster
	// (none in DryRun).
	EventRecorder record.EventRecorder
	// Logger receives the operator's logs. Optional; nil means no logs.
	Logger log.Logger
	// Registerer receives the metrics of the framework, the informers and
	// the resources. Optional; nil registers nothing.
	Registerer prometheus.Registerer
}

// Operator is the WebApp operator: a framework.Framework fed by a WebApp
// informer, routing each WebApp to the resource set of its release, plus
// label-filtered informers on the child ConfigMaps, Deployments and
// Services whose changes enqueue the owning WebApp (so drift is repaired).
// Create it with New and run it with Run.
type Operator struct {
	config    Config
	logger    log.Logger
	events    *deferredRecorder
	factory   informers.SharedInformerFactory
	framework *framework.Framework
	sets      []*router.ResourceSet
}

// New validates config and builds the operator without starting anything:
// no goroutine runs and no request is made until Run. The error matches
// ErrInvalidConfig and names the field when a required field is missing.
func New(config Config) (*Operator, error) {
	switch {
	case config.Client == nil:
		return nil, fmt.Errorf("%w: %T.Client must not be empty", ErrInvalidConfig, config)
	case config.Dynamic == nil:
		return nil, fmt.Errorf("%w: %T.Dynamic must not be empty", ErrInvalidConfig, config)
	case config.Workers < 0:
		return nil, fmt.Errorf("%w: %T.Workers must not be negative", ErrInvalidConfig, config)
	}
	if config.Name == "" {
		config.Name = DefaultName
	}
	if config.Workers == 0 {
		config.Workers = DefaultWorkers
	}
	if config.ResyncPeriod == 0 {
		config.ResyncPeriod = DefaultResyncPeriod
	}
	if config.ReconcileTimeout == 0 {
		config.ReconcileTimeout = DefaultReconcileTimeout
	}
	logger := config.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	o := &Operator{config: config, logger: logger, events: &deferredRecorder{}}
	if config.EventRecorder != nil {
		o.events.set(config.EventRecorder)
	}

	o.factory = informers.NewSharedInformerFactoryWithOptions(config.Client, config.ResyncPeriod,
		informers.WithNamespace(config.Namespace),
		informers.WithTweakListOptions(func(opts *metav1.ListOptions) {
			opts.LabelSelector = labels.Set{LabelManagedBy: ManagedBy}.String()
		}),
		informers.WithTransform(stripManagedFields),
	)
	children := NewCachedChildren(o.factory)

	sets, err := NewResourceSets(ResourceSetsConfig{
		Client:        config.Client,
		Dynamic:       config.Dynamic,
		Children:      children,
		EventRecorder: o.events,
		Logger:        logger,
		Registerer:    config.Registerer,
	})
	if err != nil {
		return nil, err
	}
	o.sets = sets
	rtr, err := router.New(router.Config{Logger: logger, ResourceSets: sets})
	if err != nil {
		return nil, err
	}

	inf, err := informer.New(informer.Config{
		Client:            config.Dynamic,
		GVR:               v1alpha1.GroupVersionResource,
		Namespace:         config.Namespace,
		ResyncPeriod:      config.ResyncPeriod,
		DropManagedFields: true,
		Transform:         Transform(logger),
		Logger:            logger,
		Registerer:        config.Registerer,
	})
	if err != nil {
		return nil, err
	}

	fc := framework.Config{
		Name:             config.Name,
		Informer:         inf,
		ResourceRouter:   rtr,
		Client:           config.Dynamic,
		Resource:         v1alpha1.GroupVersionResource,
		Logger:           logger,
		Registerer:       config.Registerer,
		EventRecorder:    o.events,
		Workers:          config.Workers,
		ReconcileTimeout: config.ReconcileTimeout,
		DryRun:           config.DryRun,
	}
	if config.CRDClient != nil {
		crd, err := v1alpha1.CRD()
		if err != nil {
			return nil, err
		}
		cc, err := crdclient.New(crdclient.Config{Client: config.CRDClient, Logger: logger})
		if err != nil {
			return nil, err
		}
		fc.CRD, fc.CRDClient = crd, cc
	}
	o.framework, err = framework.New(fc)
	if err != nil {
		return nil, err
	}

	for _, inf := range []cache.SharedIndexInformer{
		o.factory.Core().V1().ConfigMaps().Informer(),
		o.factory.Apps().V1().Deployments().Informer(),
		o.factory.Core().V1().Services().Informer(),
	} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { o.enqueueOwner(obj) },
			UpdateFunc: func(oldObj, newObj any) {
				if resourceVersion(oldObj) != resourceVersion(newObj) { // resyncs are covered by the WebApp informer
					o.enqueueOwner(newObj)
				}
			},
			DeleteFunc: func(obj any) { o.enqueueOwner(obj) },
		}); err != nil {
			return nil, fmt.Errorf("watch children: %w", err)
		}
	}
	return o, nil
}

// Run runs the operator until ctx ends: it starts the event broadcaster and
// the child informers, waits for their caches, then boots the framework
// (which ensures the CRD when Config.CRDClient is set, starts the WebApp
// informer and the workers). When ctx ends, Run waits for the reconciliations
// in flight, stops everything it started and returns nil; it returns an
// error when something fails before that (the CRD cannot be installed, a
// cache never syncs). Run is called once.
func (o *Operator) Run(ctx context.Context) error {
	if o.config.EventRecorder == nil && !o.config.DryRun {
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: o.config.Client.CoreV1().Events(o.config.Namespace)})
		o.events.set(b.NewRecorder(eventScheme(), corev1.EventSource{Component: o.config.Name}))
		defer b.Shutdown()
	}

	o.factory.Start(ctx.Done())
	defer o.factory.Shutdown()
	for typ, ok := range o.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cache of %v never synced", typ)
		}
	}
	level.Info(o.logger).Log("msg", "child caches synced; booting framework", "namespace", o.config.Namespace, "workers", o.config.Workers)

	err := o.framework.Boot(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Booted is closed once the framework runs its workers.
func (o *Operator) Booted() <-chan struct{} { return o.framework.Booted() }

// Framework returns the operator's framework, for its debug handler and
// Enqueue.
func (o *Operator) Framework() *framework.Framework { return o.framework }

// DebugHandler serves the framework's /debug/reconciliations pages.
func (o *Operator) DebugHandler() http.Handler { return o.framework.DebugHandler() }

// ResourceSets returns the operator's resource sets, one per release.
func (o *Operator) ResourceSets() []*router.ResourceSet { return o.sets }

// enqueueOwner enqueues the WebApp that owns a child object.
func (o *Operator) enqueueOwner(obj any) {
	if key, ok := ownerKey(obj); ok {
		o.framework.Enqueue(key)
	}
}

// stripManagedFields drops metadata.managedFields from cached children: the
// operator compares fields itself and applies with server-side apply, so it
// never reads them, and they are about a third of an object's size.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

func resourceVersion(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// eventScheme is client-go's scheme plus the WebApp types, so the event
// recorder can refer to WebApps.
func eventScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = scheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	return s
}
