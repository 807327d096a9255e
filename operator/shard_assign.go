package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log/level"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/workqueue"
)

// assigner is the leader's part in sharding: it watches the member Leases
// and the sharded objects that have no owner yet, and labels each object
// for its owner on the hash ring of the live members (see Sharding).
//
// It caches no assigned object: its memory is that of the objects waiting
// for an owner. When the live members change (and every assignResync) it
// pages through the assigned objects' metadata once (a pass) and queues
// those whose owner is dead or no longer the ring's; the others it forgets
// at once.
type assigner struct {
	s       *sharder
	sources []assignSource
	queue   workqueue.TypedRateLimitingInterface[assignRef]
	passes  chan struct{} // a pass is wanted (buffered: one is enough)

	mu       sync.Mutex
	ring     ring
	members  []string               // live identities, sorted
	observed map[string]observation // by Lease name
	drains   map[assignRef]time.Time
	found    map[assignRef]objectState // assigned objects a pass queued
}

// assignResync is how often the assigner checks every assigned object
// without a change of the members: a safety net for labels changed by
// hand.
const assignResync = 10 * time.Minute

// assignSource is one kind of sharded object: the resource, namespace and
// user selectors of one sharded informer of the replicas, and metadata
// informers of the free objects: those without the shard label, and those
// whose shard label is empty (set by hand or by a template), which no
// replica selects either.
type assignSource struct {
	gvr                       schema.GroupVersionResource
	namespace, labels, fields string
	free                      []cache.SharedIndexInformer
}

// assignKey is the key of si's assign source: its resource, namespace,
// field selector and user's label selector (without the shard label). The
// informers of whole objects and of metadata only of one selection are one
// source.
func (si *sharedInformer) assignKey() informerKey {
	k := si.key
	k.labels, k.metadata = si.userLabels, false
	return k
}

// freeKeys returns the keys of the free objects of src.
func (src assignSource) freeKeys() []string {
	var keys []string
	for _, inf := range src.free {
		keys = append(keys, inf.GetStore().ListKeys()...)
	}
	return keys
}

// freeObject returns the free object key of src, false when none of its
// free informers holds it.
func (src assignSource) freeObject(key string) (any, bool, error) {
	for _, inf := range src.free {
		if obj, ok, err := inf.GetStore().GetByKey(key); ok || err != nil {
			return obj, ok, err
		}
	}
	return nil, false, nil
}

type assignRef struct {
	source int
	key    string
}

// objectState is what the assigner needs to know of an object to move it.
type objectState struct {
	namespace, name, resourceVersion string
	owner                            string // its shard label, "" for none
	// labelled is set when it has the shard label, with an empty value
	// too. A pass lists the labelled objects: one with an empty label is
	// free (a free informer holds it) and is assigned from either.
	labelled bool
	draining bool // it has the drain label
}

// observation is what the assigner saw of a member Lease: its holder, the
// renew time it carried, its duration, and when the assigner saw that
// renew time first (on its own clock, so that clock skew between replicas
// does not matter); owned is the count of objects the member reported
// (OwnedObjectsAnnotation).
//
// A member whose Lease expired on the assigner's clock is live until a
// read of its Lease from the API server (confirmExpired) shows the same
// renew time: dead is set then. The watch alone cannot tell a member that
// stopped renewing from a watch that lags (all its events held back
// alike), and taking a live member for dead would have its objects
// relabelled under it.
type observation struct {
	holder string
	renew  time.Time
	dur    time.Duration
	at     time.Time
	owned  float64
	dead   bool
}

