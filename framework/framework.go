package framework

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/internal/nilptr"
	"github.com/operatorkit/operatorkit/internal/printable"
	"github.com/operatorkit/operatorkit/router"
)

// Defaults of Config.
const (
	// DefaultWorkers is the number of reconciling workers when Config.Workers is 0.
	DefaultWorkers = 1
	// MaxWorkers bounds Config.Workers: far beyond what the client-side rate
	// limit of any client lets work at once, and short of the goroutines
	// that would fill the memory before Boot returned.
	MaxWorkers = 10000
	// DefaultReconcileTimeout bounds one reconciliation when
	// Config.ReconcileTimeout is 0.
	DefaultReconcileTimeout = 2 * time.Minute
	// DefaultTraceObjects is how many objects keep traces when
	// Config.TraceObjects is 0.
	DefaultTraceObjects = 256
	// DefaultTracesPerObject is how many traces each object keeps when
	// Config.TracesPerObject is 0.
	DefaultTracesPerObject = 4
	// DefaultWriteExpectationTTL bounds how long a reconciliation waits for
	// the cache to show the operator's own last write to the object.
	DefaultWriteExpectationTTL = 10 * time.Second
	// MinRequeueInterval is the shortest interval between the retries of a
	// failing object: a shorter interval of Config.BackOffFactory's backoffs
	// is taken as MinRequeueInterval.
	MinRequeueInterval = time.Millisecond
	// FinalizerPrefix starts every finalizer the Framework writes; the
	// finalizer is FinalizerPrefix + Config.Name.
	FinalizerPrefix = "operatorkit.io/"
)

