package operator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/internal/nilptr"
	"github.com/operatorkit/operatorkit/internal/okerr"
	"github.com/operatorkit/operatorkit/internal/printable"
	"github.com/operatorkit/operatorkit/internal/promutil"
)

// leaseSecondsWhy says why RenewDeadline must be shorter than LeaseDuration
// in whole seconds.
const leaseSecondsWhy = "client-go's leader election writes the Lease's duration rounded down to the second, and another replica takes over once that has passed, while this one would still reconcile until its RenewDeadline"

// Defaults of Config.
const (
	// DefaultLeaseDuration is how long a leader's Lease holds without
	// renewal (client-go's and controller-runtime's usual value).
	DefaultLeaseDuration = 15 * time.Second
	// DefaultRenewDeadline is how long the leader tries to renew before it
	// gives up leading.
	DefaultRenewDeadline = 10 * time.Second
	// DefaultRetryPeriod is how often candidates try to acquire or renew
	// the Lease.
	DefaultRetryPeriod = 2 * time.Second
	// DefaultShutdownTimeout bounds how long Run waits, once its context
	// ends, for the reconciliations in flight (a pod gets 30 s by default
	// between SIGTERM and SIGKILL).
	DefaultShutdownTimeout = 25 * time.Second
	// DefaultCacheSyncTimeout bounds how long Run and Plan wait for the
	// informers' first lists (controller-runtime's default too).
	DefaultCacheSyncTimeout = 2 * time.Minute
	// DefaultResyncPeriod is the resync period of the informers that
	// Informer creates when their config has none.
	DefaultResyncPeriod = 10 * time.Minute
)

// ErrInvalidConfig is returned by New when Config is incomplete or
// inconsistent, and by Add, Informer, Owns and Watches for bad arguments.
// It is the same value as the ErrInvalidConfig of every other operatorkit
// package.
var ErrInvalidConfig = okerr.ErrInvalidConfig

// ErrLeaseLost is returned by Run when this replica lost the leader
// election Lease (another holder took it, or no renewal succeeded within
// RenewDeadline), or with Config.Sharding could not renew its member Lease
// within RenewDeadline, while its context was still running: it stopped
// reconciling at once, and the process should exit (a restart campaigns,
// or joins the ring, again). The writes of the Operator's clients (see
// RESTConfig) that a resource still makes after the loss fail with an
// error that matches it too.
var ErrLeaseLost = errors.New("lost the Lease")

// ErrAlreadyStarted is returned by Run and Plan when either was called
// before, and by Add, Informer, Owns and Watches after Run or Plan started.
var ErrAlreadyStarted = errors.New("operator already started")

// Config configures an Operator. Fields marked Required make New fail when
// they are empty; the others have documented defaults.
type Config struct {
	// RESTConfig reaches the API server: the shared informers, the child
	// watches, the leader election and the clients NewFramework fills in
	// use it. Options.RESTConfig loads one from the usual flags. Its QPS and
	// Burst are the client-side rate limit of each client built from it
	// (the dynamic, typed, metadata and apiextensions clients have one
	// limiter each, unless its RateLimiter is set): Options.RESTConfig sets
	// DefaultKubeAPIQPS and DefaultKubeAPIBurst (--kube-api-qps,
	// --kube-api-burst); a config with QPS 0 gets client-go's default of
	// 5 QPS and burst 10. Required.
	RESTConfig *rest.Config
	// Name names the operator process: the default Lease name, the
	// user agent of its clients, the "operator" log key. Required;
	// printable UTF-8.
	Name string
	// Logger receives the operator's logs. Defaults to a nop logger; a nil
	// pointer in it is an error. RedirectKlog sends client-go's logs to
	// the same logger.
	Logger log.Logger
	// Registry is served on /metrics. Defaults to a new registry with the
	// Go and process collectors; pass the registry the Frameworks register
	// on, so that their metrics are served too.
	Registry *prometheus.Registry
	// MetricsAddress is where /metrics, /healthz, /readyz and
	// /debug/reconciliations are served (host:port). Empty or "0": no
	// HTTP server.
	MetricsAddress string
	// HealthProbeAddress, when set and different from MetricsAddress,
	// serves /healthz and /readyz on a listener of its own (for kubelet
	// probes on a port apart from metrics).
	HealthProbeAddress string
	// Pprof serves net/http/pprof under /debug/pprof/ on the metrics
	// address. Off by default: profiles reveal a lot.
	Pprof bool
	// LeaderElection makes Run reconcile only while this replica holds the
	// Lease LeaderElectionNamespace/LeaderElectionID, so that replicas never
	// reconcile at the same time. Off by default (tests); Options turns it
	// on for binaries.
	LeaderElection bool
	// LeaderElectionID is the name of the Lease. Defaults to Name. With
	// LeaderElection or Sharding it (or Name, when it is empty) must be a
	// DNS-1123 subdomain, as a Lease's name.
	LeaderElectionID string
	// LeaderElectionNamespace is the namespace of the Lease. Defaults to
	// the pod's namespace, else "default". With LeaderElection or Sharding
	// it must be a namespace name (a DNS-1123 label).
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod are the leader election
	// timings. Default to DefaultLeaseDuration, DefaultRenewDeadline and
	// DefaultRetryPeriod; none may be negative. With LeaderElection or
	// Sharding, LeaseDuration must be 1 s to math.MaxInt32 s (a Lease
	// holds whole seconds in an int32; a member Lease of Sharding holds it
	// rounded up, so that it outlives RenewDeadline), RenewDeadline must be shorter than
	// LeaseDuration in whole seconds (client-go's leader election writes the
	// Lease's duration rounded down to the second, and another replica takes
	// over once that has passed: a leader still renewing until a longer
	// RenewDeadline would reconcile beside it), and RetryPeriod shorter than
	// RenewDeadline / 1.2 (leaderelection.JitterFactor).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ShutdownTimeout bounds how long Run waits, after its context ended,
	// for the reconciliations in flight. Defaults to
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// CacheSyncTimeout bounds how long Run (and Plan) waits for every
	// informer's first list, and for the discovery before it that checks
	// the scope of the informers given a Namespace: a resource the API server does not serve (its
	// CRD not installed) or that this identity may not list and watch never
	// syncs, and Run then returns an error naming the informer and its
	// last list error (a Forbidden, a NotFound: the reason) instead of
	// waiting for ever (the pod restarts, with the reason in its log).
	// Those errors are waited out, as RBAC granted or a CRD installed
	// meanwhile heals them; a list the API server refuses for good (400
	// BadRequest: a selector it does not support) ends the wait once the
	// retried list is refused too, about a second later, and a Namespace
	// given for a cluster-scoped resource ends it at once (the discovery
	// before the wait, or, when that one failed, the informer's own:
	// informer.Config.Namespace).
	// Defaults to DefaultCacheSyncTimeout.
	CacheSyncTimeout time.Duration
	// ResyncPeriod is the resync period of informers created by Informer
	// without one. Defaults to DefaultResyncPeriod; negative disables
	// resyncs; a positive one must be at least informer.MinResyncPeriod.
	ResyncPeriod time.Duration
	// Frameworks are run by Run, as if added with Add: none nil, none
	// twice, no two of one name.
	Frameworks []*framework.Framework
	// Sharding, when set, spreads the objects of Sharding.Resources over
	// the replicas: every replica reconciles its share at the same time,
	// and the leader election Lease (LeaderElectionNamespace/
	// LeaderElectionID, with the timings above) elects only the replica
	// that assigns the objects, whether LeaderElection is set or not. See
	// Sharding and docs/scaling.md. Off by default.
	Sharding *Sharding
}

