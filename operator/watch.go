package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
)

// informerKey identifies a shared informer: one per resource, namespace,
// selectors and content (whole objects, or metadata only) in the process.
type informerKey struct {
	gvr                          schema.GroupVersionResource
	namespace, labels, fieldsSel string
	// metadata is true for a metadata-only informer (ObjectType
	// &metav1.PartialObjectMetadata{}).
	metadata bool
}

func (k informerKey) String() string {
	s := k.gvr.Resource
	if k.gvr.Group != "" {
		s += "." + k.gvr.Group
	}
	s += "/" + k.gvr.Version
	if k.namespace != "" {
		s += " in " + k.namespace
	}
	if k.labels != "" {
		s += " labels " + k.labels
	}
	if k.fieldsSel != "" {
		s += " fields " + k.fieldsSel
	}
	if k.metadata {
		s += " (metadata only)"
	}
	return s
}

type sharedInformer struct {
	key informerKey
	inf *informer.Informer
	// sharded is true for an informer of a sharded resource, whose label
	// selector is userLabels (the one asked for) and the shard label.
	sharded    bool
	userLabels string
}

// SharedInformer is an informer of the Operator's, shared by every
// Framework, watch and resource that asked for the same key. It is an
// *informer.Informer (Get, Mutation, AddEventHandler, ...) whose Run only
// waits for its context: the Operator's Run runs the informer itself, once,
// so a Framework booted on a SharedInformer does not start a second watch.
type SharedInformer struct {
	*informer.Informer
	gvr schema.GroupVersionResource
}

// GVR returns the resource the informer watches.
func (s *SharedInformer) GVR() schema.GroupVersionResource { return s.gvr }

// Run blocks until ctx ends and returns nil: Operator.Run runs the
// underlying informer. It is what Framework.Boot calls.
func (s *SharedInformer) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

var _ informer.Interface = (*SharedInformer)(nil)

// Informer returns the process's informer for cfg.GVR in cfg.Namespace with
// cfg's label and field selectors, creating it on the first call: every
// caller with the same key shares one cache and one watch, so memory scales
// with the kinds watched, not with the Frameworks. Give it to a Framework
// (framework.Config.Informer), a child watch or a resource's cache reads.
//
// The first call's cfg configures the informer; empty fields default to
// the Operator's. Set ObjectType, the Go type to cache (&corev1.ConfigMap{},
// &v1alpha1.WebApp{}), and leave the clients empty: cfg.RESTConfig becomes
// Config.RESTConfig, so every object is decoded once, straight into that
// type (see informer.Config.RESTConfig). ObjectType
// &metav1.PartialObjectMetadata{} makes a metadata-only informer, read
// through a metadata client built from Config.RESTConfig (see
// informer.Config.ObjectType): for objects that only wake yours (Watches,
// References, Owns), whose content the operator never reads. It is
// another informer than the one of whole objects of the same resource,
// namespace and selectors; a later call gets it by setting the same
// ObjectType. Without ObjectType and clients,
// Client becomes a dynamic client (unstructured objects). ResyncPeriod
// defaults to Config.ResyncPeriod, Logger and Registerer to the
// Operator's, DropManagedFields to true. A later call for the same key must
// not set RESTConfig, Client, RESTClient, ObjectType (but a
// *metav1.PartialObjectMetadata, which names the metadata-only one) or
// Transform (the informer exists
// already): that is ErrInvalidConfig rather than a silent second meaning.
// With Config.Sharding, an informer of one of Sharding.Resources selects
// only this replica's objects: the shard label selector is added to
// cfg.LabelSelector.
// It is called before Run; after, it returns ErrAlreadyStarted.
func (o *Operator) Informer(cfg informer.Config) (*SharedInformer, error) {
	cfg, userLabels, sharded := o.shardedInformerConfig(cfg)
	_, metadataOnly := cfg.ObjectType.(*metav1.PartialObjectMetadata)
	key := informerKey{gvr: cfg.GVR, namespace: cfg.Namespace, labels: cfg.LabelSelector, fieldsSel: cfg.FieldSelector, metadata: metadataOnly}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started {
		return nil, ErrAlreadyStarted
	}
	if si, ok := o.informers[key]; ok {
		if cfg.RESTConfig != nil || cfg.Client != nil || cfg.RESTClient != nil || cfg.ObjectType != nil && !metadataOnly || cfg.Transform != nil {
			return nil, fmt.Errorf("%w: informer for %s exists already: a second Informer call must not set RESTConfig, Client, RESTClient, ObjectType or Transform (but ObjectType &metav1.PartialObjectMetadata{}, which names the metadata-only one)", ErrInvalidConfig, key)
		}
		return &SharedInformer{Informer: si.inf, gvr: key.gvr}, nil
	}
	switch {
	case cfg.RESTConfig != nil || cfg.Client != nil || cfg.RESTClient != nil:
	case cfg.ObjectType != nil:
		cfg.RESTConfig = o.restConfig
	default:
		cfg.Client = o.dynamic
	}
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = o.config.ResyncPeriod
	}
	if cfg.Logger == nil {
		cfg.Logger = o.logger
	}
	if cfg.Registerer == nil {
		cfg.Registerer = o.registry
	}
	if !cfg.DropManagedFields && cfg.Transform == nil {
		cfg.DropManagedFields = true
	}
	inf, err := informer.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("informer for %s: %w", key, err)
	}
	si := &sharedInformer{key: key, inf: inf, sharded: sharded, userLabels: userLabels}
	o.informers[key] = si
	o.order = append(o.order, si)
	return &SharedInformer{Informer: inf, gvr: key.gvr}, nil
}