// assign runs the assigner until ctx ends (this replica stopped leading).
func (s *sharder) assign(ctx context.Context) {
	a := &assigner{
		s:        s,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[assignRef]()),
		passes:   make(chan struct{}, 1),
		observed: map[string]observation{},
		drains:   map[assignRef]time.Time{},
		found:    map[assignRef]objectState{},
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer a.queue.ShutDown()
	defer func() {
		// Only the assigner reports these.
		s.metrics.members.Set(0)
		s.metrics.objects.Reset()
	}()

	seen := map[informerKey]bool{}
	synced := []cache.InformerSynced{}
	for _, si := range s.informed {
		k := si.assignKey()
		if seen[k] {
			continue
		}
		seen[k] = true
		src := assignSource{gvr: k.gvr, namespace: k.namespace, labels: si.userLabels, fields: k.fieldsSel}
		i := len(a.sources)
		enqueue := func(obj any) {
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				a.queue.Add(assignRef{source: i, key: key})
			}
		}
		for _, sel := range []string{"!" + s.shardLabel, s.shardLabel + "="} {
			sel := joinSelector(src.labels, sel)
			free := metadatainformer.NewFilteredMetadataInformer(s.assignMD, k.gvr, k.namespace, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
				o.LabelSelector, o.FieldSelector = sel, src.fields
			}).Informer()
			if err := free.SetTransform(stripMetadata); err != nil {
				level.Error(s.logger).Log("msg", "assigner cannot watch", "resource", k.gvr, "err", err)
				return
			}
			if _, err := free.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    enqueue,
				UpdateFunc: func(_, obj any) { enqueue(obj) },
			}); err != nil {
				level.Error(s.logger).Log("msg", "assigner cannot watch", "resource", k.gvr, "err", err)
				return
			}
			src.free = append(src.free, free)
			synced = append(synced, free.HasSynced)
			wg.Go(func() { free.Run(ctx.Done()) })
		}
		a.sources = append(a.sources, src)
	}
	leases := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = RingLabel + "=" + s.cfg.Ring
			return s.kube.CoordinationV1().Leases(s.namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = RingLabel + "=" + s.cfg.Ring
			return s.kube.CoordinationV1().Leases(s.namespace).Watch(ctx, o)
		},
	}, &coordinationv1.Lease{}, 0, cache.Indexers{})
	if _, err := leases.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.observe(obj) },
		UpdateFunc: func(_, obj any) { a.observe(obj) },
		DeleteFunc: func(obj any) { a.forgetLease(obj) },
	}); err != nil {
		level.Error(s.logger).Log("msg", "assigner cannot watch the member Leases", "err", err)
		return
	}
	synced = append(synced, leases.HasSynced)
	wg.Go(func() { leases.Run(ctx.Done()) })
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	level.Info(s.logger).Log("msg", "assigning objects to the replicas", "ring", s.cfg.Ring, "sources", len(a.sources))
	a.confirmExpired(ctx)
	a.refresh()
	for range s.cfg.AssignWorkers {
		wg.Go(func() {
			for a.next(ctx) {
			}
		})
	}
	wg.Go(func() { a.runPasses(ctx) })
	t := time.NewTicker(s.retry)
	defer t.Stop()
	for {
		a.count()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.confirmExpired(ctx)
			a.refresh()
		}
	}
}

// stripMetadata keeps of a free object's metadata what the assigner reads:
// a burst of new objects costs it little memory while they wait.
func stripMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Labels: m.Labels,
	}}, nil
}

// joinSelector joins two label selectors.
func joinSelector(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "," + b
}

// observe records a member Lease's renew time.
func (a *assigner) observe(obj any) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil {
		return
	}
	dur := a.s.leaseDur
	if l.Spec.LeaseDurationSeconds != nil {
		dur = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	owned, _ := strconv.ParseFloat(l.Annotations[OwnedObjectsAnnotation], 64)
	now := time.Now()
	renew := l.Spec.RenewTime.Time
	a.mu.Lock()
	prev, ok := a.observed[l.Name]
	switch {
	case ok && prev.renew.Equal(renew) && prev.holder == *l.Spec.HolderIdentity:
		// Not renewed since: keep the time it was first seen.
		prev.owned = owned
		a.observed[l.Name] = prev
	case !ok && renew.Before(now):
		// First seen (this replica just started assigning): its age is
		// the renew time's, so that the Lease of a replica that died with
		// the previous assigner expires on time. Safe while the clocks
		// of the replicas agree within LeaseDuration - RenewDeadline: the
		// holder stopped RenewDeadline after that renew, on its own clock.
		a.observed[l.Name] = observation{holder: *l.Spec.HolderIdentity, renew: renew, dur: dur, at: renew, owned: owned}
	default:
		// Renewed: alive for dur from now, on this replica's clock.
		a.observed[l.Name] = observation{holder: *l.Spec.HolderIdentity, renew: renew, dur: dur, at: now, owned: owned}
	}
	a.mu.Unlock()
	a.refresh()
}

