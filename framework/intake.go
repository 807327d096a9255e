package framework

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/go-kit/log/level"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// AddFunc enqueues obj. It is the informer's AddFunc; Boot registers it, and
// it can be used as a drop-in with an informer of one's own.
func (f *Framework) AddFunc(obj any) {
	f.enqueueObject(obj)
}

// UpdateFunc enqueues newObj when the update predicate (Config.UpdatePredicate)
// says the change matters, and, whatever the predicate says, when someone
// else removed the Framework's finalizer from an object that is not being
// deleted, so that it is added back at once (the Framework itself removes
// it only from objects in deletion). A resync (oldObj and newObj at the
// same resourceVersion) of an object whose last reconciliation failed with
// an error that asked for a wait (retry.After, a Retry-After) is not
// enqueued before that wait has passed: the object is requeued at its end
// anyway, and the API that asked for it is not called sooner for nothing
// new. It is the informer's UpdateFunc; Boot registers it, and it can be
// used as a drop-in with an informer of one's own. The worker always
// reconciles the latest object from the cache, never newObj.
func (f *Framework) UpdateFunc(oldObj, newObj any) {
	resyncKey := "" // the key of a resync (same resourceVersion)
	if acc, err := meta.Accessor(newObj); err == nil {
		key, err := cache.MetaNamespaceKeyFunc(newObj)
		if err == nil && f.state.observed(key, acc.GetResourceVersion()) {
			// A reconciliation waited for the cache to show this write.
			f.Enqueue(key)
			return
		}
		old, oldErr := meta.Accessor(oldObj)
		if f.finalizers && acc.GetDeletionTimestamp() == nil && !slices.Contains(acc.GetFinalizers(), f.finalizer) {
			if oldErr == nil && old.GetUID() == acc.GetUID() && slices.Contains(old.GetFinalizers(), f.finalizer) {
				// Until it is back, a delete while the operator is down
				// would be lost.
				f.enqueueObject(newObj)
				return
			}
		}
		if err == nil && oldErr == nil && old.GetResourceVersion() == acc.GetResourceVersion() && validKey(key) {
			resyncKey = key
		}
	}
	if !f.updatePredicate(oldObj, newObj) {
		f.metrics.eventsFiltered.Inc()
		return
	}
	if resyncKey != "" {
		// Enqueue, unless during the wait its last failure asked for
		// (the requeue at the wait's end reconciles it), or while it is
		// reconciled (its end enqueues it, unless it asks for such a
		// wait); resync marks it pending as Enqueue does.
		if f.state.resync(resyncKey) {
			f.add(resyncKey)
		}
		return
	}
	f.enqueueObject(newObj)
}

// DeleteFunc handles the disappearance of an object. With finalizers an
// object is gone only after its delete chain ran, so nothing is left to do;
// an object that vanished without the Framework's finalizer (finalizers
// disabled, or deleted before its first reconciliation) is reconciled once
// more from its last known state, which runs its delete chain, unless the
// API server still has it: an object that only left the informer's view (a
// label selector that no longer matches it) is forgotten, not deleted. It
// accepts cache.DeletedFinalStateUnknown tombstones.
func (f *Framework) DeleteFunc(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		level.Warn(f.logger).Log("msg", "cannot key deleted object", "err", err)
		return
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		level.Warn(f.logger).Log("msg", "deleted object has no metadata", "object", key, "err", err)
		return
	}
	if f.state.finalized(key, acc.GetUID()) || f.state.isReleased(key) {
		// Finalized by this Framework, or released to another owner
		// (Release): nothing is left to do here.
		f.state.forget(key)
		f.metrics.forget(key)
		return
	}
	f.state.setTombstone(key, deleted(obj, acc))
	f.add(key)
}

// deleted returns obj, the last known state of an object that is gone, as
// the delete chain sees it: with a deletionTimestamp (in a copy, the
// informer's object is shared), which an object deleted without finalizers
// never had, so that resources that tell the delete chain by it (as
// resource/child does, to skip Desired) do. An object that is not a
// runtime.Object is returned as it is.
func deleted(obj any, acc metav1.Object) any {
	if acc.GetDeletionTimestamp() != nil {
		return obj
	}
	ro, ok := obj.(runtime.Object)
	if !ok {
		return obj
	}
	cp := ro.DeepCopyObject()
	cacc, err := meta.Accessor(cp)
	if err != nil {
		return obj
	}
	now := metav1.Now()
	cacc.SetDeletionTimestamp(&now)
	return cp
}

