package operator

import (
	"context"
	"encoding/json"
	"slices"
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
	"k8s.io/client-go/util/workqueue"
)

// assigner is the leader's part in sharding: it watches the member Leases
// and the metadata of every sharded object, and labels each object for its
// owner on the hash ring of the live members (see Sharding).
type assigner struct {
	s       *sharder
	sources []assignSource
	queue   workqueue.TypedRateLimitingInterface[assignRef]

	mu       sync.Mutex
	ring     ring
	members  []string               // live identities, sorted
	observed map[string]observation // by Lease name
	drains   map[assignRef]time.Time
}

// assignSource is one metadata informer of sharded objects: the resource,
// namespace and user selectors of one sharded informer of the replicas.
type assignSource struct {
	gvr schema.GroupVersionResource
	inf cache.SharedIndexInformer
}

type assignRef struct {
	source int
	key    string
}

// observation is what the assigner saw of a member Lease: its holder, the
// renew time it carried, its duration, and when the assigner saw that
// renew time first (on its own clock, so that clock skew between replicas
// does not matter).
type observation struct {
	holder string
	renew  time.Time
	dur    time.Duration
	at     time.Time
}

// assign runs the assigner until ctx ends (this replica stopped leading).
func (s *sharder) assign(ctx context.Context) {
	a := &assigner{
		s:        s,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[assignRef]()),
		observed: map[string]observation{},
		drains:   map[assignRef]time.Time{},
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
		k := si.key
		k.labels = si.userLabels
		if seen[k] {
			continue
		}
		seen[k] = true
		labels, fields := si.userLabels, k.fieldsSel
		inf := metadatainformer.NewFilteredMetadataInformer(s.assignMD, k.gvr, k.namespace, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
			o.LabelSelector, o.FieldSelector = labels, fields
		}).Informer()
		src := len(a.sources)
		a.sources = append(a.sources, assignSource{gvr: k.gvr, inf: inf})
		enqueue := func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				a.queue.Add(assignRef{source: src, key: key})
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
			UpdateFunc: func(_, obj any) { enqueue(obj) },
			DeleteFunc: enqueue,
		}); err != nil {
			level.Error(s.logger).Log("msg", "assigner cannot watch", "resource", k.gvr, "err", err)
			return
		}
		synced = append(synced, inf.HasSynced)
		wg.Go(func() { inf.Run(ctx.Done()) })
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
	a.refresh()
	for range s.cfg.AssignWorkers {
		wg.Go(func() {
			for a.next(ctx) {
			}
		})
	}
	t := time.NewTicker(s.retry)
	defer t.Stop()
	for {
		a.count()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.refresh()
		}
	}
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
	now := time.Now()
	renew := l.Spec.RenewTime.Time
	a.mu.Lock()
	prev, ok := a.observed[l.Name]
	switch {
	case ok && prev.renew.Equal(renew) && prev.holder == *l.Spec.HolderIdentity:
		// Not renewed since: keep the time it was first seen.
	case !ok && renew.Before(now):
		// First seen (this replica just started assigning): its age is
		// the renew time's, so that the Lease of a replica that died with
		// the previous assigner expires on time. Safe while the clocks
		// of the replicas agree within LeaseDuration - RenewDeadline: the
		// holder stopped RenewDeadline after that renew, on its own clock.
		a.observed[l.Name] = observation{holder: *l.Spec.HolderIdentity, renew: renew, dur: dur, at: renew}
	default:
		// Renewed: alive for dur from now, on this replica's clock.
		a.observed[l.Name] = observation{holder: *l.Spec.HolderIdentity, renew: renew, dur: dur, at: now}
	}
	a.mu.Unlock()
	a.refresh()
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