// confirmExpired reads from the API server each member Lease that expired
// on the assigner's clock and is not known dead yet: one that still carries
// the renew time observed is dead, and deleted (deleteDead); one renewed
// since (the watch lags) is observed renewed, and its member stays live. A
// Lease that cannot be read keeps its member live: nothing moves on a
// guess.
func (a *assigner) confirmExpired(ctx context.Context) {
	now := time.Now()
	a.mu.Lock()
	var expired []string
	for name, o := range a.observed {
		if !o.dead && now.Sub(o.at) > o.dur {
			expired = append(expired, name)
		}
	}
	a.mu.Unlock()
	for _, name := range expired {
		rctx, cancel := context.WithTimeout(ctx, a.s.renewDL)
		l, err := a.s.kube.CoordinationV1().Leases(a.s.namespace).Get(rctx, name, metav1.GetOptions{})
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			a.forgetLease(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}})
		case err != nil:
			if ctx.Err() == nil {
				level.Warn(a.s.logger).Log("msg", "cannot read an expired member Lease: its member stays in the ring", "lease", a.s.namespace+"/"+name, "err", err)
			}
		default:
			a.mu.Lock()
			o, ok := a.observed[name]
			held := l.Spec.HolderIdentity != nil && l.Spec.RenewTime != nil
			same := ok && (!held || o.holder == *l.Spec.HolderIdentity && o.renew.Equal(l.Spec.RenewTime.Time))
			if same {
				o.dead = true
				a.observed[name] = o
			}
			a.mu.Unlock()
			if !same {
				a.observe(l) // renewed since the watch last told
				continue
			}
			a.deleteDead(ctx, l)
		}
	}
}

// deleteDead deletes the member Lease l of a dead member, as read: a
// replica that died (killed, its node lost) cannot delete its own, and
// with the default identities every such death would leave one more Lease
// in the namespace for good. Its objects move as when it expired: they are
// labelled for a member that is not live. A Lease renewed or taken over
// since it was read (another instance of the identity) stays.
func (a *assigner) deleteDead(ctx context.Context, l *coordinationv1.Lease) {
	rctx, cancel := context.WithTimeout(ctx, a.s.renewDL)
	defer cancel()
	pre := &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}
	err := a.s.kube.CoordinationV1().Leases(a.s.namespace).Delete(rctx, l.Name, metav1.DeleteOptions{Preconditions: pre})
	switch {
	case err == nil:
		level.Info(a.s.logger).Log("msg", "deleted the member Lease of a dead replica", "lease", a.s.namespace+"/"+l.Name)
	case apierrors.IsNotFound(err), apierrors.IsConflict(err), ctx.Err() != nil:
	default:
		level.Warn(a.s.logger).Log("msg", "cannot delete the member Lease of a dead replica", "lease", a.s.namespace+"/"+l.Name, "err", err)
	}
}

// forgetLease drops a deleted member Lease: its replica left the ring.
func (a *assigner) forgetLease(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	a.mu.Lock()
	delete(a.observed, l.Name)
	a.mu.Unlock()
	a.refresh()
}

// refresh recomputes the live members (those not known dead, see
// observation); when they changed it rebuilds the
// ring, queues the free objects and asks for a pass over the assigned ones.
func (a *assigner) refresh() {
	a.mu.Lock()
	var live []string
	for _, o := range a.observed {
		if !o.dead && !slices.Contains(live, o.holder) {
			live = append(live, o.holder)
		}
	}
	slices.Sort(live)
	changed := !slices.Equal(live, a.members) || (len(a.ring.points) == 0 && len(live) > 0)
	if changed {
		a.members = live
		a.ring = newRing(live, a.s.cfg.VirtualNodes)
	}
	a.mu.Unlock()
	if !changed {
		return
	}
	a.s.metrics.members.Set(float64(len(live)))
	level.Info(a.s.logger).Log("msg", "ring members changed: reassigning", "ring", a.s.cfg.Ring, "members", len(live), "live", joinShort(live))
	for i, src := range a.sources {
		for _, key := range src.freeKeys() {
			a.queue.Add(assignRef{source: i, key: key})
		}
	}
	a.requestPass()
}

// requestPass asks runPasses for a pass; one asked for while another runs
// follows it.
func (a *assigner) requestPass() {
	select {
	case a.passes <- struct{}{}:
	default:
	}
}

// runPasses runs a pass when one is asked for, every assignResync, and
// again after RetryPeriod when one failed, until ctx ends.
func (a *assigner) runPasses(ctx context.Context) {
	t := time.NewTimer(assignResync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.passes:
		case <-t.C:
		}
		if err := a.pass(ctx); err != nil && ctx.Err() == nil {
			level.Warn(a.s.logger).Log("msg", "cannot check the assigned objects: trying again", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(a.s.retry):
			}
			a.requestPass()
		}
		t.Reset(assignResync)
	}
}

