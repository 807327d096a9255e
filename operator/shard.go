package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
)

// Label keys of sharding. The shard and drain labels are
// ShardLabelPrefix+ring and DrainLabelPrefix+ring on the sharded objects;
// RingLabel names the ring on each replica's member Lease.
const (
	ShardLabelPrefix = "shard.operatorkit.io/"
	DrainLabelPrefix = "drain.shard.operatorkit.io/"
	RingLabel        = "shard.operatorkit.io/ring"
)

// Defaults of Sharding.
const (
	// DefaultShardAssignWorkers is how many objects the assigner labels at
	// the same time when Sharding.AssignWorkers is zero.
	DefaultShardAssignWorkers = 16
	// DefaultShardAssignQPS is the client-side rate limit of the
	// assigner's writes when Sharding.AssignQPS is zero, with bursts of
	// twice as many: a burst of new objects is labelled at this rate.
	DefaultShardAssignQPS = 200
)

// InstanceAnnotation, on a member Lease, holds a random token of the
// process that holds it: a second process with the same Sharding.Identity
// finds the Lease held by another instance and does not join, and a
// replica that stops deletes the Lease only while it carries its own token.
const InstanceAnnotation = "shard.operatorkit.io/instance"

// OwnedObjectsAnnotation, on a member Lease, holds the number of objects
// in the replica's sharded informers (its share) at its last renewal: the
// assigner reports it as operatorkit_shard_objects without caching the
// assigned objects itself.
const OwnedObjectsAnnotation = "shard.operatorkit.io/objects"

// Sharding spreads the objects of an operator over its replicas
// (Config.Sharding): every replica reconciles, each only its share, and no
// object is reconciled by two replicas at once. See docs/scaling.md.
//
// How it works: each replica holds a member Lease (labelled RingLabel=Ring,
// in Config.LeaderElectionNamespace) and renews it every RetryPeriod. The
// replica that holds the leader election Lease runs the assigner: it maps
// each object (its "namespace/name", or its namespace with ByNamespace)
// onto the live members with a consistent hash ring, and writes the owner's
// identity into the object's shard label. Each replica's informers of the
// Resources select shard label = its identity, so its cache and its events
// hold only its share.
//
// An object moves only with its owner's consent: the assigner sets the
// drain label; the owner stops reconciling the object
// (framework.Framework.Release: the reconciliation in flight ends first) and
// then removes both labels; only then does the assigner label it for the new
// owner. An owner whose
// member Lease expired has stopped reconciling (a replica that cannot renew
// its Lease within RenewDeadline stops, Run returns ErrLeaseLost), so its
// objects are relabelled at once, once a read of the Lease from the API
// server confirmed that it was not renewed since the assigner's watch last
// told (a watch that lags must not make a live member look dead); the
// assigner then deletes that Lease, which no replica would delete. A replica that stops cleanly deletes its
// member Lease after its last reconciliation, so that its objects move
// without waiting for the Lease to expire.
type Sharding struct {
	// Resources are the resources whose objects are sharded: those of the
	// Frameworks' informers. Informer adds the shard label selector to each
	// informer of one of them (and the assigner labels the objects that
	// informer's namespace and selectors would show). Required.
	Resources []schema.GroupVersionResource
	// Children are the resources of the child objects of the Resources'
	// objects (those of Owns, written by child resources): Informer adds
	// the shard label selector to their informers too, so that each
	// replica caches only the children of its own objects. The assigner
	// does not label them: each child resource copies its owner's shard
	// label onto the children it writes (child.Config.OwnerLabels:
	// Operator.ShardLabels()), and when an object moves, its new owner's
	// first reconciliation relabels its children, which then leave the
	// old owner's cache. A child that no reconciliation writes after a
	// move (one the object's new desired state no longer names) stays with
	// the old label: no replica sees it, and it goes with its owner
	// (through its owner reference, by the cluster's garbage collector).
	// Children written by resources of your own must carry the label
	// themselves. Optional; none of them may be in Resources.
	Children []schema.GroupVersionResource
	// Ring names the replicas sharing the objects, in the label keys
	// (ShardLabelPrefix+Ring): a qualified name's name part (at most 63
	// characters). Defaults to Config.Name.
	Ring string
	// Identity names this replica: the value of the shard label on its
	// objects and the holder of its member Lease, named Ring+"-"+Identity.
	// A DNS label (lowercase letters, digits and '-', at most 63
	// characters), unique among the replicas. Defaults to the host name
	// (the pod name) cut to 50 characters with a random suffix.
	Identity string
	// ByNamespace assigns whole namespaces instead of single objects: all
	// objects of a namespace go to one replica.
	ByNamespace bool
	// VirtualNodes is the number of points of each replica on the hash
	// ring. Defaults to DefaultVirtualNodes; at most MaxVirtualNodes.
	VirtualNodes int
	// AssignWorkers is how many objects the assigner labels at the same
	// time. Defaults to DefaultShardAssignWorkers; at most
	// framework.MaxWorkers.
	AssignWorkers int
	// AssignQPS is the client-side rate limit of the assigner's label
	// writes, on a metadata client of its own (bursts of twice as many, at
	// most math.MaxInt32). Defaults to DefaultShardAssignQPS or
	// Config.RESTConfig.QPS, whichever is larger; must not be negative.
	AssignQPS float32
}

var dnsLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// defaultIdentity is the host name made a DNS label, cut to 50
// characters, with a random suffix.
func defaultIdentity() string {
	host, _ := os.Hostname()
	host = strings.Trim(dnsLabel.ReplaceAllString(strings.ToLower(host), "-"), "-")
	if len(host) > 50 {
		host = strings.Trim(host[:50], "-")
	}
	if host == "" {
		host = "replica"
	}
	return host + "-" + rand.String(5)
}

// validate completes s's defaults from config and checks it.
func (s *Sharding) validate(config Config) error {
	if len(s.Resources) == 0 {
		return fmt.Errorf("%w: %T.Sharding.Resources must not be empty", ErrInvalidConfig, config)
	}
	for i, r := range s.Resources {
		if r.Resource == "" || r.Version == "" {
			return fmt.Errorf("%w: %T.Sharding.Resources[%d] %q needs a version and a resource", ErrInvalidConfig, config, i, r)
		}
	}
	for i, r := range s.Children {
		switch {
		case r.Resource == "" || r.Version == "":
			return fmt.Errorf("%w: %T.Sharding.Children[%d] %q needs a version and a resource", ErrInvalidConfig, config, i, r)
		case slices.Contains(s.Resources, r):
			return fmt.Errorf("%w: %T.Sharding.Children[%d] %q is in Sharding.Resources too: an object is either assigned or follows its owner", ErrInvalidConfig, config, i, r)
		}
	}
	if s.Ring == "" {
		s.Ring = config.Name
	}
	if errs := validation.IsQualifiedName(ShardLabelPrefix + s.Ring); len(errs) > 0 {
		return fmt.Errorf("%w: %T.Sharding.Ring %q cannot name a label: %s", ErrInvalidConfig, config, s.Ring, strings.Join(errs, "; "))
	}
	if s.Identity == "" {
		s.Identity = defaultIdentity()
	}
	if errs := validation.IsDNS1123Label(s.Identity); len(errs) > 0 {
		return fmt.Errorf("%w: %T.Sharding.Identity %q: %s", ErrInvalidConfig, config, s.Identity, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(s.Ring + "-" + s.Identity); len(errs) > 0 {
		return fmt.Errorf("%w: %T.Sharding Ring and Identity cannot name a Lease %q: %s", ErrInvalidConfig, config, s.Ring+"-"+s.Identity, strings.Join(errs, "; "))
	}
	switch {
	case s.VirtualNodes < 0 || s.VirtualNodes > MaxVirtualNodes:
		// Too many would make the assigner's ring panic or fill the memory.
		return fmt.Errorf("%w: %T.Sharding.VirtualNodes must be 0 (DefaultVirtualNodes) to %d (MaxVirtualNodes), got %d", ErrInvalidConfig, config, MaxVirtualNodes, s.VirtualNodes)
	case s.VirtualNodes == 0:
		s.VirtualNodes = DefaultVirtualNodes
	}
	switch {
	case s.AssignWorkers < 0 || s.AssignWorkers > framework.MaxWorkers:
		return fmt.Errorf("%w: %T.Sharding.AssignWorkers must be 0 (DefaultShardAssignWorkers) to %d (framework.MaxWorkers), got %d", ErrInvalidConfig, config, framework.MaxWorkers, s.AssignWorkers)
	case s.AssignWorkers == 0:
		s.AssignWorkers = DefaultShardAssignWorkers
	}
	switch {
	case s.AssignQPS < 0 || s.AssignQPS != s.AssignQPS:
		return fmt.Errorf("%w: %T.Sharding.AssignQPS must be positive", ErrInvalidConfig, config)
	case s.AssignQPS == 0:
		s.AssignQPS = DefaultShardAssignQPS
		if config.RESTConfig != nil {
			s.AssignQPS = max(s.AssignQPS, config.RESTConfig.QPS)
		}
	}
	return nil
}

func (s *Sharding) shards(gvr schema.GroupVersionResource) bool {
	return slices.Contains(s.Resources, gvr)
}

// ShardLabel returns the key of the label that names an object's owner,
// ShardLabelPrefix+Ring. Ring must be set: New defaults it to Config.Name
// on its own copy, not on the caller's Sharding.
func (s *Sharding) ShardLabel() string { return ShardLabelPrefix + s.Ring }

// DrainLabel returns the key of the label that asks an object's owner to
// hand it over, DrainLabelPrefix+Ring. Ring must be set, as for ShardLabel.
func (s *Sharding) DrainLabel() string { return DrainLabelPrefix + s.Ring }

// shardMetrics are the sharding metrics, registered by New.
type shardMetrics struct {
	members  prometheus.Gauge
	objects  *prometheus.GaugeVec
	moves    prometheus.Counter
	handover prometheus.Histogram
	owned    prometheus.GaugeFunc
}

func newShardMetrics(reg prometheus.Registerer, ring string, owned func() float64) (*shardMetrics, error) {
	labels := prometheus.Labels{"ring": ring}
	m := &shardMetrics{
		members: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "operatorkit_shard_members", ConstLabels: labels,
			Help: "Live replicas of the ring, as the assigner (the leader) sees them; 0 on the other replicas.",
		}),
		objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "operatorkit_shard_objects", ConstLabels: labels,
			Help: "Sharded objects per owner as each live replica reported it on its member Lease at its last renewal, and (shard=\"\") objects not assigned yet; set by the assigner (the leader).",
		}, []string{"shard"}),
		moves: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "operatorkit_shard_moves_total", ConstLabels: labels,
			Help: "Objects the assigner moved from one replica to another (after a drain, or from a replica whose Lease expired).",
		}),
		handover: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "operatorkit_shard_handover_duration_seconds", ConstLabels: labels,
			Help:    "Time from the assigner asking an owner to drain an object to the object being assigned to its new owner.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		owned: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "operatorkit_shard_owned_objects", ConstLabels: labels,
			Help: "Objects in this replica's sharded informers: its share.",
		}, owned),
	}
	for _, c := range []prometheus.Collector{m.members, m.objects, m.moves, m.handover, m.owned} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register sharding metrics: %w", err)
		}
	}
	return m, nil
}