// Config configures a Framework. Fields marked Required make New fail when
// they are empty; the others have documented defaults.
type Config struct {
	// Name identifies the operator: it names the finalizer
	// ("operatorkit.io/<Name>"), the work queue, log lines and the
	// "controller" label of every metric. Required; it must be usable in a
	// finalizer, as the name part of a qualified name: at most 63
	// characters, letters, digits, '-', '_' and '.', starting and ending
	// with a letter or digit.
	Name string
	// Informer is the cache the workers read objects from and whose events
	// feed the work queue. Boot runs it. Required. An object that leaves
	// the view of a label- or field-selected Informer without being
	// deleted (the label it selects removed) is forgotten: it is not
	// reconciled any more, its delete chain does not run, what it made
	// stays, and so does the Framework's finalizer, which then holds a
	// later delete of the object until someone removes it. To undo what
	// the operator made when an object stops being selected, give the
	// Framework an Informer of every object and resources that desire
	// nothing for an object without the label (a child resource's Desired
	// returning nil), with DisableFinalizers when most objects are never
	// the operator's (docs/getting-started.md, "Later: a built-in kind
	// that is not yours").
	Informer informer.Interface
	// ResourceRouter picks the ResourceSet for each object. Required.
	ResourceRouter *router.Router
	// Client writes the Framework's finalizer on the reconciled objects, and
	// their status with Conditions. Required unless MetadataClient, DryRun
	// or DisableFinalizers is set, and always with Conditions but without
	// DryRun.
	Client dynamic.Interface
	// MetadataClient, when set, writes the finalizer and (with Conditions)
	// the status instead of Client: the API server then answers each patch
	// and apply with the object's metadata only, so the Framework does not
	// decode the whole object to read its new resourceVersion and
	// managedFields. Build it with metadata.NewForConfig;
	// operator.Operator.NewFramework fills in the Operator's, except with
	// DryRun or DisableFinalizers.
	MetadataClient metadata.Interface
	// Resource is the GroupVersionResource of the reconciled objects, used
	// with Client or MetadataClient. Required with either: Version and
	// Resource must not be empty, and its group and resource must be
	// Informer's when Informer has a GVR method (as informer.Informer and
	// operator.SharedInformer do).
	Resource schema.GroupVersionResource
	// CRD, when set, is created or updated by EnsureCRD, which Boot calls
	// before it runs the informer (and operator.Operator.Run before it
	// starts the shared informers, which would never sync without it).
	// Not with DryRun, which writes nothing: the CRD must be installed.
	// With Resource set, the CRD's group, plural and served versions, as
	// far as it sets them, must include Resource's.
	CRD *apiextensionsv1.CustomResourceDefinition
	// CRDClient ensures CRD. Required when CRD is set; with
	// MigrateStorage, it must have been made with crdclient.Config.Dynamic.
	CRDClient *crdclient.CRDClient
	// MigrateStorage makes EnsureCRD, once CRD is established, migrate the
	// stored objects of CRD to its storage version
	// (crdclient.CRDClient.MigrateStorage): when the CRD's
	// status.storedVersions lists another version than the storage version
	// (the storage version changed, as from v1alpha1 to v1), every object
	// is written back once, unchanged but for its managedFields entries of
	// the old versions, which then name the storage version, and
	// status.storedVersions is set to the storage version alone, so that a
	// later release may drop the old version from CRD. Give Resource and
	// Informer the storage version then: a write through an old version
	// afterwards (this Framework's status apply, say) records an entry of
	// that version again, and once it is dropped every server-side apply
	// of that object fails; New refuses a Resource of another version
	// than CRD's storage version (ErrInvalidConfig). Otherwise it costs one read of the CRD. It writes
	// every object (an update event for each to other watchers; this
	// Framework's informer starts after it), before the Framework starts,
	// and in every replica that starts while the old version is listed
	// (they share the work: an object another replica wrote is skipped);
	// so it is off unless set. Not with DryRun, which writes nothing.
	// A migration that fails (an object whose write the API server
	// refuses, as a validation rule of the CRD may, RBAC that does not
	// allow it, a step that timed out) does not fail EnsureCRD, Boot or
	// operator.Operator.Run: the CRD keeps the old versions, so the API
	// server still reads the objects stored in them, and the Framework
	// starts; the error is logged at error level (a msg that begins
	// "storage migration failed: starting all the same"),
	// status.storedVersions keeps the old versions, and the next start
	// migrates again. Only a CRDClient made without
	// crdclient.Config.Dynamic, or ctx's end, fails EnsureCRD.
	// Requires CRD.
	MigrateStorage bool
	// Logger receives the Framework's logs. Defaults to a nop logger.
	// The Framework logs one debug line per reconciliation (its trace); a
	// Logger with a method DebugEnabled() bool that returns false, as
	// operator.NewLogger's at levels above "debug", spares it building
	// that line. Wrapped in log.With, a logger loses that method: the line
	// is then built and dropped by the logger's own filter.
	Logger log.Logger
	// Registerer registers the Framework's and the work queue's metrics.
	// Nil, or a nil *prometheus.Registry, registers nothing (the metrics
	// still work in memory).
	Registerer prometheus.Registerer
	// EventRecorder, when set, records a Warning event on an object whose
	// reconciliation failed and a Normal event when it recovers; with
	// Conditions, also an event when a condition changes. A reconciliation
	// that Abort ended records none (it must stop writing).
	EventRecorder record.EventRecorder
	// BackOffFactory makes the per-object backoff used to requeue an object
	// whose reconciliation failed. A backoff that stops is held at its last
	// interval: objects are retried until they succeed, never dropped.
	// It must not return nil, must return a new backoff on each call, and
	// its backoffs must wait: one that settles at no wait at all (the last
	// interval before it stops, or where it is after many retries, is 0,
	// as with backoff.ZeroBackOff) is refused, since a failing object would
	// be reconciled again at once for ever; New calls it twice to check.
	// An interval under MinRequeueInterval (a jittered one near it) is
	// taken as MinRequeueInterval. Defaults to DefaultRequeueBackOff.
	// Ignored when RateLimiter is set.
	BackOffFactory func() backoff.BackOff
	// RateLimiter, when set, replaces BackOffFactory with a client-go rate
	// limiter for failed objects. A wait it gives under MinRequeueInterval
	// (0, from a limiter of no delay) is taken as MinRequeueInterval, so
	// that a failing object is never reconciled in a hot loop.
	RateLimiter workqueue.TypedRateLimiter[string]
	// Workers is how many objects are reconciled at once (never the same
	// object twice at once). Defaults to DefaultWorkers; at most
	// MaxWorkers.
	Workers int
	// ReconcileTimeout bounds one reconciliation; its context ends after it.
	// A timed-out reconciliation counts as failed and is retried with
	// backoff. Defaults to DefaultReconcileTimeout.
	ReconcileTimeout time.Duration
	// UpdatePredicate decides whether an update event enqueues the object.
	// Defaults to DefaultUpdatePredicate, which ignores the Framework's own
	// finalizer and status writes. An update that removed the Framework's
	// finalizer from an object not being deleted enqueues it whatever the
	// predicate says (UpdateFunc), so that the finalizer is added back.
	UpdatePredicate func(oldObj, newObj any) bool
	// DryRun makes the Framework reconcile without writing: each crud
	// resource computes its plan (see Plan), which is traced and logged;
	// no finalizer is written, nothing is applied, and CRD is neither
	// created nor updated (nor its objects migrated, see MigrateStorage).
	// An object being deleted without the Framework's finalizer is skipped
	// (result skipped, no plan), as without DryRun, unless
	// DisableFinalizers is set.
	DryRun bool
	// RunSuperseded makes every reconciliation run its whole chain. By
	// default a reconciliation stops before its next resource, with result
	// "superseded", when the informer's cache already holds a newer
	// generation of the object (its spec changed, or its deletion started,
	// meanwhile): the newer generation is queued and reconciled next, so the
	// writes left would only be overwritten, or fail with a conflict. Set it
	// when every generation's writes must happen, not only the latest's.
	RunSuperseded bool
	// Conditions makes the Framework maintain the status of the reconciled
	// objects, which need a status subresource: the conditions Ready,
	// Reconciling and Stalled (see conditioncontext), the conditions
	// resources set with conditioncontext, status.observedGeneration, and
	// the other status fields resources set with statuscontext, written
	// with server-side apply under FieldManager at most once per
	// reconciliation, and not at all when nothing changed. Resources may
	// run conditioncontext.Guard. Client is required; with DryRun nothing is
	// written. See "Status conditions" in the package documentation.
	// New refuses it (ErrInvalidConfig) for a kind built into Kubernetes
	// whose status is not laid out so, a Namespace's or a Deployment's
	// (their controllers write their status, with conditions of another
	// type and no status.observedGeneration) or a ConfigMap's (none): the
	// API server would refuse every status apply. An operator of such a
	// kind reports through events and metrics instead.
	// Server-side apply keeps other writers' conditions without a
	// resourceVersion precondition while the object carries the
	// finalizer (with DisableFinalizers it has one, and a conflict costs a
	// read and a second apply), at a price on the API
	// server: in bench/'s burst, about 2.6 ms more of its CPU per status
	// write than a merge patch of status.observedGeneration
	// (docs/benchmarks.md).
	Conditions bool
	// FieldManager is the field manager of the Framework's status writes.
	// Defaults to FieldManagerPrefix + Name. At most 128 bytes of
	// printable UTF-8.
	FieldManager string
	// DisableFinalizers stops the Framework from adding its finalizer. A
	// delete is then processed from the informer's last state of the object,
	// and lost if the process is down when it happens. The finalizer of an
	// earlier run with finalizers is still removed after the object's delete
	// chain, with Client or MetadataClient; without either, that
	// reconciliation fails with a permanent error asking to remove it by
	// hand.
	DisableFinalizers bool
	// TraceObjects caps how many objects keep traces (least recently
	// reconciled objects are dropped first). Objects whose last
	// reconciliation ended without an error take at most half of the
	// places, and give theirs up first: a resync over many healthy objects
	// leaves the failing ones at least half of the places (a healthy
	// object takes the place of the least recent failing one only when
	// failing objects hold more than half). A successful
	// reconciliation that changed nothing (crud resources whose apply
	// steps were all skipped, no status write; a chain of more than eight
	// crud resources counts as a change) of an object without kept
	// traces takes a place only when one is free, so that a resync does not
	// push out the traces of the last changes either. Defaults to
	// DefaultTraceObjects; negative disables tracing.
	TraceObjects int
	// TracesPerObject caps the traces kept per object. Defaults to
	// DefaultTracesPerObject; must not be negative. Reconciliations in a
	// row that go the same way (the same result, error and steps, a run of
	// no-op resyncs say) keep one trace between them, with a count
	// (trace.Trace.Repeats).
	TracesPerObject int
}

