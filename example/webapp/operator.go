package webapp

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-kit/log"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/operator"
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

// Config configures the WebApp operator on an operator.Operator.
type Config struct {
	// Operator runs the WebApp Framework: its shared informers, clients,
	// metrics registry and event broadcaster. Required.
	Operator *operator.Operator
	// CRDClient installs or updates the WebApp CRD when the Framework
	// boots. Optional: nil means the CRD must be installed already.
	CRDClient apiextensionsclient.Interface
	// Namespace restricts the operator to one namespace. Optional: ""
	// watches every namespace.
	Namespace string
	// Name names the framework: finalizer "operatorkit.io/<Name>", metrics
	// label controller. Defaults to DefaultName.
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
	// EventRecorder records Events on WebApps. Optional: nil means the
	// Operator's (none in DryRun).
	EventRecorder record.EventRecorder
	// Logger receives the operator's logs. Optional; nil means no logs.
	Logger log.Logger
}

// Operator is the WebApp operator: a framework.Framework fed by the shared
// WebApp informer, routing each WebApp to the resource set of its release,
// with its children read from the shared, label-filtered informers of
// ConfigMaps, Deployments and Services, whose changes enqueue the owning
// WebApp (so drift is repaired) but whose echoes of the operator's own
// applies do not. Create it with New; Config.Operator runs it.
type Operator struct {
	framework *framework.Framework
	sets      []*router.ResourceSet
}

// The operator's permissions, from which `make generate` writes the
// ClusterRole config/rbac/role.yaml with controller-gen. The WebApp informer
// lists and watches, the plan command gets one object, the framework patches
// its finalizer; the status resource patches the status; children are read
// from informers (list, watch) or by the plan command (get), written with
// server-side apply (patch, and create: an apply that creates needs both)
// and deleted by the delete chain; Events are created and then patched to
// count repeats; leader election uses a Lease.
//
// +kubebuilder:rbac:groups=example.operatorkit.io,resources=webapps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=example.operatorkit.io,resources=webapps/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update

// New adds the WebApp Framework and its child watches to config.Operator,
// starting nothing: config.Operator.Run runs them. The error matches
// ErrInvalidConfig and names the field when a required field is missing.
func New(config Config) (*Operator, error) {
	switch {
	case config.Operator == nil:
		return nil, fmt.Errorf("%w: %T.Operator must not be empty", ErrInvalidConfig, config)
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
	op := config.Operator
	events := config.EventRecorder
	switch {
	case config.DryRun:
		events = nil
	case events == nil:
		events = op.EventRecorder(eventScheme())
	}

	kube := op.Kubernetes()
	managed := labels.Set{LabelManagedBy: ManagedBy}.String()
	child := func(gvr schema.GroupVersionResource, client rest.Interface, obj runtime.Object) (*operator.SharedInformer, error) {
		return op.Informer(informer.Config{RESTClient: client, ObjectType: obj, GVR: gvr, Namespace: config.Namespace, LabelSelector: managed, ResyncPeriod: config.ResyncPeriod})
	}
	configMaps, err := child(corev1.SchemeGroupVersion.WithResource("configmaps"), kube.CoreV1().RESTClient(), &corev1.ConfigMap{})
	if err != nil {
		return nil, err
	}
	deployments, err := child(appsv1.SchemeGroupVersion.WithResource("deployments"), kube.AppsV1().RESTClient(), &appsv1.Deployment{})
	if err != nil {
		return nil, err
	}
	services, err := child(corev1.SchemeGroupVersion.WithResource("services"), kube.CoreV1().RESTClient(), &corev1.Service{})
	if err != nil {
		return nil, err
	}
	sets, err := NewResourceSets(ResourceSetsConfig{
		Client:     kube,
		Children:   NewCachedChildren(configMaps, deployments, services),
		OwnWrites:  op.OwnWrites(),
		Logger:     logger,
		Registerer: op.Registry(),
	})
	if err != nil {
		return nil, err
	}
	rtr, err := router.New(router.Config{Logger: logger, ResourceSets: sets})
	if err != nil {
		return nil, err
	}
	inf, err := op.Informer(informer.Config{
		GVR:               v1alpha1.GroupVersionResource,
		Namespace:         config.Namespace,
		ResyncPeriod:      config.ResyncPeriod,
		DropManagedFields: true,
		Transform:         Transform(logger),
	})
	if err != nil {
		return nil, err
	}
	fc := framework.Config{
		Name:             config.Name,
		Informer:         inf,
		ResourceRouter:   rtr,
		Client:           op.Dynamic(),
		Conditions:       true,
		Resource:         v1alpha1.GroupVersionResource,
		Logger:           logger,
		Registerer:       op.Registry(),
		EventRecorder:    events,
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
	f, err := framework.New(fc)
	if err != nil {
		return nil, err
	}
	webapps := schema.GroupKind{Group: v1alpha1.Group, Kind: v1alpha1.Kind}
	for _, c := range []*operator.SharedInformer{configMaps, deployments, services} {
		if err := op.Owns(f, webapps, c); err != nil {
			return nil, fmt.Errorf("watch children: %w", err)
		}
	}
	if err := op.Add(f); err != nil {
		return nil, err
	}
	return &Operator{framework: f, sets: sets}, nil
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

// eventScheme is client-go's scheme plus the WebApp types, so the event
// recorder can refer to WebApps.
func eventScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = scheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	return s
}