// sharder is a replica's part in sharding: its member Lease, the hand-over
// of the objects it is asked to drain, and, while it leads, the assigner.
type sharder struct {
	cfg        Sharding
	shardLabel string
	drainLabel string
	namespace  string // of the Leases
	leaseName  string
	leaseDur   time.Duration
	renewDL    time.Duration
	retry      time.Duration
	kube       kubernetes.Interface // the Leases' (outside the fence)
	md         metadata.Interface   // the Operator's: the hand-overs
	assignMD   metadata.Interface   // the assigner's, with its own rate limit
	instance   string               // random token of this process (InstanceAnnotation)
	owned      func() float64       // objects in the sharded informers (OwnedObjectsAnnotation)
	logger     log.Logger
	metrics    *shardMetrics

	lastRenew atomic.Pointer[time.Time] // start of the last successful renewal; nil before
	lease     *coordinationv1.Lease
	// written is set before the first create or update of the member
	// Lease is sent: from then on a Lease of this instance's may exist.
	written atomic.Bool

	mu sync.Mutex
	// handing holds the hand-overs by "informer/key", from the drain's
	// event to the delete event (see drainHandler).
	handing map[string]*handOff
	// handWG counts the hand-overs running; handClosed, set (under mu)
	// before handWG is waited for, keeps the drain handlers, which the
	// informers call until they stop, from starting another then.
	handWG     sync.WaitGroup
	handClosed bool
	informed   []*sharedInformer
}

// readyCheck is the check for /readyz: ready once the member Lease was
// written, and while it is renewed in time.
func (s *sharder) readyCheck(*http.Request) error {
	last := s.lastRenew.Load()
	switch {
	case last == nil:
		return fmt.Errorf("not a member of ring %s yet", s.cfg.Ring)
	case time.Since(*last) > s.renewDL:
		return fmt.Errorf("member Lease %s/%s not renewed for %s", s.namespace, s.leaseName, time.Since(*last).Round(time.Millisecond))
	}
	return nil
}