// Framework runs the resource chain for every object of one kind: informer
// events feed a rate-limited work queue keyed by namespace/name; workers take
// keys, read the latest object from the cache, let the router pick the
// ResourceSet and run ProcessUpdate or ProcessDelete, with finalizers,
// per-object backoff, requeues, traces and metrics. Create it with New and
// run it with Boot. Its methods are safe for concurrent use.
type Framework struct {
	name       string
	finalizer  string
	informer   informer.Interface
	router     *router.Router
	client     dynamic.Interface
	metaClient metadata.Interface
	resource   schema.GroupVersionResource
	// ownGR is the reconciled objects' group and resource, from
	// Config.Resource or the informer's GVR; empty when neither says it.
	// A conflict on an object of it is a conflict on the reconciled
	// object itself (conflictOnObject).
	ownGR      schema.GroupResource
	crd        *apiextensionsv1.CustomResourceDefinition
	crdClient  *crdclient.CRDClient
	crdMu      sync.Mutex
	crdEnsured bool // EnsureCRD succeeded
	// migrateStorage is Config.MigrateStorage.
	migrateStorage bool
	logger         log.Logger
	// debugLogger is level.Debug(logger), nil when Config.Logger was nil.
	debugLogger      log.Logger
	recorder         record.EventRecorder
	workers          int
	reconcileTimeout time.Duration
	updatePredicate  func(oldObj, newObj any) bool
	dryRun           bool
	runSuperseded    bool
	finalizers       bool
	// ownsFinalizer is !Config.DisableFinalizers: the operator, run
	// without DryRun, adds its finalizer (Plan skips the delete chain of
	// an object without it, as such a reconciliation does).
	ownsFinalizer bool
	// conditions is Config.Conditions without DryRun; fieldManager is
	// Config.FieldManager with its default.
	conditions   bool
	fieldManager string
	// plansConditions is Config.Conditions, DryRun or not: plans read the
	// object's conditions, as its reconciliations without DryRun do.
	plansConditions bool
	// listMode is the listMode of the reconciled resource's
	// status.conditions, once an object's managedFields told it.
	listMode atomic.Int32
	// kind is the reconciled resource's kind, once read from the API
	// server (see statusRun.learnKind).
	kind atomic.Pointer[string]
	// writeExpectationTTL bounds the wait for the cache to show our own
	// writes (see resourceversioncontext).
	writeExpectationTTL time.Duration

	limiter  workqueue.TypedRateLimiter[string]
	provider workqueue.MetricsProvider
	// queue is created by Boot (client-go's queue starts goroutines, which
	// a Framework that is never booted must not leak); nil before.
	queueMu sync.RWMutex
	queue   workqueue.TypedRateLimitingInterface[string]
	metrics *metrics
	traces  *traceStore
	state   *objectState
	// traceSteps is the room each reconciliation's trace is made with.
	traceSteps int
	// traceLimit is the most steps a reconciliation's trace holds
	// (maxLiveSteps).
	traceLimit int

	bootOnce sync.Once
	booted   chan struct{}
	// abort cancels the base context of the reconciliations (Abort); set
	// by Boot.
	abortMu sync.Mutex
	abort   context.CancelFunc
}

