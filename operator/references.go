package operator

import (
	"fmt"
	"sync/atomic"

	"github.com/go-kit/log/level"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/framework"
)

// References makes f reconcile its objects that refer to an object of
// source whenever that object is added, changed or deleted: a Backup whose
// spec names a Secret, when that Secret appears, changes or goes. refs
// returns, for one of f's objects, the keys of the source objects it refers
// to ("namespace/name", or "name" for a cluster-scoped kind; a key that is
// not of that form never matches). References keeps those keys in an index
// of f's informer, so that an event of source finds the objects that refer
// to it with one index lookup, as controller-runtime's field indexes do.
// The reconciliation reads the object it refers to from source with
// informer.Get (typed, by namespace and name), and a child whose pods read
// it can carry child.Checksum of its data in its pod template.
//
// refs is called by f's informer for each object it stores (not for an
// event of source): it must be fast, must not block, and must not change
// the object; it gets the informer's object type (ObjectType's, with the
// typed path). A panic in refs is recovered and logged, and the object is
// then indexed as referring to nothing. An object that refers to another
// object later (its spec changed) is reconciled for that change anyway,
// and the index follows it.
//
// source may be metadata-only (Informer with ObjectType
// &metav1.PartialObjectMetadata{}): only the key of its objects is read,
// so refs is the same either way; the predicates then get
// *metav1.PartialObjectMetadata, as for Watches.
//
// Events of source are filtered as for Watches (resyncs; the echo of the
// operator's own write or delete of an object wakes the objects that refer
// to it but its controller), and every predicate given must return true; a nil
// predicate is ErrInvalidConfig. f's informer must come from
// Operator.Informer (or have a SharedIndexInformer method); otherwise the
// error matches ErrInvalidConfig. It is called before Run.
func (o *Operator) References(f *framework.Framework, source *SharedInformer, refs func(obj any) []string, predicates ...Predicate) error {
	if f == nil || source == nil || refs == nil {
		return fmt.Errorf("%w: References: framework, source and refs must not be nil", ErrInvalidConfig)
	}
	inf, ok := f.Informer().(interface {
		SharedIndexInformer() cache.SharedIndexInformer
	})
	if !ok {
		return fmt.Errorf("%w: References of %s: the Framework's informer %T has no SharedIndexInformer to index its objects by what they refer to (give it one from Operator.Informer)",
			ErrInvalidConfig, source.gvr, f.Informer())
	}
	o.mu.Lock()
	started := o.started
	o.mu.Unlock()
	if started {
		return ErrAlreadyStarted
	}
	index := fmt.Sprintf("operatorkit.io/references/%d/%s", referenceIndexes.Add(1), source.gvr.GroupResource())
	logger := o.logger
	err := inf.SharedIndexInformer().AddIndexers(cache.Indexers{index: func(obj any) (keys []string, err error) {
		defer func() {
			if v := recover(); v != nil {
				level.Error(logger).Log("msg", "References: refs panicked; the object refers to nothing", "resource", source.gvr.GroupResource(), "object", keyOf(obj), "panic", fmt.Sprint(v))
				keys, err = nil, nil
			}
		}()
		return refs(obj), nil
	}})
	if err != nil {
		return fmt.Errorf("references to %s: index the Framework's objects: %w", source.gvr, err)
	}
	return o.Watches(f, source, referrers(inf.SharedIndexInformer().GetIndexer(), index), predicates...)
}

// referenceIndexes numbers the indexes References adds, so that two calls
// (two kinds of reference to one source, or one Framework's informer
// shared by two Frameworks) never add an index of the same name.
var referenceIndexes atomic.Int64

// referrers returns Watches' map function of References: the keys of the
// objects that index holds under the key of the source object given.
func referrers(indexer cache.Indexer, index string) func(obj any) []string {
	return func(obj any) []string {
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err != nil {
			return nil
		}
		objs, err := indexer.ByIndex(index, key)
		if err != nil || len(objs) == 0 {
			return nil
		}
		keys := make([]string, 0, len(objs))
		for _, r := range objs {
			if k, err := cache.MetaNamespaceKeyFunc(r); err == nil {
				keys = append(keys, k)
			}
		}
		return keys
	}
}

// keyOf is the key of obj for a log line, or "" when it has none.
func keyOf(obj any) string {
	key, _ := cache.MetaNamespaceKeyFunc(obj)
	return key
}