// refresh recomputes the live members; when they changed it rebuilds the
// ring and enqueues every object.
func (a *assigner) refresh() {
	now := time.Now()
	a.mu.Lock()
	var live []string
	for _, o := range a.observed {
		if now.Sub(o.at) <= o.dur && !slices.Contains(live, o.holder) {
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
		for _, key := range src.inf.GetStore().ListKeys() {
			a.queue.Add(assignRef{source: i, key: key})
		}
	}
}

// count sets the objects-per-shard gauge.
func (a *assigner) count() {
	counts := map[string]int{}
	for _, src := range a.sources {
		for _, obj := range src.inf.GetStore().List() {
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				counts[m.Labels[a.s.shardLabel]]++
			}
		}
	}
	a.s.metrics.objects.Reset()
	for shard, n := range counts {
		a.s.metrics.objects.WithLabelValues(shard).Set(float64(n))
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
	switch {
	case err == nil || ctx.Err() != nil:
		a.queue.Forget(ref)
	case apierrors.IsConflict(err):
		// The object changed since the cache showed it: the watch event
		// of that change enqueues it again (while it is processed, Add
		// marks it to be processed once more), without backoff.
		a.queue.Forget(ref)
	default:
		level.Warn(a.s.logger).Log("msg", "cannot assign object", "object", ref.key, "resource", a.sources[ref.source].gvr.Resource, "err", err)
		a.queue.AddRateLimited(ref)
	}
	return true
}

// assignOne moves the object ref towards its owner on the ring: an object
// without a live owner is labelled for it; an object whose live owner is
// not the ring's is drained (its owner hands it over, see handOver). Every
// write carries the resourceVersion read, so a decision taken on a stale
// cache fails with a conflict instead of overwriting.
func (a *assigner) assignOne(ctx context.Context, ref assignRef) error {
	src := a.sources[ref.source]
	obj, exists, err := src.inf.GetStore().GetByKey(ref.key)
	if err != nil {
		return err
	}
	if !exists {
		a.mu.Lock()
		delete(a.drains, ref)
		a.mu.Unlock()
		return nil
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil
	}
	owner := m.Labels[a.s.shardLabel]
	_, draining := m.Labels[a.s.drainLabel]
	hashKey := ref.key
	if a.s.cfg.ByNamespace {
		hashKey = m.Namespace
	}
	a.mu.Lock()
	desired := a.ring.get(hashKey)
	alive := owner != "" && slices.Contains(a.members, owner)
	drainStart, drained := a.drains[ref]
	a.mu.Unlock()
	switch {
	case desired == "":
		return nil
	case owner == desired:
		if !draining {
			return nil
		}
		// The ring changed back before the owner handed the object over:
		// take the drain back (the owner's hand-over then fails its test
		// and it keeps the object).
		if err := a.patch(ctx, src.gvr, m, map[string]any{a.s.drainLabel: nil}); err != nil {
			return err
		}
		a.mu.Lock()
		delete(a.drains, ref)
		a.mu.Unlock()
		level.Debug(a.s.logger).Log("msg", "drain taken back", "object", ref.key, "resource", src.gvr.Resource, "owner", owner)
		return nil
	case !alive:
		// Free (new, or handed over), or its owner's Lease expired: the
		// owner reconciles it no more.
		if err := a.patch(ctx, src.gvr, m, map[string]any{a.s.shardLabel: desired, a.s.drainLabel: nil}); err != nil {
			return err
		}
		if owner != "" || drained {
			a.s.metrics.moves.Inc()
		}
		if drained {
			a.s.metrics.handover.Observe(time.Since(drainStart).Seconds())
		}
		a.mu.Lock()
		delete(a.drains, ref)
		a.mu.Unlock()
		level.Debug(a.s.logger).Log("msg", "assigned object", "object", ref.key, "resource", src.gvr.Resource, "shard", desired, "from", owner)
		return nil
	case !draining:
		if err := a.patch(ctx, src.gvr, m, map[string]any{a.s.drainLabel: "true"}); err != nil {
			return err
		}
		a.mu.Lock()
		if _, ok := a.drains[ref]; !ok {
			a.drains[ref] = time.Now()
		}
		a.mu.Unlock()
		level.Debug(a.s.logger).Log("msg", "draining object", "object", ref.key, "resource", src.gvr.Resource, "from", owner, "to", desired)
	}
	return nil
}

// patch merge-patches the labels of m, conditional on its resourceVersion.
// An object that is gone is not an error.
func (a *assigner) patch(ctx context.Context, gvr schema.GroupVersionResource, m *metav1.PartialObjectMetadata, labels map[string]any) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": m.ResourceVersion, "labels": labels}})
	if err != nil {
		return err
	}
	_, err = a.s.assignMD.Resource(gvr).Namespace(m.Namespace).Patch(ctx, m.Name, types.MergePatchType, body, metav1.PatchOptions{})
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