// Predicate decides whether a watch event enqueues anything. oldObj is nil
// for an add, newObj is nil for a delete (and then oldObj may be a
// cache.DeletedFinalStateUnknown). It runs on the informer's event path:
// keep it fast.
type Predicate func(oldObj, newObj any) bool

// Owns makes f reconcile the owner of a child object whenever the child is
// added, changed or deleted: the watched objects are those of child (from
// Informer, which the child resource may read its current state from too),
// and the owner is named by the child's controller owner reference when that
// reference is of kind owner (group and kind; any version). The owner is
// the object of f's informer that the reference names: in the child's
// namespace (owner references cannot cross namespaces), or, as Kubernetes
// allows a namespaced child of a cluster-scoped owner (a Namespace's
// ResourceQuota owned by a cluster-scoped Tenant), the cluster-scoped
// object of that name when f's informer holds it and holds no object of
// that name in the child's namespace. Either way the UID is not compared:
// an owner created again under that name (another UID) is woken by a
// change of its previous one's child (which it waits for to go: see
// resource/child). An empty owner kind, or an owner group that is not an
// API group (an apiVersion such as "example.com/v1", say), is
// ErrInvalidConfig.
//
// Updates that change nothing (a resync: same resourceVersion) and events
// that the operator's own writes caused (recorded in OwnWrites) enqueue
// nothing (see OwnWrites); every predicate given must return true as well. It is called
// before Run.
//
// child may be metadata-only (Informer with ObjectType
// &metav1.PartialObjectMetadata{}) when nothing reads the children's
// content from it (a child resource's Cache cannot be: resource/child's
// New refuses it): the owner reference is metadata, and the predicates
// then get *metav1.PartialObjectMetadata, as for Watches. It is for
// children no resource of f reads: for a child resource's children, give
// Owns the resource's Cache itself. A metadata-only informer beside it
// saves nothing (the Cache holds the content anyway), and its events are
// not the Cache's: the owner it wakes for a child's change may read the
// Cache before the Cache has the change, find nothing to do, and not be
// woken when the Cache gets it (only after WaitDelay while a child is not
// ready, or at the owner's next resync or change).
func (o *Operator) Owns(f *framework.Framework, owner schema.GroupKind, child *SharedInformer, predicates ...Predicate) error {
	if owner.Kind == "" {
		return fmt.Errorf("%w: Owns: owner kind must not be empty", ErrInvalidConfig)
	}
	if owner.Group != "" {
		// An apiVersion ("example.com/v1") matches no owner reference's
		// group: no child event would ever wake its owner.
		if errs := validation.IsDNS1123Subdomain(owner.Group); len(errs) > 0 {
			return fmt.Errorf("%w: Owns: owner group %q is not an API group (such as apps or example.com, without a version): %s", ErrInvalidConfig, owner.Group, strings.Join(errs, "; "))
		}
	}
	return o.Watches(f, child, func(obj any) []string {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil
		}
		ref := metav1.GetControllerOfNoCopy(m)
		if ref == nil || ref.Kind != owner.Kind {
			return nil
		}
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != owner.Group {
			return nil
		}
		if m.GetNamespace() == "" {
			return []string{ref.Name}
		}
		key := m.GetNamespace() + "/" + ref.Name
		if clusterScopedOwner(f.Informer(), key, ref.Name) {
			return []string{ref.Name}
		}
		return []string{key}
	}, predicates...)
}