// ownGroupResource is the reconciled objects' group and resource:
// config.Resource's, or else the informer's GVR's; empty when neither
// tells.
func ownGroupResource(config Config) schema.GroupResource {
	if config.Resource.Resource != "" {
		return config.Resource.GroupResource()
	}
	if g, ok := config.Informer.(interface {
		GVR() schema.GroupVersionResource
	}); ok {
		return g.GVR().GroupResource()
	}
	return schema.GroupResource{}
}

// builtinWithoutConditions reports whether gvr is the resource of a kind
// built into Kubernetes (client-go's scheme has its Go type, from
// k8s.io/api: an operator may register its own types there too) whose status
// is not laid out as Config.Conditions writes it (status.conditions a list
// of metav1.Condition, status.observedGeneration an int64): a Namespace's
// or a Deployment's, which their own controllers write, or none at all (a
// ConfigMap). The API server refuses to apply fields its schema of such a
// kind does not declare. It returns the kind's name.
func builtinWithoutConditions(gvr schema.GroupVersionResource) (string, bool) {
	if gvr.Resource == "" || gvr.Version == "" {
		return "", false
	}
	for kind, t := range scheme.Scheme.KnownTypes(gvr.GroupVersion()) {
		gvk := gvr.GroupVersion().WithKind(kind)
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural.Resource != gvr.Resource || t.Kind() != reflect.Struct {
			continue
		}
		if !strings.HasPrefix(t.PkgPath(), "k8s.io/api/") {
			return "", false // a custom resource's: its CRD's schema decides
		}
		sf := statusFieldsOf(t)
		return kind, !sf.ok || sf.conditions < 0 || sf.observed < 0
	}
	return "", false
}