// renew creates or renews the member Lease once. The renewal counts from
// the time taken before the request, the renew time the Lease carries:
// the assigner judges the Lease by that time, so the holder must not count
// the request's latency as renewed.
func (s *sharder) renew(ctx context.Context) error {
	started := time.Now()
	now := metav1.NewMicroTime(started)
	// Whole seconds, rounded up: rounded down, the Lease would expire
	// before RenewDeadline, while this replica still reconciles.
	secs := int32((s.leaseDur + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	owned := "0"
	if s.owned != nil {
		owned = strconv.FormatFloat(s.owned(), 'f', -1, 64)
	}
	if s.lease != nil {
		l := s.lease.DeepCopy()
		l.Spec.RenewTime = &now
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[OwnedObjectsAnnotation] = owned
		updated, err := s.kube.CoordinationV1().Leases(s.namespace).Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			s.lease = updated
			s.lastRenew.Store(&started)
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return err
		}
		s.lease = nil // someone changed or deleted it: read it again
	}
	l, err := s.kube.CoordinationV1().Leases(s.namespace).Get(ctx, s.leaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: s.leaseName, Namespace: s.namespace,
				Labels:      map[string]string{RingLabel: s.cfg.Ring},
				Annotations: map[string]string{InstanceAnnotation: s.instance, OwnedObjectsAnnotation: owned},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: &s.cfg.Identity, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now,
			},
		}
		s.written.Store(true)
		l, err = s.kube.CoordinationV1().Leases(s.namespace).Create(ctx, l, metav1.CreateOptions{})
	case err == nil:
		if other := l.Annotations[InstanceAnnotation]; other != s.instance && l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil &&
			started.Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second)) {
			return fmt.Errorf("member Lease %s/%s is held by another process (instance %q): is identity %q used by two replicas?", s.namespace, s.leaseName, other, s.cfg.Identity)
		}
		l.Labels = map[string]string{RingLabel: s.cfg.Ring}
		l.Annotations = map[string]string{InstanceAnnotation: s.instance, OwnedObjectsAnnotation: owned}
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &s.cfg.Identity, &secs, &now
		if l.Spec.AcquireTime == nil {
			l.Spec.AcquireTime = &now
		}
		s.written.Store(true)
		l, err = s.kube.CoordinationV1().Leases(s.namespace).Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	s.lease = l
	s.lastRenew.Store(&started)
	return nil
}

// join writes the member Lease, retrying every RetryPeriod until it
// succeeds or ctx ends. When ctx ends first, a write of the Lease that was
// sent may have landed all the same (its answer lost): the Lease is then
// deleted, if it is this instance's (leave), so that the other replicas do
// not count a member that is gone until it expires.
func (s *sharder) join(ctx context.Context) error {
	err := wait.PollUntilContextCancel(ctx, s.retry, true, func(ctx context.Context) (bool, error) {
		if err := s.renew(ctx); err != nil {
			level.Warn(s.logger).Log("msg", "cannot write the member Lease", "lease", s.namespace+"/"+s.leaseName, "err", err)
			return false, nil
		}
		level.Info(s.logger).Log("msg", "joined the ring", "lease", s.namespace+"/"+s.leaseName)
		return true, nil
	})
	if err != nil && s.written.Load() {
		s.leave()
	}
	return err
}

// heartbeat renews the member Lease every RetryPeriod until ctx ends. When
// no renewal succeeded for RenewDeadline it calls lost and returns: the
// replica must stop reconciling before the others take its Lease for
// expired (LeaseDuration).
func (s *sharder) heartbeat(ctx context.Context, lost func()) {
	t := time.NewTicker(s.retry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// One attempt may take until the renew deadline: a slow API
		// server is not a lost one.
		deadline := s.lastRenew.Load().Add(s.renewDL) // set by join
		rctx, cancel := context.WithDeadline(ctx, deadline)
		err := s.renew(rctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			continue
		}
		since := time.Since(*s.lastRenew.Load())
		level.Warn(s.logger).Log("msg", "cannot renew the member Lease", "lease", s.namespace+"/"+s.leaseName, "since", since.Round(time.Millisecond), "err", err)
		if since >= s.renewDL {
			level.Error(s.logger).Log("msg", "member Lease not renewed within RenewDeadline: stopping", "lease", s.namespace+"/"+s.leaseName)
			lost()
			return
		}
	}
}