// pass pages through the metadata of every assigned object and queues those
// that must move (see decide). It returns the first error of a list.
func (a *assigner) pass(ctx context.Context) error {
	start := time.Now()
	draining := map[assignRef]bool{}
	queued, total := 0, 0
	for i, src := range a.sources {
		p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector, o.FieldSelector = joinSelector(src.labels, a.s.shardLabel), src.fields
			return a.s.assignMD.Resource(src.gvr).Namespace(src.namespace).List(ctx, o)
		})
		err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			m, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return nil
			}
			total++
			ref := assignRef{source: i, key: cache.NewObjectName(m.Namespace, m.Name).String()}
			st := stateOf(m, a.s.shardLabel, a.s.drainLabel)
			if st.draining {
				draining[ref] = true
			}
			if !st.labelled || a.decide(st) == keep {
				return nil // free (the free informer's), or where it belongs
			}
			a.mu.Lock()
			a.found[ref] = st
			a.mu.Unlock()
			a.queue.Add(ref)
			queued++
			return nil
		})
		if err != nil {
			return fmt.Errorf("list %s: %w", src.gvr.Resource, err)
		}
	}
	// Drains whose objects are gone (deleted while draining). One that is
	// free is handed over, not gone: its drain times the hand-over, and
	// counts the move, when it is labelled for its new owner.
	a.mu.Lock()
	for ref, t := range a.drains {
		if draining[ref] || !t.Before(start) {
			continue
		}
		if _, free, _ := a.sources[ref.source].freeObject(ref.key); !free {
			delete(a.drains, ref)
		}
	}
	a.mu.Unlock()
	level.Debug(a.s.logger).Log("msg", "checked the assigned objects", "objects", total, "to move", queued, "took", time.Since(start))
	return nil
}

// stateOf reads what the assigner needs from m.
func stateOf(m *metav1.PartialObjectMetadata, shardLabel, drainLabel string) objectState {
	_, draining := m.Labels[drainLabel]
	owner, labelled := m.Labels[shardLabel]
	return objectState{namespace: m.Namespace, name: m.Name, resourceVersion: m.ResourceVersion, owner: owner, labelled: labelled, draining: draining}
}

// count sets the objects-per-shard gauge: the free objects, and each live
// member's share as it reports it on its Lease.
func (a *assigner) count() {
	free := 0
	for _, src := range a.sources {
		free += len(src.freeKeys())
	}
	a.s.metrics.objects.Reset()
	a.s.metrics.objects.WithLabelValues("").Set(float64(free))
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, o := range a.observed {
		if slices.Contains(a.members, o.holder) {
			a.s.metrics.objects.WithLabelValues(o.holder).Set(o.owned)
		}
	}
}

// next assigns one object; it returns false when the queue shut down.
func (a *assigner) next(ctx context.Context) bool {
	ref, shutdown := a.queue.Get()
	if shutdown {
		return false
	}
	defer a.queue.Done(ref)
	err := a.assignOne(ctx, ref)
	if apierrors.IsConflict(err) {
		// The object changed since it was read. A free one: the watch
		// event of that change queues it again. One a pass found: read
		// it again.
		a.queue.Forget(ref)
		err = a.reread(ctx, ref)
	}
	switch {
	case err == nil || ctx.Err() != nil:
		a.queue.Forget(ref)
	default:
		level.Warn(a.s.logger).Log("msg", "cannot assign object", "object", ref.key, "resource", a.sources[ref.source].gvr.Resource, "err", err)
		a.queue.AddRateLimited(ref)
	}
	return true
}

// reread reads an object a pass found again after a conflict, and queues it
// if it must still move.
func (a *assigner) reread(ctx context.Context, ref assignRef) error {
	a.mu.Lock()
	st, ok := a.found[ref]
	a.mu.Unlock()
	if !ok {
		return nil
	}
	src := a.sources[ref.source]
	m, err := a.s.assignMD.Resource(src.gvr).Namespace(st.namespace).Get(ctx, st.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		a.forget(ref, false)
		return nil
	case err != nil:
		return err
	}
	st = stateOf(m, a.s.shardLabel, a.s.drainLabel)
	if !st.labelled || a.decide(st) == keep {
		a.forget(ref, false)
		return nil
	}
	a.mu.Lock()
	a.found[ref] = st
	a.mu.Unlock()
	a.queue.Add(ref)
	return nil
}

// forget drops what the assigner holds of ref; with drain, its drain too.
func (a *assigner) forget(ref assignRef, drain bool) {
	a.mu.Lock()
	delete(a.found, ref)
	if drain {
		delete(a.drains, ref)
	}
	a.mu.Unlock()
}