// New validates config and returns a Framework ready to Boot. Errors wrap
// ErrInvalidConfig and name the field; an interface field that holds a nil
// pointer is an error too.
func New(config Config) (*Framework, error) {
	if config.Name == "" {
		return nil, fmt.Errorf("%w: framework.Config.Name must not be empty", ErrInvalidConfig)
	}
	finalizer := FinalizerPrefix + config.Name
	if errs := validation.IsQualifiedName(finalizer); len(errs) > 0 {
		return nil, fmt.Errorf("%w: framework.Config.Name %q does not make a valid finalizer %q: %v", ErrInvalidConfig, config.Name, finalizer, errs)
	}
	// A nil pointer in an interface field (a client whose constructor
	// failed, say) would panic at its first use, in Boot or a worker.
	for _, f := range []struct {
		name  string
		value any
	}{
		{"Informer", config.Informer}, {"Client", config.Client}, {"MetadataClient", config.MetadataClient},
		{"Logger", config.Logger}, {"EventRecorder", config.EventRecorder}, {"RateLimiter", config.RateLimiter},
	} {
		if f.value != nil && nilptr.Is(f.value) {
			return nil, fmt.Errorf("%w: framework.Config.%s is a nil %T", ErrInvalidConfig, f.name, f.value)
		}
	}
	if config.Informer == nil {
		return nil, fmt.Errorf("%w: framework.Config.Informer must not be empty", ErrInvalidConfig)
	}
	if config.ResourceRouter == nil {
		return nil, fmt.Errorf("%w: framework.Config.ResourceRouter must not be empty", ErrInvalidConfig)
	}
	writes := !config.DryRun && !config.DisableFinalizers
	if writes && config.Client == nil && config.MetadataClient == nil {
		return nil, fmt.Errorf("%w: framework.Config.Client must not be empty (it writes finalizers; set MetadataClient instead, or DisableFinalizers to run without)", ErrInvalidConfig)
	}
	if (config.Client != nil || config.MetadataClient != nil) && config.Resource.Resource == "" {
		return nil, fmt.Errorf("%w: framework.Config.Resource must name the reconciled resource when Client or MetadataClient is set", ErrInvalidConfig)
	}
	if (config.Client != nil || config.MetadataClient != nil) && config.Resource.Version == "" {
		// Every finalizer and status write would go to a path the API
		// server does not serve.
		return nil, fmt.Errorf("%w: framework.Config.Resource %q needs a version", ErrInvalidConfig, config.Resource)
	}
	if g, ok := config.Informer.(interface {
		GVR() schema.GroupVersionResource
	}); ok && (config.Client != nil || config.MetadataClient != nil) {
		// The finalizer and status writes would go to the objects of the
		// same names in another resource, or fail as not found.
		if gr := g.GVR().GroupResource(); gr != config.Resource.GroupResource() {
			return nil, fmt.Errorf("%w: framework.Config.Resource %q is not the resource of Informer, %q: the finalizer and status writes would go to other objects", ErrInvalidConfig, config.Resource.GroupResource(), gr)
		}
	}
	if config.FieldManager == "" {
		config.FieldManager = FieldManagerPrefix + config.Name
	}
	if !printable.FieldManager(config.FieldManager) {
		return nil, fmt.Errorf("%w: framework.Config.FieldManager %q must be at most %d bytes of printable UTF-8", ErrInvalidConfig, config.FieldManager, printable.MaxFieldManager)
	}
	conditions := config.Conditions && !config.DryRun
	if conditions && config.Client == nil {
		return nil, fmt.Errorf("%w: framework.Config.Client must not be empty when Conditions is set (it writes the status)", ErrInvalidConfig)
	}
	if conditions {
		if kind, ok := builtinWithoutConditions(config.Resource); ok {
			return nil, fmt.Errorf("%w: framework.Config.Conditions cannot be set for %s: %s is a kind built into Kubernetes whose status another controller writes, without status.conditions as a list of metav1.Condition and status.observedGeneration (every status apply would fail); leave Conditions off, the Framework's events and metrics still report each failure",
				ErrInvalidConfig, config.Resource.GroupResource(), kind)
		}
	}
	if conditions && config.CRD != nil {
		for _, v := range config.CRD.Spec.Versions {
			if v.Name == config.Resource.Version && (v.Subresources == nil || v.Subresources.Status == nil) {
				return nil, fmt.Errorf("%w: framework.Config.CRD %s version %s has no status subresource, which Conditions needs (spec.versions[].subresources.status)", ErrInvalidConfig, config.CRD.Name, v.Name)
			}
		}
	}
	if config.CRD != nil && config.CRDClient == nil {
		return nil, fmt.Errorf("%w: framework.Config.CRDClient must not be empty when CRD is set", ErrInvalidConfig)
	}
	if config.MigrateStorage && config.CRD == nil {
		return nil, fmt.Errorf("%w: framework.Config.CRD must not be empty when MigrateStorage is set", ErrInvalidConfig)
	}
	if err := crdServes(config.CRD, config.Resource); err != nil {
		return nil, err
	}
	if err := migratesToResource(config); err != nil {
		return nil, err
	}
	if config.Workers < 0 || config.Workers > MaxWorkers {
		return nil, fmt.Errorf("%w: framework.Config.Workers must be 0 (DefaultWorkers) to %d (MaxWorkers), got %d", ErrInvalidConfig, MaxWorkers, config.Workers)
	}
	if config.ReconcileTimeout < 0 {
		return nil, fmt.Errorf("%w: framework.Config.ReconcileTimeout must not be negative, got %s", ErrInvalidConfig, config.ReconcileTimeout)
	}
	if config.Workers == 0 {
		config.Workers = DefaultWorkers
	}
	if config.ReconcileTimeout == 0 {
		config.ReconcileTimeout = DefaultReconcileTimeout
	}
	if config.UpdatePredicate == nil {
		config.UpdatePredicate = DefaultUpdatePredicate
	}
	logDebug := config.Logger != nil
	if d, ok := config.Logger.(interface{ DebugEnabled() bool }); ok && !d.DebugEnabled() {
		logDebug = false
	}
	if config.Logger == nil {
		config.Logger = log.NewNopLogger()
	}
	if config.TraceObjects == 0 {
		config.TraceObjects = DefaultTraceObjects
	}
	if config.TracesPerObject < 0 {
		// Not a way to turn tracing off: a negative TraceObjects is.
		return nil, fmt.Errorf("%w: framework.Config.TracesPerObject must not be negative, got %d (a negative TraceObjects disables tracing)", ErrInvalidConfig, config.TracesPerObject)
	}
	if config.TracesPerObject == 0 {
		config.TracesPerObject = DefaultTracesPerObject
	}
	var limiter workqueue.TypedRateLimiter[string] = floorLimiter{config.RateLimiter}
	if config.RateLimiter == nil {
		factory := config.BackOffFactory
		if factory == nil {
			factory = DefaultRequeueBackOff
		} else if b := factory(); nilptr.Is(b) {
			// Its first failed object would panic a worker.
			return nil, fmt.Errorf("%w: framework.Config.BackOffFactory returned a nil backoff.BackOff", ErrInvalidConfig)
		} else if nilptr.Same(b, factory()) {
			// One backoff for every object: each failure would lengthen
			// the wait of all the others, a new one's first included.
			return nil, fmt.Errorf("%w: framework.Config.BackOffFactory returned the same %T twice: it must make a new backoff on each call (one per object)", ErrInvalidConfig, b)
		} else if held := heldInterval(b); held <= 0 {
			// A failing object would be reconciled again at once, for
			// ever: a hot loop on the API server. Only no wait at all is
			// refused: a threshold above 0 would refuse a jittered backoff
			// near it at random, one start in several; the rate limiter
			// takes shorter intervals as MinRequeueInterval.
			return nil, fmt.Errorf("%w: framework.Config.BackOffFactory's %T settles at %s between retries: a failing object would be reconciled again and again at once (a stopped backoff is held at its last interval)", ErrInvalidConfig, b, held)
		}
		limiter = newBackOffRateLimiter(factory)
	}

	m, provider, err := newMetrics(config.Name, config.Registerer)
	if err != nil {
		// Another collector under one of the Framework's metric names.
		return nil, fmt.Errorf("%w: framework.Config.Registerer: %w", ErrInvalidConfig, err)
	}
	f := &Framework{
		name:                config.Name,
		finalizer:           finalizer,
		informer:            config.Informer,
		router:              config.ResourceRouter,
		client:              config.Client,
		metaClient:          config.MetadataClient,
		resource:            config.Resource,
		ownGR:               ownGroupResource(config),
		crd:                 config.CRD,
		crdClient:           config.CRDClient,
		migrateStorage:      config.MigrateStorage,
		logger:              log.With(config.Logger, "controller", config.Name),
		recorder:            config.EventRecorder,
		workers:             config.Workers,
		reconcileTimeout:    config.ReconcileTimeout,
		updatePredicate:     config.UpdatePredicate,
		runSuperseded:       config.RunSuperseded,
		dryRun:              config.DryRun,
		finalizers:          writes,
		ownsFinalizer:       !config.DisableFinalizers,
		conditions:          conditions,
		plansConditions:     config.Conditions,
		fieldManager:        config.FieldManager,
		writeExpectationTTL: DefaultWriteExpectationTTL,
		limiter:             limiter,
		provider:            provider,
		metrics:             m,
		traces:              newTraceStore(config.TraceObjects, config.TracesPerObject),
		state:               newObjectState(),
		booted:              make(chan struct{}),
	}
	for _, set := range f.router.ResourceSets() {
		// A crud resource records 6 steps and the chain 1 per resource; the
		// Framework's own steps (finalizer, status) add a few.
		f.traceSteps = max(f.traceSteps, 7*len(set.Resources())+4)
	}
	f.traceLimit = maxLiveSteps(f.traceSteps)
	if logDebug {
		f.debugLogger = level.Debug(f.logger)
	}
	return f, nil
}