// Enqueue asks for a reconciliation of the object with key
// "namespace/name" ("name" for a cluster-scoped object). It is how watches
// on other kinds (children, external systems) wake the owner up. Duplicate
// keys are coalesced. A key that can name no object (empty, an empty
// namespace or name, more than one '/') is dropped with a warning in the
// log that names it, as a bug of the caller. A handler of an informer that
// calls it can skip resyncs and the echoes of the operator's own writes by
// being wrapped in operator.OwnWrites.Filter (as operator.Operator.Owns and
// Watches do).
func (f *Framework) Enqueue(key string) {
	if !validKey(key) {
		level.Warn(f.logger).Log("msg", `Enqueue: key is not "namespace/name" or "name": dropped`, "key", key)
		return
	}
	f.state.markPending(key)
	f.add(key)
}

// validKey reports whether key can name an object: "namespace/name" or
// "name", neither part empty.
func validKey(key string) bool {
	i := strings.IndexByte(key, '/')
	if i < 0 {
		return key != ""
	}
	return i > 0 && i < len(key)-1 && strings.IndexByte(key[i+1:], '/') < 0
}

// Release stops this Framework from reconciling the object key
// ("namespace/name") so that another owner (another replica of a sharded
// operator, see the operator package) can take it over. From the call on,
// no reconciliation of key starts (a queued or rate-limited one is skipped);
// Release returns nil once the reconciliation in flight, if any, has ended
// (one is in flight from before it reads the object from the cache),
// or ctx's error if ctx ends first (key stays released). Only after it
// returned may the object be handed to its next owner.
//
// Key stays released until the object leaves the informer (its delete
// event, as when the shard label that selected it is removed, is then
// forgotten: its delete chain does not run here) or Reclaim is called.
// Idempotent; safe for concurrent use.
func (f *Framework) Release(ctx context.Context, key string) error {
	for {
		idle := f.state.release(key)
		if idle == nil {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Reclaim takes back Release: the object key is this Framework's again and
// is enqueued. The operator package calls it when an object it released
// comes back to this replica before its informer reported it gone. A key
// that was not released is left alone.
func (f *Framework) Reclaim(key string) {
	if f.state.reclaim(key) {
		f.Enqueue(key)
	}
}

// ProcessEvents feeds the seed's event channels (see informer.Watch) into
// the work queue: updates as UpdateFunc without a predicate, deletes as
// DeleteFunc, errors logged and counted. It returns when ctx ends or both
// event channels are closed. Workers run only while Boot runs.
func (f *Framework) ProcessEvents(ctx context.Context, deleteChan, updateChan <-chan watch.Event, errChan <-chan error) {
	for deleteChan != nil || updateChan != nil {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-deleteChan:
			if !ok {
				deleteChan = nil
				continue
			}
			f.DeleteFunc(e.Object)
		case e, ok := <-updateChan:
			if !ok {
				updateChan = nil
				continue
			}
			f.enqueueObject(e.Object)
		case err, ok := <-errChan:
			if !ok {
				errChan = nil
				continue
			}
			f.metrics.watchErrors.Inc()
			level.Warn(f.logger).Log("msg", "watch error", "err", err)
		}
	}
}

func (f *Framework) enqueueObject(obj any) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		level.Warn(f.logger).Log("msg", "cannot key object", "err", err)
		return
	}
	f.Enqueue(key)
}

// DefaultUpdatePredicate reports whether an update event should enqueue the
// object. It is true for periodic resyncs (same resourceVersion), objects
// without generation tracking (generation 0), and changes of generation
// (spec), labels, annotations or deletion state, and of finalizers while
// the object is being deleted. It is false for writes that change none of
// these, such as status updates and the Framework's own finalizer patch, so
// that an operator is not woken up by its own writes.
func DefaultUpdatePredicate(oldObj, newObj any) bool {
	o, err := meta.Accessor(oldObj)
	if err != nil {
		return true
	}
	n, err := meta.Accessor(newObj)
	if err != nil {
		return true
	}
	switch {
	case o.GetResourceVersion() == n.GetResourceVersion():
		return true // resync
	case o.GetUID() != n.GetUID():
		return true // deleted and created again, seen by a relist as an update
	case n.GetGeneration() == 0:
		return true
	case o.GetGeneration() != n.GetGeneration():
		return true
	case (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil):
		return true
	case !maps.Equal(o.GetLabels(), n.GetLabels()), !maps.Equal(o.GetAnnotations(), n.GetAnnotations()):
		return true
	case n.GetDeletionTimestamp() != nil && !slices.Equal(o.GetFinalizers(), n.GetFinalizers()):
		return true
	}
	return false
}