// clusterScopedOwner reports whether the owner named name, of a child
// whose namespaced owner would have key, is cluster-scoped: owners holds
// no object of key, and holds the cluster-scoped object name (of any UID:
// the owner of a name, as for a namespaced owner). Two cache lookups, on
// the child's event path.
func clusterScopedOwner(owners informer.Interface, key, name string) bool {
	if owners == nil {
		return false
	}
	if _, ok, err := owners.Get(key); ok || err != nil {
		return false
	}
	_, ok, err := owners.Get(name)
	return ok && err == nil
}

// Watches makes f reconcile the objects whose keys ("namespace/name", or
// "name" when cluster-scoped) mapFunc returns for each added, changed or
// deleted object of source (from Informer). mapFunc gets the object (on a delete, the last
// state known); it runs on the informer's event path and must not block.
// On an update, the keys of the object before it are reconciled too (its
// previous owner, when its controller reference changed). Resyncs are
// filtered as for Owns, and every predicate given must return true; a nil
// f, source, mapFunc or predicate, or a source not made by Informer, is
// ErrInvalidConfig. It is called before Run.
//
// The echo of the operator's own write or delete of an object (see
// OwnWrites) does not wake the object's controller, whose reconciliation
// made it, but it wakes the other keys mapFunc returns for it: a
// reconciliation that deletes its child wakes the objects that wait for
// that name to be free (two owners that want a child of one name; an
// object that refers to another's child, through References). The
// controller is the object of f's informer that the controller reference
// names with its UID: an object of f's that only has its name (f
// reconciles another kind than the controller's, as an App named as the
// Certificate whose Secret it refers to; or an owner created again under
// that name) is woken. The echo of an object without a controller
// reference wakes nothing, as for Owns (who wrote it is not known).
//
// source may be metadata-only (Informer with ObjectType
// &metav1.PartialObjectMetadata{}), which caches no object's content:
// mapFunc and the predicates then get *metav1.PartialObjectMetadata (with
// the resource's apiVersion and kind; labels, annotations, owner
// references and the rest of the metadata, no spec or data). A change of
// the content alone (a Secret's data) changes the resourceVersion, so it
// still comes as an update.
func (o *Operator) Watches(f *framework.Framework, source *SharedInformer, mapFunc func(obj any) []string, predicates ...Predicate) error {
	if f == nil || source == nil || mapFunc == nil {
		return fmt.Errorf("%w: Watches: framework, source and map function must not be nil", ErrInvalidConfig)
	}
	if source.Informer == nil { // not from Informer: adding the handler would panic
		return fmt.Errorf("%w: Watches: source holds no informer (get it from Operator.Informer)", ErrInvalidConfig)
	}
	for i, p := range predicates {
		if p == nil {
			return fmt.Errorf("%w: Watches of %s: predicates[%d] must not be nil", ErrInvalidConfig, source.gvr, i)
		}
	}
	o.mu.Lock()
	started := o.started
	o.mu.Unlock()
	if started {
		return ErrAlreadyStarted
	}
	_, err := source.AddEventHandler(o.OwnWrites().watch(source.gvr.GroupResource(), f.Informer(), f.Enqueue, mapFunc, predicates))
	if err != nil {
		return fmt.Errorf("watch %s: %w", source.gvr, err)
	}
	return nil
}