// Operator runs one or more Frameworks in one process: shared informers,
// child watches, leader election, the HTTP endpoints. Create it with New,
// add Frameworks, informers and watches, then call Run once.
type Operator struct {
	config Config
	// restConfig is Config.RESTConfig with Config.Name as user agent
	// unless it has one, behind the fence: every client of the Operator's
	// is built from it, but the Leases' (leases) and the assigner's.
	restConfig *rest.Config
	logger     log.Logger
	registry   *prometheus.Registry
	dynamic    dynamic.Interface
	kube       kubernetes.Interface
	metadata   metadata.Interface
	leases     kubernetes.Interface
	fence      *fence

	mu         sync.Mutex
	started    bool
	frameworks []*framework.Framework
	informers  map[informerKey]*sharedInformer
	order      []*sharedInformer // in creation order, for Run
	writes     *OwnWrites
	recorders  []*deferredRecorder
	events     *eventSink // while Run runs
	srv        atomic.Pointer[server]
	shard      *sharder // nil without Config.Sharding
	// informing is set while Run runs the informers.
	informing atomic.Bool
}

// New validates config and returns an Operator that has started nothing:
// no goroutine runs and no request is made until Run. The error matches
// ErrInvalidConfig and names the field; a Logger that holds a nil pointer
// is an error too.
func New(config Config) (*Operator, error) {
	switch {
	case config.RESTConfig == nil:
		return nil, fmt.Errorf("%w: %T.RESTConfig must not be empty", ErrInvalidConfig, config)
	case config.Name == "":
		return nil, fmt.Errorf("%w: %T.Name must not be empty", ErrInvalidConfig, config)
	case !printable.String(config.Name):
		// The clients' user agent (a request with a control character in
		// a header is refused unsent) and a metric's label value.
		return nil, fmt.Errorf("%w: %T.Name %q must be printable UTF-8", ErrInvalidConfig, config, config.Name)
	case config.LeaseDuration < 0, config.RenewDeadline < 0, config.RetryPeriod < 0:
		return nil, fmt.Errorf("%w: %T.LeaseDuration, RenewDeadline and RetryPeriod must not be negative", ErrInvalidConfig, config)
	case config.ShutdownTimeout < 0:
		return nil, fmt.Errorf("%w: %T.ShutdownTimeout must not be negative", ErrInvalidConfig, config)
	case config.CacheSyncTimeout < 0:
		return nil, fmt.Errorf("%w: %T.CacheSyncTimeout must not be negative", ErrInvalidConfig, config)
	case config.ResyncPeriod > 0 && config.ResyncPeriod < informer.MinResyncPeriod:
		// Every informer's resync check would spin at that period.
		return nil, fmt.Errorf("%w: %T.ResyncPeriod %s must be at least %s (informer.MinResyncPeriod)", ErrInvalidConfig, config, config.ResyncPeriod, informer.MinResyncPeriod)
	case config.Logger != nil && nilptr.Is(config.Logger):
		// Its first log line would panic, in Run.
		return nil, fmt.Errorf("%w: %T.Logger is a nil %T", ErrInvalidConfig, config, config.Logger)
	}
	// config.Logger stays nil when none is given: NewFramework then gives
	// the Frameworks none either.
	logger := config.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	leaseID := "LeaderElectionID"
	if config.LeaderElectionID == "" {
		config.LeaderElectionID = config.Name
		leaseID = "Name (the default of LeaderElectionID)"
	}
	if config.LeaderElectionNamespace == "" {
		config.LeaderElectionNamespace = Options{}.LeaderElectionNamespaceOrDefault()
	}
	if config.LeaderElection || config.Sharding != nil {
		// The API server refuses a Lease of another name, and client-go's
		// leader election retries the refused create for ever.
		if errs := validation.IsDNS1123Subdomain(config.LeaderElectionID); len(errs) > 0 {
			return nil, fmt.Errorf("%w: %T.%s %q cannot name the leader election Lease: %s", ErrInvalidConfig, config, leaseID, config.LeaderElectionID, strings.Join(errs, "; "))
		}
		if errs := validation.IsDNS1123Label(config.LeaderElectionNamespace); len(errs) > 0 {
			return nil, fmt.Errorf("%w: %T.LeaderElectionNamespace %q is not a namespace: %s", ErrInvalidConfig, config, config.LeaderElectionNamespace, strings.Join(errs, "; "))
		}
	}
	if config.LeaseDuration == 0 {
		config.LeaseDuration = DefaultLeaseDuration
	}
	if config.RenewDeadline == 0 {
		config.RenewDeadline = DefaultRenewDeadline
	}
	if config.RetryPeriod == 0 {
		config.RetryPeriod = DefaultRetryPeriod
	}
	if (config.LeaderElection || config.Sharding != nil) && (config.LeaseDuration < time.Second || config.LeaseDuration > math.MaxInt32*time.Second) {
		// A Lease holds whole seconds, at least one, in an int32: the API
		// server would refuse every Lease, and the campaign go on for ever.
		return nil, fmt.Errorf("%w: %T.LeaseDuration (%s) must be 1s to %d s: a Lease holds it in whole seconds", ErrInvalidConfig, config, config.LeaseDuration, math.MaxInt32)
	}
	if (config.LeaderElection || config.Sharding != nil) && config.RenewDeadline >= config.LeaseDuration {
		return nil, fmt.Errorf("%w: %T.RenewDeadline (%s) must be shorter than LeaseDuration (%s)", ErrInvalidConfig, config, config.RenewDeadline, config.LeaseDuration)
	}
	if whole := config.LeaseDuration.Truncate(time.Second); (config.LeaderElection || config.Sharding != nil) && config.RenewDeadline >= whole {
		return nil, fmt.Errorf("%w: %T.RenewDeadline (%s) must be shorter than LeaseDuration in whole seconds (%s of %s): %s", ErrInvalidConfig, config, config.RenewDeadline, whole, config.LeaseDuration, leaseSecondsWhy)
	}
	if (config.LeaderElection || config.Sharding != nil) && !retryFitsRenew(config.RetryPeriod, config.RenewDeadline) {
		return nil, fmt.Errorf("%w: %T.RetryPeriod (%s) must be shorter than RenewDeadline (%s) / %.1f: a renewal retries within its deadline (client-go's leader election refuses less, and the sharding heartbeat would find its Lease lost on a healthy API server)",
			ErrInvalidConfig, config, config.RetryPeriod, config.RenewDeadline, leaderelection.JitterFactor)
	}
	if config.ShutdownTimeout == 0 {
		config.ShutdownTimeout = DefaultShutdownTimeout
	}
	if config.CacheSyncTimeout == 0 {
		config.CacheSyncTimeout = DefaultCacheSyncTimeout
	}
	if config.ResyncPeriod == 0 {
		config.ResyncPeriod = DefaultResyncPeriod
	}
	registry := config.Registry
	if registry == nil {
		registry = prometheus.NewRegistry()
		registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	lc := rest.CopyConfig(config.RESTConfig)
	if lc.UserAgent == "" {
		lc.UserAgent = config.Name
	}
	// The Leases are written outside the fence (fence.go): releasing or
	// deleting this replica's own Lease must work after the others' writes
	// are refused.
	leases, err := kubernetes.NewForConfig(lc)
	if err != nil {
		return nil, fmt.Errorf("%w: %T.RESTConfig: %v", ErrInvalidConfig, config, err)
	}
	fnc := newFence(config.Name, log.With(logger, "operator", config.Name))
	// Another Operator of the same name on this registry (replicas in one
	// test process) counts into the same counter.
	if fnc.refused, err = promutil.Register(registry, fnc.refused); err != nil {
		return nil, fmt.Errorf("%w: %T.Registry: %v", ErrInvalidConfig, config, err)
	}
	rc := rest.CopyConfig(lc)
	rc.Wrap(fnc.wrap)
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: %T.RESTConfig: %v", ErrInvalidConfig, config, err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: %T.RESTConfig: %v", ErrInvalidConfig, config, err)
	}
	md, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: %T.RESTConfig: %v", ErrInvalidConfig, config, err)
	}
	o := &Operator{
		config:     config,
		restConfig: rc,
		logger:     log.With(logger, "operator", config.Name),
		registry:   registry,
		dynamic:    dyn,
		kube:       kube,
		metadata:   md,
		leases:     leases,
		fence:      fnc,
		informers:  map[informerKey]*sharedInformer{},
	}
	if config.Sharding != nil {
		sh := *config.Sharding
		sh.Resources = slices.Clone(sh.Resources)
		if err := sh.validate(config); err != nil {
			return nil, err
		}
		// The assigner works under the leader election Lease, not the
		// member Lease the fence is closed for.
		arc := rest.CopyConfig(lc)
		// A burst past an int would turn negative and refuse every write.
		arc.QPS, arc.Burst, arc.RateLimiter = sh.AssignQPS, int(min(2*float64(sh.AssignQPS), math.MaxInt32)), nil
		assignMD, err := metadata.NewForConfig(arc)
		if err != nil {
			return nil, fmt.Errorf("%w: %T.RESTConfig: %v", ErrInvalidConfig, config, err)
		}
		o.shard = &sharder{
			assignMD:   assignMD,
			instance:   rand.String(10),
			cfg:        sh,
			shardLabel: sh.ShardLabel(),
			drainLabel: sh.DrainLabel(),
			namespace:  config.LeaderElectionNamespace,
			leaseName:  sh.Ring + "-" + sh.Identity,
			leaseDur:   config.LeaseDuration,
			renewDL:    config.RenewDeadline,
			retry:      config.RetryPeriod,
			kube:       leases,
			md:         md,
			logger:     log.With(o.logger, "ring", sh.Ring, "identity", sh.Identity),
			handing:    map[string]*handOff{},
		}
		o.shard.owned = o.ownedObjects
		if o.shard.metrics, err = newShardMetrics(registry, sh.Ring, o.ownedObjects); err != nil {
			return nil, fmt.Errorf("%w: %T.Registry: %v", ErrInvalidConfig, config, err)
		}
	}
	for i, f := range config.Frameworks {
		if f == nil {
			return nil, fmt.Errorf("%w: %T.Frameworks[%d] must not be nil", ErrInvalidConfig, config, i)
		}
		// Run would boot it twice, and fail.
		if j := slices.Index(config.Frameworks[:i], f); j >= 0 {
			return nil, fmt.Errorf("%w: %T.Frameworks[%d] and Frameworks[%d] are the same Framework %q", ErrInvalidConfig, config, j, i, frameworkName(f))
		}
		if j := slices.IndexFunc(config.Frameworks[:i], sameName(f)); j >= 0 {
			return nil, fmt.Errorf("%w: %T.Frameworks[%d] and Frameworks[%d] have the same name %q: %s", ErrInvalidConfig, config, j, i, frameworkName(f), sameNameWhy)
		}
		o.frameworks = append(o.frameworks, f)
	}
	return o, nil
}