// leave deletes the member Lease, so that the assigner moves this
// replica's objects at once. Called after the last reconciliation ended.
// A Lease that another instance holds now (it took the Lease over once it
// looked expired: this replica's is lost) is left alone, with its objects.
func (s *sharder) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	leases := s.kube.CoordinationV1().Leases(s.namespace)
	l, err := leases.Get(ctx, s.leaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		level.Info(s.logger).Log("msg", "left the ring", "lease", s.namespace+"/"+s.leaseName)
		return
	case err != nil:
		level.Warn(s.logger).Log("msg", "cannot delete the member Lease: its objects move when it expires", "lease", s.namespace+"/"+s.leaseName, "err", err)
		return
	case l.Annotations[InstanceAnnotation] != s.instance:
		level.Info(s.logger).Log("msg", "left the ring; the member Lease is another instance's now: kept", "lease", s.namespace+"/"+s.leaseName, "instance", l.Annotations[InstanceAnnotation])
		return
	}
	// Deleted only as read: not once another instance took it since.
	pre := &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}
	err = leases.Delete(ctx, s.leaseName, metav1.DeleteOptions{Preconditions: pre})
	if err != nil && !apierrors.IsNotFound(err) {
		level.Warn(s.logger).Log("msg", "cannot delete the member Lease: its objects move when it expires", "lease", s.namespace+"/"+s.leaseName, "err", err)
		return
	}
	level.Info(s.logger).Log("msg", "left the ring", "lease", s.namespace+"/"+s.leaseName)
}

// watchDrains registers, on each sharded informer, the handler that hands
// over the objects the assigner drains from this replica, for the
// Frameworks that can reconcile them. Hand-overs run until ctx ends.
func (s *sharder) watchDrains(ctx context.Context, frameworks []*framework.Framework) error {
	fws := make([][]*framework.Framework, len(s.informed))
	for i, si := range s.informed {
		for _, f := range frameworks {
			if inf, ok := f.Informer().(*SharedInformer); ok && inf.Informer == si.inf {
				fws[i] = append(fws[i], f)
			}
		}
	}
	for i, si := range s.informed {
		// The Frameworks that can reconcile an object of si: those of
		// every sharded informer of its resource whose selection holds
		// it (another informer of the resource, over another namespace
		// or selector, may hold it too). A hand-over releases them all
		// before its patch. With no Framework (a cache for reads only)
		// nothing reconciles the objects here: drains are acknowledged
		// at once.
		fwsOf := func(m metav1.Object) []*framework.Framework {
			var of []*framework.Framework
			for j, sj := range s.informed {
				if j == i || (sj.key.gvr == si.key.gvr && sj.holds(m)) {
					of = append(of, fws[j]...)
				}
			}
			return of
		}
		if _, err := si.inf.AddEventHandler(s.drainHandler(ctx, fwsOf, si.key.gvr, si.key.String())); err != nil {
			return fmt.Errorf("sharding: watch drains of %s: %w", si.key, err)
		}
	}
	return nil
}

// holds reports whether the selection of si (its namespace, label and
// field selectors) holds the object m. A field selector on other fields
// than the name and namespace is taken to hold it.
func (si *sharedInformer) holds(m metav1.Object) bool {
	namespace, selector := si.inf.Selection()
	if namespace != "" && namespace != m.GetNamespace() || !selector.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if si.key.fieldsSel == "" {
		return true
	}
	sel, err := fields.ParseSelector(si.key.fieldsSel)
	if err != nil {
		return true
	}
	for _, r := range sel.Requirements() {
		if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
			return true
		}
	}
	return sel.Matches(fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()})
}

// drainHandler returns the event handler, for the sharded informer named
// informer (of gvr), that hands over the objects drained from this
// replica, for the Frameworks that can reconcile each (fwsOf), and
// reclaims those whose drain was taken back.
//
// An object's hand-over (handOff) lasts from its drain's event until its
// delete event: the informer delivers an object's events in order, but
// until the delete event of the labels' removal it can still deliver
// versions from before it (a resync or a relist of what it held, events
// that came after the patch's answer). Meanwhile the handler leaves every
// event of the object to the hand-over, which reads the object from the
// API server before it reclaims it or hands it over again.
func (s *sharder) drainHandler(ctx context.Context, fwsOf func(metav1.Object) []*framework.Framework, gvr schema.GroupVersionResource, informer string) cache.ResourceEventHandlerFuncs {
	// run starts h's goroutine, under mu: never concurrent with the Wait
	// after handClosed.
	run := func(h *handOff, fws []*framework.Framework, id, namespace, name, key string, drained bool) {
		h.running = true
		s.handWG.Go(func() { s.handOver(ctx, fws, gvr, namespace, name, key, id, h, drained) })
	}
	changed := func(obj any) {
		m, key, ok := objectKey(obj)
		if !ok {
			return
		}
		labels := m.GetLabels()
		if labels[s.shardLabel] != s.cfg.Identity {
			return
		}
		_, drain := labels[s.drainLabel]
		id := informer + "/" + key
		s.mu.Lock()
		defer s.mu.Unlock()
		switch h := s.handing[id]; {
		case h != nil:
			// Only the hand-over may reclaim its object, after it
			// read it: reclaimed under it, the object was reconciled
			// here while the hand-over went on (and given away if it
			// was drained again before the patch), or after it, from
			// the informer's cache that still held it.
			h.again, h.gone = true, false
			if !h.running && !s.handClosed {
				run(h, fwsOf(m), id, m.GetNamespace(), m.GetName(), key, false)
			}
		case !drain:
			// Ours and not drained (again): a hand-over that
			// did not happen must not keep it released.
			for _, f := range fwsOf(m) {
				f.Reclaim(key)
			}
		case !s.handClosed:
			h := &handOff{}
			s.handing[id] = h
			run(h, fwsOf(m), id, m.GetNamespace(), m.GetName(), key, true)
		}
	}
	deleted := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, key, ok := objectKey(obj)
		if !ok {
			return
		}
		id := informer + "/" + key
		s.mu.Lock()
		defer s.mu.Unlock()
		switch h := s.handing[id]; {
		case h == nil:
		case h.running:
			h.again, h.gone = true, true
		default:
			// Left the informer after the hand-over's patch, or
			// with its labels changed by another.
			delete(s.handing, id)
			if !h.handed {
				s.reclaimUncached(fwsOf(m), key)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: deleted,
	}
}

// objectKey returns obj's metadata and its key ("namespace/name"), false
// when obj has no metadata.
func objectKey(obj any) (metav1.Object, string, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, "", false
	}
	key, err := cache.MetaNamespaceKeyFunc(m)
	return m, key, err == nil
}