// add puts key on the work queue; before Boot the key is only pending (see
// objectState) and Boot queues it.
func (f *Framework) add(key string) {
	f.queueMu.RLock()
	q := f.queue
	f.queueMu.RUnlock()
	if q != nil {
		q.Add(key)
	}
}

// Abort ends the context of every reconciliation in flight at once
// (context.Canceled), instead of letting them finish. The operator package
// calls it when this replica lost its Lease (leader election, or a shard's
// member Lease): another replica may soon reconcile the same objects, and
// the ones in flight here must stop writing. Resources see it as their
// context ending. Call it together with ending Boot's context: the
// reconciliations Boot would start afterwards would end at once as well.
// Before Boot it does nothing; it is idempotent.
func (f *Framework) Abort() {
	f.abortMu.Lock()
	defer f.abortMu.Unlock()
	if f.abort != nil {
		f.abort()
	}
}

// Finalizer returns the finalizer the Framework adds to reconciled objects.
func (f *Framework) Finalizer() string { return f.finalizer }

// Booted returns a channel that is closed once Boot has synced the cache and
// started the workers.
func (f *Framework) Booted() <-chan struct{} { return f.booted }

// EnsureCRD creates or updates Config.CRD, when one is set, and waits until
// it is established, and then, with Config.MigrateStorage, migrates its
// stored objects to its storage version (crdclient.CRDClient.MigrateStorage:
// one write per object when status.storedVersions lists an older version;
// a migration that fails otherwise than by ctx's end or a CRDClient made
// without crdclient.Config.Dynamic is logged at error level, and EnsureCRD
// returns nil all the same, see Config.MigrateStorage);
// it does nothing when none is set or after it succeeded once. Boot calls
// it; call it before starting an informer of the CRD's resource yourself,
// which cannot sync before the CRD exists (the operator package's Run
// does). With Config.DryRun it writes nothing and returns nil: the CRD must
// be installed. An error names the Framework and the CRD. Safe for
// concurrent use.
func (f *Framework) EnsureCRD(ctx context.Context) error {
	if f.crd == nil {
		return nil
	}
	f.crdMu.Lock()
	defer f.crdMu.Unlock()
	if f.crdEnsured {
		return nil
	}
	if f.dryRun {
		level.Info(f.logger).Log("msg", "dry run: not ensuring CRD", "crd", f.crd.Name)
		f.crdEnsured = true
		return nil
	}
	level.Info(f.logger).Log("msg", "ensuring CRD", "crd", f.crd.Name)
	if err := f.crdClient.EnsureCreated(ctx, f.crd, nil); err != nil {
		return fmt.Errorf("framework %s: ensure CRD %s: %w", f.name, f.crd.Name, err)
	}
	if f.migrateStorage {
		if m, err := f.crdClient.MigrateStorage(ctx, f.crd, nil); err != nil {
			if ctx.Err() != nil || errors.Is(err, crdclient.ErrInvalidConfig) {
				return fmt.Errorf("framework %s: %w", f.name, err)
			}
			// The CRD is established and keeps the versions objects are
			// stored in, which the API server reads: a migration that
			// cannot finish (an object the API server refuses to write)
			// must not keep the Framework from starting. The next start
			// migrates again.
			level.Error(f.logger).Log("msg", "storage migration failed: starting all the same; status.storedVersions keeps the old versions until a later start migrates",
				"crd", f.crd.Name, "rewritten", m.Rewritten, "skipped", m.Skipped, "refused", m.Refused, "err", err)
		}
	}
	f.crdEnsured = true
	return nil
}