// frameworkName returns the framework.Config.Name of f.
func frameworkName(f *framework.Framework) string {
	return strings.TrimPrefix(f.Finalizer(), framework.FinalizerPrefix)
}

// sameName returns a func that reports whether a Framework has f's name.
func sameName(f *framework.Framework) func(*framework.Framework) bool {
	name := frameworkName(f)
	return func(g *framework.Framework) bool { return frameworkName(g) == name }
}

// sameNameWhy says why one Operator's Frameworks need names of their own.
const sameNameWhy = "they would share one finalizer, one work queue's metrics, one controller label and the debug page; give each Framework a name of its own (framework.Config.Name)"

// Add adds a Framework for Run to boot. It is called before Run; after, it
// returns ErrAlreadyStarted. A Framework already added (by Add, NewFramework
// or Config.Frameworks) is ErrInvalidConfig: Run would boot it twice; so is
// a Framework of the name of one added already (framework.Config.Name),
// which would share its finalizer, metrics and debug page.
func (o *Operator) Add(f *framework.Framework) error {
	if f == nil {
		return fmt.Errorf("%w: Add: framework must not be nil", ErrInvalidConfig)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started {
		return ErrAlreadyStarted
	}
	if slices.Contains(o.frameworks, f) {
		return fmt.Errorf("%w: Add: Framework %q was added already (by Add, NewFramework or Config.Frameworks)", ErrInvalidConfig, frameworkName(f))
	}
	if slices.ContainsFunc(o.frameworks, sameName(f)) {
		return fmt.Errorf("%w: Add: a Framework named %q was added already: %s", ErrInvalidConfig, frameworkName(f), sameNameWhy)
	}
	o.frameworks = append(o.frameworks, f)
	return nil
}

// Registry returns the registry served on /metrics: register the
// Frameworks', informers' and resources' metrics on it.
func (o *Operator) Registry() *prometheus.Registry { return o.registry }

// Dynamic returns a dynamic client built from RESTConfig: its writes are
// refused once this replica lost its Lease (see RESTConfig).
func (o *Operator) Dynamic() dynamic.Interface { return o.dynamic }

// Kubernetes returns a typed clientset built from RESTConfig: its writes
// are refused once this replica lost its Lease (see RESTConfig).
func (o *Operator) Kubernetes() kubernetes.Interface { return o.kube }

// Metadata returns a metadata-only client (client-go's metadata package)
// built from RESTConfig: the API server answers its requests with objects'
// metadata only. NewFramework gives it to the Framework for its finalizer
// patches. Its writes are refused once this replica lost its Lease.
func (o *Operator) Metadata() metadata.Interface { return o.metadata }

// RESTConfig returns a copy of the configuration the Operator's clients
// are built from: Config.RESTConfig, with Config.Name as user agent unless
// it has one, and a transport that refuses writes once this replica lost
// its Lease. Build every other client the resources write with from it (a
// generated clientset, a client of another library): from the moment the
// leader election Lease, or with Sharding the member Lease, is lost, its
// POST, PUT, PATCH and DELETE requests fail unsent with an error matching
// ErrLeaseLost, so that a resource that ignores the end of its context
// cannot write beside the replica that took over; reads go on. Without
// leader election and sharding no Lease is held and nothing is refused.
func (o *Operator) RESTConfig() *rest.Config { return rest.CopyConfig(o.restConfig) }

// MetricsURL returns the base URL of the metrics endpoint ("http://host:port")
// once Run has opened it, and "" before or when it is off. With port 0 in
// Config.MetricsAddress it tells which port was picked.
func (o *Operator) MetricsURL() string {
	if s := o.srv.Load(); s != nil {
		return s.metricsURL()
	}
	return ""
}

// Run runs the operator until ctx ends:
//
//  1. it opens the HTTP endpoints (a busy address fails Run at once),
//  2. ensures the Frameworks' CRDs (framework.Config.CRD: their informers
//     could not sync without them; with framework.Config.MigrateStorage,
//     migrates their stored objects to the storage version: a migration
//     that fails is logged, and Run goes on), starts
//     every shared informer and waits for their caches (at most
//     CacheSyncTimeout),
//  3. with leader election, campaigns for the Lease and waits to lead;
//     with Config.Sharding instead, joins the ring (its member Lease) and
//     campaigns for the Lease only to assign the objects (see Sharding),
//  4. boots every Framework (their workers start).
//
// When ctx ends it shuts down in order: the Frameworks stop taking work and
// their reconciliations in flight finish (bounded by ShutdownTimeout), the
// Lease is released (only then, so that no other replica starts while this
// one may still write), the informers stop, the HTTP server stops. It
// returns nil after a clean stop and leaves no goroutine behind.
//
// With Config.Sharding, the member Lease is deleted last, after the last
// reconciliation ended, so that the other replicas take this one's objects
// at once. After a lost Lease, Run returns once the reconciliations in
// flight returned or ShutdownTimeout passed, whichever comes first, with
// or without leader election: one still running then can write nothing
// through the Operator's clients (RESTConfig).
//
// It returns the first fatal error otherwise: a Framework that fails to
// boot (the others are stopped; if they exceed ShutdownTimeout, the error
// joins the Boot error and the timeout's), a cache that does not sync within
// CacheSyncTimeout (matching informer.ErrNotSynced; the error names the
// informer's last list error, a Forbidden or a NotFound, which the wait
// does not end on: RBAC granted or a CRD installed meanwhile heals them),
// a cache whose list the API server refuses for good, once its retry,
// about a second later, is refused too, without waiting CacheSyncTimeout (matching informer.ErrNotSynced and wrapping
// the server's 400 BadRequest, for a field or label selector it does not
// support, or 405 MethodNotAllowed, for a resource that cannot be listed:
// see informer.Informer.WaitForCacheSync), an informer given a Namespace
// (informer.Config) for a resource the API server's discovery shows
// cluster-scoped, before any informer starts (ErrInvalidConfig: its list
// would be answered NotFound until CacheSyncTimeout), ErrLeaseLost
// when the Lease (or the member Lease) is lost (reconciling stops at
// once, and the writes of the Operator's clients are refused from then
// on: RESTConfig), or a shutdown that exceeded ShutdownTimeout (Run
// returns then, but the Lease, or with Sharding the member Lease, is
// renewed until the last reconciliation ends and only then released, by
// goroutines of Run's that end with it: a process that exits at once
// leaves the Lease to expire; after a lost Lease the error matches
// ErrLeaseLost as well), or the HTTP server's
// error when it stops serving while Run runs (the operator then shuts down
// in order, as when ctx ends). Run is called once.
func (o *Operator) Run(ctx context.Context) (err error) {
	o.mu.Lock()
	if o.started {
		o.mu.Unlock()
		return ErrAlreadyStarted
	}
	o.started = true
	frameworks := append([]*framework.Framework(nil), o.frameworks...)
	informers := append([]*sharedInformer(nil), o.order...)
	o.mu.Unlock()
	if len(frameworks) == 0 {
		return fmt.Errorf("%w: no Framework to run: add one with Add or Config.Frameworks", ErrInvalidConfig)
	}

	var elector *leaderelection.LeaderElector
	var watchdog *leaderelection.HealthzAdaptor
	identity := ""
	if o.config.LeaderElection {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(o.config.RenewDeadline)
		host, _ := os.Hostname()
		identity = host + "_" + rand.String(10)
	}
	// An HTTP server that stops serving stops the operator, as ctx would,
	// and its error is Run's (a replica without probes or metrics is not
	// one to keep running).
	parent := ctx
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	var st state
	// Not ready from the moment the shutdown begins (runFrameworks names
	// the other causes: a lost Lease, a Framework that failed to boot).
	defer context.AfterFunc(ctx, func() { st.stop(reasonContextEnded) })()
	srv, err := listen(serverConfig{
		metricsAddress: o.config.MetricsAddress,
		probeAddress:   o.config.HealthProbeAddress,
		metricsField:   "Config.MetricsAddress",
		probeField:     "Config.HealthProbeAddress",
		gatherer:       o.registry,
		healthz:        o.healthChecks(watchdog),
		readyz:         o.readyChecks(&st, informers),
		debug:          framework.NewDebugHandler(frameworks...),
		pprof:          o.config.Pprof,
	})
	if err != nil {
		return err
	}
	o.srv.Store(srv)
	srvCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	srvDone := make(chan error, 1)
	go func() {
		err := srv.serve(srvCtx)
		if err != nil && srvCtx.Err() == nil {
			err = fmt.Errorf("operator %s: HTTP server stopped: %w", o.config.Name, err)
			level.Error(o.logger).Log("msg", "HTTP server stopped: stopping the operator", "err", err)
			stopRun(err)
		}
		srvDone <- err
	}()
	defer func() {
		stopServer()
		serr := <-srvDone
		switch {
		case serr == nil:
		case err == nil && parent.Err() == nil && errors.Is(context.Cause(ctx), serr):
			err = serr
		default:
			level.Warn(o.logger).Log("msg", "HTTP server stopped with error", "err", serr)
		}
	}()
	level.Info(o.logger).Log("msg", "starting", "metrics", srv.metricsURL(), "probes", srv.probeURL(), "frameworks", len(frameworks), "informers", len(informers), "leaderElection", o.config.LeaderElection)

	// The Frameworks' CRDs first (framework.Config.CRD): their informers
	// could not sync without them.
	for _, f := range frameworks {
		if err := f.EnsureCRD(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("operator %s: %w", o.config.Name, err)
		}
	}

	// A Namespace for a cluster-scoped resource: its cache would never
	// sync. The discovery that tells is part of the wait CacheSyncTimeout
	// bounds: an API server that does not answer fails Run then.
	syncCtx, stopSync := o.cacheSyncContext(ctx)
	defer stopSync()
	if err := o.checkScopes(syncCtx, informers); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("operator %s: %w", o.config.Name, err)
	}

	// Informers run until Run returns: started before leading, so that a
	// replica that takes over has warm caches.
	infCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	var infWG sync.WaitGroup
	o.informing.Store(true)
	defer func() { stopInformers(); infWG.Wait(); o.informing.Store(false) }()
	for _, si := range informers {
		infWG.Go(func() {
			if err := si.inf.Run(infCtx); err != nil {
				level.Error(o.logger).Log("msg", "informer stopped with error", "informer", si.key, "err", err)
			}
		})
	}
	if err := waitForCaches(syncCtx, cacheWaits(informers)); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("operator %s: %w", o.config.Name, err)
	}
	stopSync()
	st.cachesSynced.Store(true)
	stopEvents := o.startEvents(infCtx)
	defer stopEvents() // after the Frameworks stopped, before the informers

	if o.shard != nil {
		return o.runSharded(ctx, frameworks, informers, &st)
	}
	if !o.config.LeaderElection {
		err, _ := o.runFrameworks(ctx, frameworks, nil, "", &st)
		return err
	}

	// The elector's context ends only after the Frameworks have stopped, so
	// that the Lease is released after the last write.
	leCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	keepLease := false // Run returned past ShutdownTimeout: the elector goes on
	defer func() {
		if !keepLease {
			stopElector()
		}
	}()
	// Whether this replica leads is decided once, under termMu: either the
	// elector's OnStartedLeading comes first, and the Frameworks run (Run
	// waits for them), or ctx ends, or the elector returns, first, and they
	// never boot. The elector calls OnStartedLeading in a goroutine of its
	// own, which can come after ctx ended, after the elector stopped
	// campaigning for it, and even after elector.Run returned.
	var termMu sync.Mutex
	led, over := false, false
	stopWaiting := context.AfterFunc(ctx, func() {
		termMu.Lock()
		defer termMu.Unlock()
		if !led {
			over = true
			stopElector() // never led: nothing to wait for
		}
	})
	defer stopWaiting()
	type stopped struct {
		err      error
		finished <-chan struct{}
	}
	result := make(chan stopped, 1)
	logger := log.With(o.logger, "lease", o.config.LeaderElectionNamespace+"/"+o.config.LeaderElectionID, "identity", identity)
	lock := &renewedLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: o.config.LeaderElectionID, Namespace: o.config.LeaderElectionNamespace},
		Client:     o.leases.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}}
	lease := "the leader election Lease " + o.config.LeaderElectionNamespace + "/" + o.config.LeaderElectionID
	elector, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.config.LeaseDuration,
		RenewDeadline:   o.config.RenewDeadline,
		RetryPeriod:     o.config.RetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        watchdog,
		Name:            o.config.LeaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				termMu.Lock()
				if over || ctx.Err() != nil {
					over = true
					termMu.Unlock()
					stopElector() // releases the Lease: nothing ran
					level.Info(logger).Log("msg", "acquired the Lease while stopping: not starting the operator")
					return
				}
				led = true
				st.leading.Store(true)
				termMu.Unlock()
				level.Info(logger).Log("msg", "leading: starting the operator")
				// lost ends when the Lease is lost (or leCtx ends, which
				// happens only after the Frameworks stopped). The elector
				// ends leading only after it also tried to release the
				// Lease, which an API server that does not answer holds up
				// for RenewDeadline more: past LeaseDuration, when another
				// replica may lead. So the Lease counts as lost as soon as
				// no renewal succeeded for RenewDeadline, and the elector
				// stops then, after the fence closed.
				lost, loseLease := context.WithCancel(leading)
				defer loseLease()
				defer lock.watch(o.config.RenewDeadline, func() {
					level.Error(logger).Log("msg", "Lease not renewed within RenewDeadline: stopping")
					o.fence.close(errFenced(o.config.Name, lease))
					loseLease()
					stopElector()
				})()
				err, finished := o.runFrameworks(ctx, frameworks, lost, lease, &st)
				result <- stopped{err, finished}
				// Keep the Lease until the last reconciliation ended, even
				// past ShutdownTimeout (Run has returned then).
				<-finished
				stopElector()
			},
			OnStoppedLeading: func() { level.Info(logger).Log("msg", "not leading") },
			OnNewLeader: func(id string) {
				if id != identity {
					level.Info(logger).Log("msg", "another replica leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("%w: leader election: %v", ErrInvalidConfig, err)
	}
	st.electing.Store(true)
	level.Info(logger).Log("msg", "waiting to lead")
	elected := make(chan struct{})
	go func() { defer close(elected); elector.Run(leCtx) }()
	var r stopped
	select {
	case <-elected:
		termMu.Lock()
		over = true
		leads := led
		termMu.Unlock()
		if !leads {
			return nil // ctx ended before this replica led
		}
		r = <-result
	case r = <-result:
		select {
		case <-r.finished:
			<-elected // stopped by OnStartedLeading: the Lease is released
		default:
			// Past ShutdownTimeout: the elector goes on renewing the Lease
			// until the last reconciliation ended, and then releases it
			// (OnStartedLeading stops it); Run returns now.
			keepLease = true
			if !errors.Is(r.err, ErrLeaseLost) {
				level.Warn(logger).Log("msg", "holding the Lease until the reconciliations still running end", "err", r.err)
			}
		}
	}
	return r.err
}

// cacheSyncContext returns the context that Run and Plan wait for the
// informers' first lists with: it ends after CacheSyncTimeout, with a cause
// that names it (the informer's error adds its last list error: the reason).
func (o *Operator) cacheSyncContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, o.config.CacheSyncTimeout,
		fmt.Errorf("not synced within CacheSyncTimeout (%s)", o.config.CacheSyncTimeout))
}