// watchHandler is the event handler of Watches, before the own-write
// filter: it calls enqueue with the keys mapFunc returns for each event
// that every predicate passes. An update enqueues the keys of the old
// object too (those the new one does not have): a child whose controller
// reference another writer changed or removed, or which a relist shows
// replaced by another object of its name, wakes its previous owner, as
// controller-runtime's owner handler does.
func watchHandler(enqueue func(key string), mapFunc func(obj any) []string, predicates []Predicate) cache.ResourceEventHandlerFuncs {
	passes := func(oldObj, newObj any) bool {
		for _, p := range predicates {
			if !p(oldObj, newObj) {
				return false
			}
		}
		return true
	}
	each := func(obj any) {
		for _, key := range mapFunc(obj) {
			enqueue(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if passes(nil, obj) {
				each(obj)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			if !passes(oldObj, newObj) {
				return
			}
			keys := mapFunc(newObj)
			for _, key := range keys {
				enqueue(key)
			}
			for _, key := range mapFunc(oldObj) {
				if !slices.Contains(keys, key) {
					enqueue(key)
				}
			}
		},
		DeleteFunc: func(obj any) {
			last := obj
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				last = d.Obj
			}
			if passes(obj, nil) {
				each(last)
			}
		},
	}
}

// watch returns the event handler of Watches for an informer of resource:
// watchHandler behind the filter of w, with the echoes of own writes and
// deletes given to echoHandler. owners is the informer of the objects the
// keys name (the Framework's).
func (w *OwnWrites) watch(resource schema.GroupResource, owners informer.Interface, enqueue func(key string), mapFunc func(obj any) []string, predicates []Predicate) cache.ResourceEventHandler {
	return w.filter(resource, watchHandler(enqueue, mapFunc, predicates), echoHandler(owners, enqueue, mapFunc, predicates))
}

// echoHandler is the handler of Watches for the echoes of the operator's
// own writes and deletes, which Filter keeps from watchHandler: it enqueues
// what watchHandler would for the event, but the keys of the echoed
// object's controller (of either scope: "namespace/name" and "name"),
// whose reconciliation wrote it (see isController), and nothing for an
// object without one.
func echoHandler(owners informer.Interface, enqueue func(key string), mapFunc func(obj any) []string, predicates []Predicate) cache.ResourceEventHandlerFuncs {
	// others returns the handler of one echo of obj: watchHandler's,
	// enqueueing every key but the writer's.
	others := func(obj any) cache.ResourceEventHandler {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return cache.ResourceEventHandlerFuncs{}
		}
		ref := metav1.GetControllerOfNoCopy(m)
		if ref == nil {
			return cache.ResourceEventHandlerFuncs{}
		}
		writer := m.GetNamespace() + "/" + ref.Name
		return watchHandler(func(key string) {
			if (key != writer && key != ref.Name) || !isController(owners, key, ref.UID) {
				enqueue(key)
			}
		}, mapFunc, predicates)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { others(obj).OnAdd(obj, false) },
		UpdateFunc: func(oldObj, newObj any) { others(newObj).OnUpdate(oldObj, newObj) },
		DeleteFunc: func(obj any) { others(obj).OnDelete(obj) },
	}
}

// isController reports whether key, which has the name of an echoed
// object's controller reference, names that controller (uid): the object
// owners hold under key has its UID, or owners hold none (a controller
// whose delete chain runs from its last state, or nothing to wake). An
// object of another UID under that name is not the writer: one of another
// kind than the controller's (a Secret named as the Certificate that
// controls the Secret it refers to), or an owner created again under its
// previous one's name. One cache lookup, on the echo's path only.
func isController(owners informer.Interface, key string, uid types.UID) bool {
	if owners == nil {
		return true
	}
	obj, ok, err := owners.Get(key)
	if err != nil || !ok {
		return true
	}
	m, err := meta.Accessor(obj)
	return err != nil || m.GetUID() == uid
}