// handOff is an object's hand-over, from its drain's event to its delete
// event. The drain handler leaves the object's events to it.
type handOff struct {
	running bool // its goroutine runs (handOver)
	// again is set by an event of the object that came since the
	// hand-over last read it; gone by its delete event, which a later
	// event takes back.
	again, gone bool
	handed      bool // a patch of it removed the labels
}

// handOver runs the hand-over id of the object key: it hands the object
// over (handOverOnce) when drained, else reads it from the API server
// first; then, as long as events came meanwhile, it reads it again and
// hands it over again if it is drained, reclaims it if its drain was taken
// back, or leaves it released while it is not this replica's any more.
func (s *sharder) handOver(ctx context.Context, fws []*framework.Framework, gvr schema.GroupVersionResource, namespace, name, key, id string, h *handOff, drained bool) {
	for {
		failed := false
		if drained {
			switch err := s.handOverOnce(ctx, fws, gvr, namespace, name, key); {
			case err == errTestFailed, err == errGone:
				failed = true
			case err != nil:
				s.endHandOver(id) // stopping: the member Lease goes, and the object with it
				return
			default:
				s.mu.Lock()
				h.handed = true
				done := true
				switch {
				case h.gone:
					// Its delete event came: the last one.
					delete(s.handing, id)
				case !h.again:
					// Its delete event is to come, and ends it.
					h.running = false
				default:
					done = false // events came: read it
				}
				s.mu.Unlock()
				if done {
					return
				}
			}
		}
		s.mu.Lock()
		if !failed && !h.again {
			h.running = false // nothing came since it was read
			s.mu.Unlock()
			return
		}
		h.again = false
		s.mu.Unlock()
		labels, found, err := s.labelsOf(ctx, gvr, namespace, name, key)
		if err != nil {
			s.endHandOver(id)
			return
		}
		ours := found && labels[s.shardLabel] == s.cfg.Identity
		_, drain := labels[s.drainLabel]
		if drained = ours && drain; drained {
			continue
		}
		s.mu.Lock()
		switch {
		case h.again:
			// Read it again.
		case ours:
			delete(s.handing, id)
			level.Info(s.logger).Log("msg", "drain taken back: keeping object", "object", key, "resource", gvr.Resource)
			for _, f := range fws {
				f.Reclaim(key)
			}
		case h.gone:
			delete(s.handing, id)
			if !h.handed {
				s.reclaimUncached(fws, key)
			}
		default:
			// Not this replica's any more: its delete event is to
			// come, and ends the hand-over.
			h.running = false
		}
		again := h.again
		s.mu.Unlock()
		if !again {
			return
		}
	}
}

// reclaimUncached reclaims key in the Frameworks whose informer no longer
// holds it, after its object left this replica's informer otherwise than
// by a hand-over's patch (taken by another, or deleted). A Framework that
// got the delete event before the hand-over released the key would keep
// it released for ever; where the cache holds the object its delete event
// is still to come, and forgets the release.
func (s *sharder) reclaimUncached(fws []*framework.Framework, key string) {
	for _, f := range fws {
		if _, cached, err := f.Informer().Get(key); err == nil && !cached {
			f.Reclaim(key)
		}
	}
}

// endHandOver ends the hand-over id at once.
func (s *sharder) endHandOver(id string) {
	s.mu.Lock()
	delete(s.handing, id)
	s.mu.Unlock()
}