// cacheWait is a cache that Run or Plan waits for: what an error calls it,
// and its WaitForCacheSync.
type cacheWait struct {
	name string
	wait func(context.Context) error
}

// cacheWaits are the waits for the caches of informers.
func cacheWaits(informers []*sharedInformer) []cacheWait {
	waits := make([]cacheWait, 0, len(informers))
	for _, si := range informers {
		waits = append(waits, cacheWait{name: si.key.String(), wait: si.inf.WaitForCacheSync})
	}
	return waits
}

// errOtherCacheFailed ends the waits of waitForCaches once one cache failed.
var errOtherCacheFailed = errors.New("another cache failed to sync")

// waitForCaches waits for the caches of waits, all at once, until ctx
// ends: one that fails before (an informer whose list the API server
// refuses for good: informer.Informer.WaitForCacheSync) ends the wait at
// once, whatever the others do. The error, naming the cache, is of the
// first in waits' order that failed by itself; else (ctx ended) it joins
// the errors of every cache that did not sync, each naming its cache and
// its last list error, so that the one with the cause (a Forbidden list)
// is named even behind one that has seen no error yet.
func waitForCaches(ctx context.Context, waits []cacheWait) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type failure struct {
		err error
		own bool // failed by itself, not for the end of ctx
	}
	failures := make([]failure, len(waits))
	var wg sync.WaitGroup
	for n, w := range waits {
		wg.Go(func() {
			if err := w.wait(ctx); err != nil {
				ended := ctx.Err() != nil && (errors.Is(err, context.Cause(ctx)) || errors.Is(err, ctx.Err()))
				failures[n] = failure{err: err, own: !ended}
				cancel(errOtherCacheFailed)
			}
		})
	}
	wg.Wait()
	var unsynced []error
	for n, f := range failures {
		switch {
		case f.own:
			return fmt.Errorf("cache of %s: %w", waits[n].name, f.err)
		case f.err != nil:
			unsynced = append(unsynced, fmt.Errorf("cache of %s: %w", waits[n].name, f.err))
		}
	}
	return errors.Join(unsynced...)
}