// action is what the assigner does to an object.
type action int

const (
	keep     action = iota // nothing: with its owner, or no live member
	label                  // free, or its owner is dead: label it for the ring's owner
	drain                  // its live owner is not the ring's: ask it to hand it over
	takeBack               // drained from the ring's owner: take the drain back
)

// decide returns what to do to an object in state st, on the current ring.
func (a *assigner) decide(st objectState) action {
	_, act := a.decideFor(st)
	return act
}

func (a *assigner) decideFor(st objectState) (string, action) {
	hashKey := cache.NewObjectName(st.namespace, st.name).String()
	if a.s.cfg.ByNamespace {
		hashKey = st.namespace
	}
	a.mu.Lock()
	desired := a.ring.get(hashKey)
	alive := st.owner != "" && slices.Contains(a.members, st.owner)
	a.mu.Unlock()
	switch {
	case desired == "":
		return "", keep
	case st.owner == desired && st.draining:
		return desired, takeBack
	case st.owner == desired:
		return desired, keep
	case !alive:
		return desired, label
	case !st.draining:
		return desired, drain
	}
	return desired, keep // draining: its owner hands it over
}

// assignOne moves the object ref towards its owner on the ring (decide):
// a free object, or one whose owner's Lease expired, is labelled for it;
// one whose live owner is not the ring's is drained (its owner hands it
// over, see handOver, and it comes back free). Every write carries the
// resourceVersion read, so a decision taken on a stale read fails with a
// conflict instead of overwriting.
func (a *assigner) assignOne(ctx context.Context, ref assignRef) error {
	src := a.sources[ref.source]
	var st objectState
	obj, free, err := src.freeObject(ref.key)
	if err != nil {
		return err
	}
	if free {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return nil
		}
		st = stateOf(m, a.s.shardLabel, a.s.drainLabel)
	} else {
		a.mu.Lock()
		found, ok := a.found[ref]
		a.mu.Unlock()
		if !ok {
			return nil // assigned since, or gone
		}
		st = found
	}
	desired, act := a.decideFor(st)
	switch act {
	case keep:
		a.forget(ref, false)
	case takeBack:
		// The ring changed back before the owner handed the object over:
		// take the drain back (the owner's hand-over then fails its test
		// and it keeps the object).
		if err := a.patch(ctx, src.gvr, st, map[string]any{a.s.drainLabel: nil}); err != nil {
			return err
		}
		a.forget(ref, true)
		level.Debug(a.s.logger).Log("msg", "drain taken back", "object", ref.key, "resource", src.gvr.Resource, "owner", st.owner)
	case label:
		// Free (new, or handed over), or its owner's Lease expired: the
		// owner reconciles it no more.
		if err := a.patch(ctx, src.gvr, st, map[string]any{a.s.shardLabel: desired, a.s.drainLabel: nil}); err != nil {
			return err
		}
		a.mu.Lock()
		drainStart, drained := a.drains[ref]
		a.mu.Unlock()
		if st.owner != "" || drained {
			a.s.metrics.moves.Inc()
		}
		if drained {
			a.s.metrics.handover.Observe(time.Since(drainStart).Seconds())
		}
		a.forget(ref, true)
		level.Debug(a.s.logger).Log("msg", "assigned object", "object", ref.key, "resource", src.gvr.Resource, "shard", desired, "from", st.owner)
	case drain:
		if err := a.patch(ctx, src.gvr, st, map[string]any{a.s.drainLabel: "true"}); err != nil {
			return err
		}
		a.mu.Lock()
		delete(a.found, ref)
		if _, ok := a.drains[ref]; !ok {
			a.drains[ref] = time.Now()
		}
		a.mu.Unlock()
		level.Debug(a.s.logger).Log("msg", "draining object", "object", ref.key, "resource", src.gvr.Resource, "from", st.owner, "to", desired)
	}
	return nil
}

// patch merge-patches the labels of the object st, conditional on its
// resourceVersion. An object that is gone is not an error.
func (a *assigner) patch(ctx context.Context, gvr schema.GroupVersionResource, st objectState, labels map[string]any) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": st.resourceVersion, "labels": labels}})
	if err != nil {
		return err
	}
	_, err = a.s.assignMD.Resource(gvr).Namespace(st.namespace).Patch(ctx, st.name, types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// joinShort lists at most 10 members for a log line.
func joinShort(members []string) string {
	if len(members) > 10 {
		return strings.Join(members[:10], ",") + ",..."
	}
	return strings.Join(members, ",")
}