// OwnWrites returns the Operator's record of its own writes to watched
// objects: wrap each write of a watched object in OwnWrites.Begin, and the
// watch event that write causes does not wake the owner again, through Owns,
// Watches or a handler of your own wrapped in OwnWrites.Filter.
func (o *Operator) OwnWrites() *OwnWrites {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.writes == nil {
		o.writes = &OwnWrites{pending: map[writeKey]*pendingWrite{}, echoes: map[types.UID]echo{}}
	}
	return o.writes
}

// OwnWrites tells the watch events caused by the operator's own writes
// (echoes) from the others, so that Owns, Watches and the handlers wrapped
// in Filter do not wake an owner for a change it made itself. The watch
// event of a write can reach the informer before the write's answer
// reaches the writer, so a write is announced before it is sent (Begin)
// and settled with its answer: events of the written object that arrive in
// between are held, and released at the answer unless they carry the
// answer's resourceVersion. Each handler made by Filter drops the echo
// (several may watch one resource: two Owns, or Owns and Watches, over one
// informer). Methods are safe for concurrent use. Memory: one entry per
// write in flight, one per written object whose echo has not reached every
// handler of its resource yet, and one per deleted object whose delete
// event has not (dropped when the object is deleted or written again, or
// after DeleteEchoTTL: an echo a handler never sees, as of an object
// created and deleted while the watch was down, or of an object outside
// that handler's informer, does not stay in memory; a write of a resource
// no Filter watches keeps none).
type OwnWrites struct {
	mu      sync.Mutex
	pending map[writeKey]*pendingWrite
	echoes  map[types.UID]echo // answered writes whose event has not reached every handler
	// deletes are the UIDs of announced deletes (BeginDelete) whose event
	// has not reached every handler yet; made on first use.
	deletes map[types.UID]announced
	// filters counts the handlers Filter made for each resource: those
	// that drop each echo. Made on first use.
	filters map[schema.GroupResource]int
	pruned  time.Time // when deletes and echoes were last pruned
	// now is the clock (time.Now when nil; tests set it).
	now func() time.Time
}

// echo is the resourceVersion of an answered write whose event has not
// reached every handler of its resource, the time of the answer, and how
// many handlers are still to drop the event.
type echo struct {
	version string
	at      time.Time
	left    int
}

// announced is an announced delete: the time of its announcement, and how
// many handlers are still to drop its event (0 until the first one did:
// then the number of handlers of its resource, which BeginDelete is not
// told, less one).
type announced struct {
	at   time.Time
	left int
}

func (w *OwnWrites) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

// pruneLocked drops the announced deletes and the echoes older than
// DeleteEchoTTL, at most once a minute. w.mu is held.
func (w *OwnWrites) pruneLocked(now time.Time) {
	if now.Sub(w.pruned) <= time.Minute {
		return
	}
	w.pruned = now
	for u, d := range w.deletes {
		if now.Sub(d.at) > DeleteEchoTTL {
			delete(w.deletes, u)
		}
	}
	for u, e := range w.echoes {
		if now.Sub(e.at) > DeleteEchoTTL {
			delete(w.echoes, u)
		}
	}
}

type writeKey struct {
	resource        schema.GroupResource
	namespace, name string
}

type pendingWrite struct {
	inFlight int
	held     []heldEvent
}

type heldEvent struct {
	uid     types.UID
	version string
	fire    func()
	echo    func() // called instead of fire for the echo; may be nil
}