// runFrameworks boots every Framework and runs them until ctx ends (a clean
// stop: nil), lost ends (the Lease named lease was lost: ErrLeaseLost), or
// one of them fails to boot (its error; the others are stopped, and past
// ShutdownTimeout the error joins it and the timeout's). lost may
// be nil. It waits up to ShutdownTimeout for them to stop; finished is
// closed when they all have, which may be later: until then, a loss of the
// Lease still closes the write fence and aborts them. It records in st
// (which may be nil) why they stop, once they do: /readyz fails from then on.
func (o *Operator) runFrameworks(ctx context.Context, frameworks []*framework.Framework, lost context.Context, lease string, st *state) (err error, finished <-chan struct{}) {
	fctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	stopOnCtx := context.AfterFunc(ctx, stop)
	defer stopOnCtx()
	stopOnLost := func() bool { return false }
	if lost != nil {
		// Another replica may take over soon: the reconciliations in
		// flight stop too, not only the intake. Armed until the last of
		// them ended (finished), also when that is after ShutdownTimeout.
		stopOnLost = context.AfterFunc(lost, func() {
			o.fence.close(errFenced(o.config.Name, lease))
			stop()
			for _, f := range frameworks {
				f.Abort()
			}
		})
	}
	errs := make(chan error, len(frameworks))
	var wg sync.WaitGroup
	for _, f := range frameworks {
		wg.Go(func() {
			err := f.Boot(fctx)
			errs <- err // first, for the ShutdownTimeout path below to find it
			if err != nil {
				stop() // one fails: stop them all
			}
		})
	}
	// fin closes when every Framework stopped, once the Lease's loss
	// closes nothing any more.
	fin := make(chan struct{})
	go func() { wg.Wait(); stopOnLost(); close(fin) }()
	<-fctx.Done()
	switch {
	case lost != nil && lost.Err() != nil:
		st.stop(fmt.Sprintf("%v: %s", ErrLeaseLost, lease))
	case ctx.Err() != nil:
		st.stop(reasonContextEnded)
	default:
		st.stop("a Framework failed to boot")
	}
	level.Info(o.logger).Log("msg", "stopping the frameworks: waiting for reconciliations in flight", "timeout", o.config.ShutdownTimeout)
	timer := time.NewTimer(o.config.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-fin:
	case <-timer.C:
		err := fmt.Errorf("operator %s: reconciliations still running after ShutdownTimeout (%s)", o.config.Name, o.config.ShutdownTimeout)
		if lost != nil && lost.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("operator %s: %w: %s; reconciliations still running after ShutdownTimeout (%s), their writes refused", o.config.Name, ErrLeaseLost, lease, o.config.ShutdownTimeout)
		}
		// A Framework that failed to boot stopped the others (it sent its
		// error before): that cause comes first.
		var bootErrs []error
		for len(errs) > 0 {
			if err := <-errs; err != nil {
				bootErrs = append(bootErrs, err)
			}
		}
		if len(bootErrs) > 0 {
			err = errors.Join(append(bootErrs, err)...)
		}
		return err, fin
	}
	close(errs)
	for err := range errs {
		if err != nil {
			return err, fin
		}
	}
	if lost != nil && lost.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("operator %s: %w: %s; stopped reconciling", o.config.Name, ErrLeaseLost, lease), fin
	}
	level.Info(o.logger).Log("msg", "frameworks stopped")
	return nil, fin
}