// Boot runs the Framework until ctx ends: it ensures the CRD when one is
// configured, registers its event handlers on the informer, runs the
// informer, waits for its cache, and starts the workers. When ctx ends it
// stops taking work and returns after the in-flight reconciliations have
// finished (each is bounded by ReconcileTimeout); it returns nil then. It
// returns an error, without starting workers, when the CRD cannot be ensured
// or the cache does not sync: the informer's WaitForCacheSync failed before
// ctx ended (an informer.Informer whose list the API server refuses for
// good, such as a field selector it does not support, or one given a
// Namespace for a cluster-scoped resource); the informer it ran is
// stopped then. A cache that merely never syncs (a resource not
// served, a list not allowed) keeps Boot waiting until ctx ends, and it
// returns nil then: bound it with ctx, or use the operator package, whose
// Run bounds the wait with its CacheSyncTimeout. Boot may be called once.
func (f *Framework) Boot(ctx context.Context) error {
	first := false
	f.bootOnce.Do(func() { first = true })
	if !first {
		return fmt.Errorf("framework %s: Boot called twice", f.name)
	}
	logger := f.logger
	// client-go's queue, as NewTypedRateLimitingQueueWithConfig makes it,
	// with a ring buffer for its FIFO (ringQueue).
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(f.limiter, workqueue.TypedRateLimitingQueueConfig[string]{
		Name:            f.name,
		MetricsProvider: f.provider,
		DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
			Name:            f.name,
			MetricsProvider: f.provider,
			Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{
				Name:            f.name,
				MetricsProvider: f.provider,
				Queue:           &ringQueue{},
			}),
		}),
	})
	// Runs after the workers stopped (wg.Wait below).
	defer f.stopQueue(queue)
	f.queueMu.Lock()
	f.queue = queue
	f.queueMu.Unlock()
	// Keys enqueued before Boot (Enqueue, drop-in handlers) are pending,
	// from now on: nothing could reconcile them before.
	for _, key := range f.state.pendingKeys() {
		queue.Add(key)
	}

	if err := f.EnsureCRD(ctx); err != nil {
		return err
	}
	reg, err := f.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f.AddFunc,
		UpdateFunc: f.UpdateFunc,
		DeleteFunc: f.DeleteFunc,
	})
	if err != nil {
		if ctx.Err() != nil {
			// An informer run elsewhere stopped with the same end of ctx
			// before the handler was added: the end Boot returns nil for.
			return nil
		}
		return fmt.Errorf("framework %s: add event handler: %w", f.name, err)
	}
	_ = reg

	var wg sync.WaitGroup
	defer wg.Wait()
	// The informer's goroutine ends with ctx, or when Boot returns before
	// (a cache that failed to sync before ctx ended: the list refused for
	// good), which Boot must not wait on ctx for.
	infCtx, stopInformer := context.WithCancel(ctx)
	defer stopInformer() // before wg.Wait
	informerErr := make(chan error, 1)
	wg.Go(func() { informerErr <- f.informer.Run(infCtx) })

	level.Info(logger).Log("msg", "waiting for cache sync")
	if err := f.informer.WaitForCacheSync(ctx); err != nil {
		select {
		case runErr := <-informerErr:
			if runErr != nil {
				return fmt.Errorf("framework %s: run informer: %w", f.name, runErr)
			}
		default:
		}
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("framework %s: %w", f.name, err)
	}

	// The reconciliations' base: not ended by ctx (in-flight ones finish,
	// bounded by ReconcileTimeout), only by Abort.
	detached, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	f.abortMu.Lock()
	f.abort = abort
	f.abortMu.Unlock()
	// The stuck-object gauges report the objects while workers run.
	defer f.metrics.states.running(f.state)()
	for i := 0; i < f.workers; i++ {
		wg.Go(func() {
			for f.processNextItem(ctx, detached) {
			}
		})
	}
	close(f.booted)
	level.Info(logger).Log("msg", "booted", "workers", f.workers)

	<-ctx.Done()
	level.Info(logger).Log("msg", "stopping: waiting for in-flight reconciliations")
	queue.ShutDown()
	wg.Wait()
	if err := <-informerErr; err != nil && !errors.Is(err, context.Canceled) {
		level.Warn(logger).Log("msg", "informer stopped with error", "err", err)
	}
	level.Info(logger).Log("msg", "stopped")
	return nil
}