// Begin announces a write (create, update, patch, apply) of the object
// namespace/name of resource, and returns the func to call with the API
// server's answer (nil on error) once the write returned. Every Begin must
// be followed by exactly one call of its func, or events of that object
// stay held.
func (w *OwnWrites) Begin(resource schema.GroupResource, namespace, name string) (done func(answer metav1.Object, err error)) {
	key := writeKey{resource, namespace, name}
	w.mu.Lock()
	p := w.pending[key]
	if p == nil {
		p = &pendingWrite{}
		w.pending[key] = p
	}
	p.inFlight++
	w.mu.Unlock()
	var once sync.Once
	return func(answer metav1.Object, err error) {
		once.Do(func() { w.settle(key, answer, err) })
	}
}

// DeleteEchoTTL is how long an announced delete (OwnWrites.BeginDelete),
// or an answered write (OwnWrites.Begin), waits for its watch event: an
// entry older than that is dropped, so that a delete or write whose event no
// Filter ever sees does not stay in memory.
const DeleteEchoTTL = 10 * time.Minute

// BeginDelete announces a delete of the object with uid before it is sent,
// and returns the func to call with the delete's error once it returned:
// the watch event of that delete then does not pass Filter (nor Owns and
// Watches), so that an owner whose chain deleted a child is not woken
// again by that deletion. A failed delete (any error, NotFound included:
// someone else deleted the object, and that event is theirs) takes the
// announcement back. A delete that finalizers (or a grace period) held
// only marked the object for deletion: the delete event that comes when
// the last finalizer is removed (by someone else, maybe long after) shows
// the object's deletionTimestamp and passes, so that an owner that wants
// the object back by then is woken to create it again. Every BeginDelete
// must be followed by one call of its func. An empty uid announces
// nothing.
func (w *OwnWrites) BeginDelete(uid types.UID) (done func(err error)) {
	if uid == "" {
		return func(error) {}
	}
	w.mu.Lock()
	now := w.clock()
	if w.deletes == nil {
		w.deletes = map[types.UID]announced{}
	}
	w.deletes[uid] = announced{at: now}
	w.pruneLocked(now)
	w.mu.Unlock()
	return func(err error) {
		if err != nil {
			w.mu.Lock()
			delete(w.deletes, uid)
			w.mu.Unlock()
		}
	}
}

// Filter returns an event handler, for an informer of the objects of
// resource, that passes the informer's events on to h except those that
// should not wake anyone: updates that change nothing (a resync: the same
// resourceVersion), adds and updates that are the echo of the operator's
// own write (announced with Begin), and deletes that are the echo of its
// own delete (announced with BeginDelete). Other deletes pass. It is
// the filtering of Owns (Watches and References pass an echo on for the
// objects other than the written object's controller), for a handler of
// your own that calls framework.Framework.Enqueue: register the result with the informer's
// AddEventHandler. Each handler Filter returns drops the echoes (every
// handler of resource is counted until the end: do not call Filter for a
// handler you do not register, or echoes wait DeleteEchoTTL in memory).
//
// An add or update that arrives while a write of the same object is in
// flight is held until the write's answer (see OwnWrites) and then passed
// on, unless it is that write's echo, on the goroutine that calls Begin's
// func: h may then run at the same time as on the informer's goroutine, so
// it must be safe for concurrent use (Framework.Enqueue is) and must not
// block.
func (w *OwnWrites) Filter(resource schema.GroupResource, h cache.ResourceEventHandler) cache.ResourceEventHandler {
	return w.filter(resource, h, nil)
}

// filter is Filter, with echoes, when not nil, given the events that
// Filter keeps from h as the echoes of the operator's own writes and
// deletes (Watches wakes other objects than the writer with them).
func (w *OwnWrites) filter(resource schema.GroupResource, h, echoes cache.ResourceEventHandler) cache.ResourceEventHandler {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.filters == nil {
		w.filters = map[schema.GroupResource]int{}
	}
	w.filters[resource]++
	return &filteredHandler{writes: w, resource: resource, next: h, echoes: echoes}
}

// filteredHandler is the handler Filter returns.
type filteredHandler struct {
	writes   *OwnWrites
	resource schema.GroupResource
	next     cache.ResourceEventHandler
	// echoes, when not nil, gets the echoes kept from next.
	echoes cache.ResourceEventHandler
}