// renewedLock is the leader election Lease's lock, noting when this
// replica last wrote the Lease as its holder (acquired or renewed it).
type renewedLock struct {
	resourcelock.Interface
	renewed atomic.Pointer[time.Time] // start of the last such write
}

// Create creates the Lease, noting the time when it succeeds.
func (l *renewedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.note(ler, func() error { return l.Interface.Create(ctx, ler) })
}

// Update updates the Lease, noting the time when it succeeds and this
// replica holds it (not when it releases it).
func (l *renewedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.note(ler, func() error { return l.Interface.Update(ctx, ler) })
}

// note runs write and notes the time it started when it succeeded with
// this replica as the holder: the other replicas count the Lease from a
// later time (when they see it), never an earlier one.
func (l *renewedLock) note(ler resourcelock.LeaderElectionRecord, write func() error) error {
	start := time.Now()
	err := write()
	if err == nil && ler.HolderIdentity == l.Identity() {
		l.renewed.Store(&start)
	}
	return err
}

// watch calls lost, once, when deadline passed since the start of the last
// write that renewed the Lease, until the returned stop is called.
func (l *renewedLock) watch(deadline time.Duration, lost func()) (stop func()) {
	begun := time.Now() // counts as the last renewal while there was none
	left := func() time.Duration {
		last := begun
		if r := l.renewed.Load(); r != nil {
			last = *r
		}
		return time.Until(last.Add(deadline))
	}
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if d := left(); d > 0 {
			t.Reset(d)
			return
		}
		stopped = true
		lost()
	}
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(left(), check)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// state is what the probes read while Run runs.
type state struct {
	cachesSynced atomic.Bool
	electing     atomic.Bool
	leading      atomic.Bool
	// stopping is why Run's shutdown began, nil until it did.
	stopping atomic.Pointer[string]
}