// handOverBackoff spaces the hand-over's requests that failed.
var handOverBackoff = wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: 5 * time.Second}

// labelsOf reads the labels of the object from the API server, retrying
// until ctx ends (its error then); found is false when it is gone.
func (s *sharder) labelsOf(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, key string) (labels map[string]string, found bool, err error) {
	err = wait.ExponentialBackoffWithContext(ctx, handOverBackoff, func(ctx context.Context) (bool, error) {
		m, err := s.md.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			labels, found = m.Labels, true
			return true, nil
		case apierrors.IsNotFound(err):
			return true, nil
		}
		level.Warn(s.logger).Log("msg", "cannot read object being handed over", "object", key, "resource", gvr.Resource, "err", err)
		return false, nil
	})
	return labels, found, err
}

// handOverOnce releases key in every Framework (waiting for reconciliations
// in flight) and then removes the shard and drain labels, which tells the
// assigner that the object is free. The removal is conditional on both
// labels still being this replica's and set: errTestFailed when the
// assigner took the drain back, errGone when the object was deleted. Any
// other error is ctx's or the fence's: this replica is stopping, and the
// object goes with its member Lease.
func (s *sharder) handOverOnce(ctx context.Context, fws []*framework.Framework, gvr schema.GroupVersionResource, namespace, name, key string) error {
	start := time.Now()
	for _, f := range fws {
		if err := f.Release(ctx, key); err != nil {
			return err
		}
	}
	patch, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/labels/" + jsonPointerEscape(s.shardLabel), "value": s.cfg.Identity},
		{"op": "test", "path": "/metadata/labels/" + jsonPointerEscape(s.drainLabel), "value": "true"},
		{"op": "remove", "path": "/metadata/labels/" + jsonPointerEscape(s.shardLabel)},
		{"op": "remove", "path": "/metadata/labels/" + jsonPointerEscape(s.drainLabel)},
	})
	err := wait.ExponentialBackoffWithContext(ctx, handOverBackoff, func(ctx context.Context) (bool, error) {
		_, err := s.md.Resource(gvr).Namespace(namespace).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			// Deleted, not handed over: a Framework that got its
			// delete event before the release holds its last state
			// for its delete chain, and must get it back.
			return false, errGone
		case apierrors.IsInvalid(err):
			// A test failed: the object is not being drained from this
			// replica any more.
			return false, errTestFailed
		case errors.Is(err, ErrLeaseLost):
			// The fence: this replica lost its member Lease, and the
			// object goes with it.
			return false, err
		}
		level.Warn(s.logger).Log("msg", "cannot hand over object", "object", key, "resource", gvr.Resource, "err", err)
		return false, nil
	})
	if err == nil {
		level.Debug(s.logger).Log("msg", "handed over object", "object", key, "resource", gvr.Resource, "took", time.Since(start))
	}
	return err
}

var (
	errTestFailed = errors.New("json patch test failed")
	errGone       = errors.New("object gone")
)

// jsonPointerEscape escapes a label key for a JSON pointer (RFC 6901).
func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// shardedInformerConfig returns cfg with the shard label selector added
// when cfg's resource is sharded or follows its owners (Children), the
// user's own selector, and whether the resource is sharded (its objects
// assigned and counted).
func (o *Operator) shardedInformerConfig(cfg informer.Config) (informer.Config, string, bool) {
	if o.shard == nil {
		return cfg, "", false
	}
	sharded := o.shard.cfg.shards(cfg.GVR)
	if !sharded && !slices.Contains(o.shard.cfg.Children, cfg.GVR) {
		return cfg, "", false
	}
	user := cfg.LabelSelector
	sel := o.shard.shardLabel + "=" + o.shard.cfg.Identity
	if user != "" {
		sel = user + "," + sel
	}
	cfg.LabelSelector = sel
	return cfg, user, sharded
}

// ShardLabels returns the labels that children copy from their owners so
// that they follow their owner's shard (child.Config.OwnerLabels, with
// Sharding.Children): the shard label with Config.Sharding, none without.
// Giving it whether or not the operator is sharded keeps one code path.
func (o *Operator) ShardLabels() []string {
	if o.shard == nil {
		return nil
	}
	return []string{o.shard.shardLabel}
}