func (h *filteredHandler) OnAdd(obj any, isInInitialList bool) {
	var echo func()
	if h.echoes != nil {
		echo = func() { h.echoes.OnAdd(obj, isInInitialList) }
	}
	h.writes.observe(h.resource, obj, func() { h.next.OnAdd(obj, isInInitialList) }, echo)
}

func (h *filteredHandler) OnUpdate(oldObj, newObj any) {
	if resourceVersion(oldObj) == resourceVersion(newObj) {
		return // a resync: the owner's own informer resyncs it
	}
	var echo func()
	if h.echoes != nil {
		echo = func() { h.echoes.OnUpdate(oldObj, newObj) }
	}
	h.writes.observe(h.resource, newObj, func() { h.next.OnUpdate(oldObj, newObj) }, echo)
}

func (h *filteredHandler) OnDelete(obj any) {
	if h.writes.forget(h.resource, obj) {
		// the echo of the operator's own delete
		if h.echoes != nil {
			h.echoes.OnDelete(obj)
		}
		return
	}
	h.next.OnDelete(obj)
}

func (w *OwnWrites) settle(key writeKey, answer metav1.Object, err error) {
	w.mu.Lock()
	p := w.pending[key]
	ours := err == nil && answer != nil && answer.GetUID() != ""
	seen := 0 // handlers whose echo came first
	var release, echoed []heldEvent
	for _, e := range p.held {
		if ours && e.uid == answer.GetUID() && e.version == answer.GetResourceVersion() {
			seen++ // drop it
			if e.echo != nil {
				echoed = append(echoed, e)
			}
			continue
		}
		release = append(release, e)
	}
	p.held = nil
	if left := w.filters[key.resource] - seen; ours && left > 0 {
		now := w.clock()
		w.echoes[answer.GetUID()] = echo{version: answer.GetResourceVersion(), at: now, left: left}
		w.pruneLocked(now)
	}
	p.inFlight--
	if p.inFlight > 0 {
		p.held = release // an event may be the echo of another write in flight
		release = nil
	} else {
		delete(w.pending, key)
	}
	w.mu.Unlock()
	for _, e := range echoed {
		e.echo()
	}
	for _, e := range release {
		e.fire()
	}
}

// observe decides about a watch event of obj (of resource): it calls fire
// now, later (held while a write of obj is in flight), or never (the echo of
// the operator's own write: then it calls echo instead, when not nil, now
// or at the write's answer).
func (w *OwnWrites) observe(resource schema.GroupResource, obj any, fire, echo func()) {
	m, err := meta.Accessor(obj)
	if err != nil {
		fire()
		return
	}
	w.mu.Lock()
	if e, ok := w.echoes[m.GetUID()]; ok && e.version == m.GetResourceVersion() {
		if e.left--; e.left > 0 {
			w.echoes[m.GetUID()] = e
		} else {
			delete(w.echoes, m.GetUID())
		}
		w.mu.Unlock()
		if echo != nil {
			echo()
		}
		return
	}
	if p := w.pending[writeKey{resource, m.GetNamespace(), m.GetName()}]; p != nil {
		p.held = append(p.held, heldEvent{uid: m.GetUID(), version: m.GetResourceVersion(), fire: fire, echo: echo})
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	fire()
}

// forget drops what w remembers of the deleted obj (of resource, for one
// handler), and reports whether its delete was the operator's own
// (announced with BeginDelete) and
// immediate: a final state with a deletionTimestamp was held by finalizers
// (or a grace period) after that delete marked it, and is gone by someone
// else's doing since.
func (w *OwnWrites) forget(resource schema.GroupResource, obj any) (ours bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	uid := m.GetUID()
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.echoes, uid)
	d, ours := w.deletes[uid]
	if ours {
		if d.left == 0 { // the first handler to see it
			d.left = w.filters[resource]
		}
		if d.left--; d.left > 0 {
			w.deletes[uid] = d
		} else {
			delete(w.deletes, uid)
		}
	}
	return ours && m.GetDeletionTimestamp() == nil
}

func resourceVersion(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}