// stopQueue shuts queue down once no worker takes keys from it any more, and
// takes the keys left in it out: Boot runs once, so this Framework never
// reconciles them, and the work queue's gauges (depth, unfinished work,
// longest running processor) must not show them, or a worker, for ever.
func (f *Framework) stopQueue(queue workqueue.TypedRateLimitingInterface[string]) {
	queue.ShutDown() // returns after the queue's metrics goroutine stopped
	for {
		key, shutdown := queue.Get()
		if shutdown {
			break
		}
		queue.Done(key)
	}
	if p, ok := f.provider.(*workqueueMetricsProvider); ok {
		p.unfinished.WithLabelValues(f.name).Set(0)
		p.longestRunning.WithLabelValues(f.name).Set(0)
	}
}

// crdServes returns an error naming CRD when crd, as far as it says (its
// group, plural and versions, when set), does not serve res, when both are
// set: EnsureCRD would install another resource than the one reconciled
// (its informer would never sync), or one that does not serve its version.
func crdServes(crd *apiextensionsv1.CustomResourceDefinition, res schema.GroupVersionResource) error {
	if crd == nil || res.Resource == "" {
		return nil
	}
	spec := crd.Spec
	if (spec.Group != "" && spec.Group != res.Group) || (spec.Names.Plural != "" && spec.Names.Plural != res.Resource) {
		return fmt.Errorf("%w: framework.Config.CRD %s is of resource %q, not of Resource %q", ErrInvalidConfig, crd.Name, schema.GroupResource{Group: spec.Group, Resource: spec.Names.Plural}, res.GroupResource())
	}
	if len(spec.Versions) == 0 {
		return nil
	}
	var served []string
	for _, v := range spec.Versions {
		if v.Served {
			if v.Name == res.Version {
				return nil
			}
			served = append(served, v.Name)
		}
	}
	return fmt.Errorf("%w: framework.Config.CRD %s does not serve the version %q of Resource (served: %s)", ErrInvalidConfig, crd.Name, res.Version, strings.Join(served, ", "))
}

// migratesToResource refuses MigrateStorage with a Resource of another
// version than the CRD's storage version: the Framework's own writes
// (finalizers, status) through that version would record managedFields
// entries of it again right after the migration renamed them, and once a
// release drops the version every server-side apply of those objects
// fails.
func migratesToResource(config Config) error {
	if !config.MigrateStorage || config.CRD == nil || config.Resource.Version == "" {
		return nil
	}
	for _, v := range config.CRD.Spec.Versions {
		if v.Storage && v.Name != config.Resource.Version {
			return fmt.Errorf("%w: framework.Config.Resource is version %q of %s, but MigrateStorage moves its objects to the storage version %q of framework.Config.CRD %s: "+
				"the Framework's writes through %q would record managedFields entries of that version again, which break every server-side apply once a release drops it; read and write through %q",
				ErrInvalidConfig, config.Resource.Version, config.Resource.GroupResource(), v.Name, config.CRD.Name, config.Resource.Version, v.Name)
		}
	}
	return nil
}

// heldInterval returns the interval b settles at, as the Framework uses
// it: the last interval before it stops (DefaultRequeueInitialInterval when
// it stops at once), or the one it gives after probeRetries retries.
func heldInterval(b backoff.BackOff) time.Duration {
	held := DefaultRequeueInitialInterval
	for range probeRetries {
		d := b.NextBackOff()
		if d == backoff.Stop {
			break
		}
		held = d
	}
	return held
}

// probeRetries is how many intervals of a backoff New looks at.
const probeRetries = 1000
