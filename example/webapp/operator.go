package webapp

import (
	"cmp"
	"fmt"
	"net/http"

	"github.com/go-kit/log"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/router"
)

// DefaultName names the framework: its finalizer is
// "operatorkit.io/webapp-operator", its metrics' controller label
// "webapp-operator".
const DefaultName = "webapp-operator"

// ErrInvalidConfig is returned by New when its Config is incomplete; the
// message names the field. It is the library's ErrInvalidConfig
// (router.ErrInvalidConfig, framework.ErrInvalidConfig), so errors.Is
// matches either.
var ErrInvalidConfig = router.ErrInvalidConfig

// Config configures the WebApp operator on an operator.Operator.
type Config struct {
	// Operator runs the WebApp Framework: its shared informers, clients,
	// metrics registry and event broadcaster. Required.
	Operator *operator.Operator
	// Options are the Framework's namespace ("" watches every namespace),
	// workers, resync period, reconcile timeout and dry run (no children,
	// statuses, finalizers or events are written); zero values take the
	// library's defaults (see operator.FrameworkOptions).
	Options operator.FrameworkOptions
	// InstallCRD makes the operator create or update the WebApp CRD when it
	// starts, before it waits for its caches (framework.Config.CRD), unless
	// Options.DryRun, which writes nothing. False: the CRD must be installed
	// already.
	InstallCRD bool
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
// lists and watches, the framework patches its finalizer and the status;
// children are read from informers (list, watch; get for kubectl-like
// tools), written with server-side apply (patch, and create: an apply that
// creates needs both) and deleted by the delete chain; their owner
// reference blocks the owner's deletion, which clusters with the
// OwnerReferencesPermissionEnforcement admission plugin allow only with
// update on webapps/finalizers; Events are created and then patched to
// count repeats; leader election uses a Lease; with --shard each replica
// also lists, watches and deletes the member Leases of its ring, and the
// leader patches the shard labels of webapps (see operator.Sharding).
//
// +kubebuilder:rbac:groups=example.operatorkit.io,resources=webapps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=example.operatorkit.io,resources=webapps/status,verbs=patch
// +kubebuilder:rbac:groups=example.operatorkit.io,resources=webapps/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;delete

// New adds the WebApp Framework and its child watches to config.Operator,
// starting nothing: config.Operator.Run runs them (or Operator.Plan plans
// with them). The error matches ErrInvalidConfig and names the field when
// a required field is missing.
func New(config Config) (*Operator, error) {
	if config.Operator == nil {
		return nil, fmt.Errorf("%w: %T.Operator must not be empty", ErrInvalidConfig, config)
	}
	op, logger := config.Operator, cmp.Or[log.Logger](config.Logger, log.NewNopLogger())
	sets, children, err := resourceSets(config, logger)
	if err != nil {
		return nil, err
	}
	rtr, err := router.New(router.Config{Logger: logger, ResourceSets: sets})
	if err != nil {
		return nil, err
	}
	inf, err := op.Informer(informer.Config{GVR: v1alpha1.GroupVersionResource, ObjectType: &v1alpha1.WebApp{},
		Namespace: config.Options.Namespace, ResyncPeriod: config.Options.ResyncPeriod})
	if err != nil {
		return nil, err
	}
	fc := framework.Config{Name: DefaultName, Informer: inf, ResourceRouter: rtr, Resource: v1alpha1.GroupVersionResource,
		Conditions: true, Logger: logger, Workers: config.Options.Workers, ReconcileTimeout: config.Options.ReconcileTimeout, DryRun: config.Options.DryRun}
	if config.InstallCRD {
		if fc.CRD, err = v1alpha1.CRD(); err != nil {
			return nil, err
		}
	}
	f, err := op.NewFramework(fc)
	if err != nil {
		return nil, err
	}
	for _, c := range children {
		if err := op.Owns(f, v1alpha1.GroupVersionKind.GroupKind(), c); err != nil {
			return nil, fmt.Errorf("watch children: %w", err)
		}
	}
	return &Operator{framework: f, sets: sets}, nil
}

// Booted is closed once the framework runs its workers.
func (o *Operator) Booted() <-chan struct{} { return o.framework.Booted() }

// Framework returns the operator's framework, for its debug handler, plans
// and Enqueue.
func (o *Operator) Framework() *framework.Framework { return o.framework }

// DebugHandler serves the framework's /debug/reconciliations pages.
func (o *Operator) DebugHandler() http.Handler { return o.framework.DebugHandler() }

// ResourceSets returns the operator's resource sets, one per release, in
// the order of Releases.
func (o *Operator) ResourceSets() []*router.ResourceSet { return o.sets }