// reasonContextEnded is the shutdown's reason when Run's context ended.
const reasonContextEnded = "the context of Run ended"

// stop records that Run's shutdown began, and why; only the first reason
// counts. A nil st (runFrameworks without Run) records nothing.
func (st *state) stop(reason string) {
	if st != nil {
		st.stopping.CompareAndSwap(nil, &reason)
	}
}

func (o *Operator) healthChecks(watchdog *leaderelection.HealthzAdaptor) []check {
	checks := []check{{name: "ping", fn: func(*http.Request) error { return nil }}}
	if watchdog != nil {
		// Fails when this replica leads but has not renewed its Lease for
		// longer than its renew deadline plus a grace period: it is stuck.
		checks = append(checks, check{name: "leader-election", fn: watchdog.Check})
	}
	return checks
}

func (o *Operator) readyChecks(st *state, informers []*sharedInformer) []check {
	checks := []check{{name: "shutdown", fn: func(*http.Request) error {
		if reason := st.stopping.Load(); reason != nil {
			return fmt.Errorf("stopping: %s", *reason)
		}
		return nil
	}}, {name: "caches", fn: func(*http.Request) error {
		if st.cachesSynced.Load() {
			return nil
		}
		for _, si := range informers {
			if !si.inf.HasSynced() {
				return fmt.Errorf("cache of %s not synced", si.key)
			}
		}
		return errors.New("caches not synced yet")
	}}}
	if o.shard != nil {
		checks = append(checks, check{name: "shard-membership", fn: o.shard.readyCheck})
	}
	if o.config.LeaderElection && o.shard == nil {
		checks = append(checks, check{name: "leader-election", fn: func(*http.Request) error {
			if st.leading.Load() || st.electing.Load() {
				return nil // leading, or ready to lead
			}
			return errors.New("not campaigning for the Lease yet")
		}})
	}
	return checks
}

// Config returns the Config of an operator named name from the options: the
// metrics and probe addresses, the leader election settings and timings,
// and with Shard a Sharding of ShardIdentity, with restConfig and logger
// (from RESTConfig and NewLogger). Set the other fields (Registry,
// ShutdownTimeout, CacheSyncTimeout, ...) on the result before New, and with
// Shard the Sharding's Resources, which New requires.
func (o Options) Config(name string, restConfig *rest.Config, logger log.Logger) Config {
	var sharding *Sharding
	if o.Shard {
		sharding = &Sharding{Identity: o.ShardIdentity}
	}
	return Config{
		Sharding:                sharding,
		RESTConfig:              restConfig,
		Name:                    name,
		Logger:                  logger,
		MetricsAddress:          o.MetricsBindAddress,
		HealthProbeAddress:      o.HealthProbeBindAddress,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		LeaseDuration:           o.LeaseDuration,
		RenewDeadline:           o.RenewDeadline,
		RetryPeriod:             o.RetryPeriod,
	}
}