// ownedObjects counts the objects in this replica's sharded informers
// while they run: 0 before Run starts them and after it stopped them (their
// caches keep their last content).
func (o *Operator) ownedObjects() float64 {
	if !o.informing.Load() {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, si := range o.order {
		if si.sharded {
			n += len(si.inf.SharedIndexInformer().GetStore().ListKeys())
		}
	}
	return float64(n)
}

// runSharded is Run's last step with Config.Sharding: join the ring, run
// the Frameworks on this replica's share while the elected replica assigns
// the objects, and on the way out leave the ring only after the last
// reconciliation ended.
func (o *Operator) runSharded(ctx context.Context, frameworks []*framework.Framework, informers []*sharedInformer, st *state) error {
	s := o.shard
	for _, si := range informers {
		if si.sharded {
			s.informed = append(s.informed, si)
		}
	}
	if len(s.informed) == 0 {
		return fmt.Errorf("%w: Config.Sharding: no informer of Sharding.Resources %v: create the Frameworks' informers with Operator.Informer", ErrInvalidConfig, s.cfg.Resources)
	}
	lostCtx, lost := context.WithCancel(context.Background())
	if err := s.join(ctx); err != nil {
		lost()
		return nil // ctx ended before this replica could join
	}
	memberCtx, stopMember := context.WithCancel(context.WithoutCancel(ctx))
	var memberWG sync.WaitGroup
	// leaveRing stops renewing the member Lease and deletes it; when Run
	// returns past ShutdownTimeout, only once the last reconciliation
	// ended.
	leaveRing := func() { stopMember(); memberWG.Wait(); s.leave(); lost() }
	var leaveAfter <-chan struct{}
	defer func() {
		if leaveAfter == nil {
			leaveRing()
			return
		}
		go func() { <-leaveAfter; leaveRing() }()
	}()
	memberWG.Go(func() { s.heartbeat(memberCtx, lost) })

	drainCtx, stopDrains := context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		s.mu.Lock()
		s.handClosed = true
		s.mu.Unlock()
		stopDrains()
		s.handWG.Wait()
	}()
	if err := s.watchDrains(drainCtx, frameworks); err != nil {
		return err
	}

	leCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	var leWG sync.WaitGroup
	defer func() { stopElector(); leWG.Wait() }() // releases the leader Lease
	st.electing.Store(true)
	o.electAssigner(leCtx, &leWG, st)

	err, finished := o.runFrameworks(ctx, frameworks, lostCtx, "the member Lease "+s.namespace+"/"+s.leaseName+" was not renewed within RenewDeadline", st)
	if lostCtx.Err() != nil {
		// The member Lease is lost: the other replicas take the objects
		// once it expires, whatever this one does, and the fence refuses
		// the writes of a reconciliation still running past
		// ShutdownTimeout. Waiting for it would only keep the process
		// from exiting.
		return err
	}
	// The member Lease is renewed, and deleted, only after the last
	// reconciliation ended, even past ShutdownTimeout (Run has returned
	// then): until then no other replica may take this one's objects.
	select {
	case <-finished:
	default:
		leaveAfter = finished
		level.Warn(s.logger).Log("msg", "holding the member Lease until the reconciliations still running end", "lease", s.namespace+"/"+s.leaseName, "err", err)
	}
	return err
}

// electAssigner campaigns for the leader election Lease until ctx ends, and
// runs the assigner while this replica holds it. Its goroutines are
// counted in wg.
func (o *Operator) electAssigner(ctx context.Context, wg *sync.WaitGroup, st *state) {
	s := o.shard
	terms := make(chan context.Context, 1)
	logger := log.With(s.logger, "lease", o.config.LeaderElectionNamespace+"/"+o.config.LeaderElectionID)
	wg.Go(func() {
		for ctx.Err() == nil {
			el, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
				Lock: &resourcelock.LeaseLock{
					LeaseMeta:  metav1.ObjectMeta{Name: o.config.LeaderElectionID, Namespace: o.config.LeaderElectionNamespace},
					Client:     o.leases.CoordinationV1(),
					LockConfig: resourcelock.ResourceLockConfig{Identity: s.cfg.Identity + "_" + s.instance},
				},
				LeaseDuration:   o.config.LeaseDuration,
				RenewDeadline:   o.config.RenewDeadline,
				RetryPeriod:     o.config.RetryPeriod,
				ReleaseOnCancel: true,
				Name:            o.config.LeaderElectionID,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(term context.Context) {
						select {
						case terms <- term:
						case <-ctx.Done():
						}
					},
					OnStoppedLeading: func() {},
				},
			})
			if err != nil {
				level.Error(logger).Log("msg", "cannot elect the assigner", "err", err)
				return
			}
			el.Run(ctx) // returns when the term ends or ctx ends
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case term := <-terms:
				st.leading.Store(true)
				level.Info(logger).Log("msg", "leading: assigning the objects")
				s.assign(term)
				st.leading.Store(false)
				level.Info(logger).Log("msg", "not assigning any more")
			}
		}
	})
}
