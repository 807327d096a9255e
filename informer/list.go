package informer

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/internal/nilptr"
)

// Lister is the part of an informer that [List] reads: *Informer,
// *operator.SharedInformer and informertest.Informer have it.
type Lister interface {
	// List returns every cached object, in no particular order. The
	// objects belong to the cache.
	List() []any
}

// List returns the objects of inf's cache in namespace whose labels
// selector matches, as Ts, sorted by namespace and name: the pods of a
// Deployment (its namespace and spec.selector), read from a cache with no
// API request, as controller-runtime's client.List with InNamespace and
// MatchingLabels reads its cache:
//
//	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
//	... // err: an invalid selector
//	list, err := informer.List[*metav1.PartialObjectMetadata](pods, d.Namespace, selector)
//
// An empty namespace lists every namespace (and is the one to give for a
// cluster-scoped kind); a nil selector matches every object. An informer
// with a namespace index (*Informer, *operator.SharedInformer: client-go's
// cache.NamespaceIndex) is read through it, so the cost is that of the
// namespace's objects, not the cache's; any other Lister is scanned whole.
// The result holds only what the cache holds: the informer's own namespace
// and label selector (Config.Namespace, Config.LabelSelector) come first,
// and a selector that asks for labels the informer filtered out finds
// nothing.
//
// T is the type that inf caches, as for [Get]: a cached object of another
// type is not converted; List returns nil and an error matching
// [ErrWrongType] that names the informer's resource, the object and both
// types. A nil inf (or a nil pointer in it) is an error matching
// [ErrInvalidConfig], not a panic. The objects belong to the cache: never
// modify them; DeepCopy them first.
func List[T runtime.Object](inf Lister, namespace string, selector labels.Selector) ([]T, error) {
	if nilptr.Is(inf) {
		return nil, fmt.Errorf("%w: list %s: the informer is nil (%T)", ErrInvalidConfig, reflect.TypeFor[T](), inf)
	}
	var objs []any
	if i, ok := inf.(interface {
		SharedIndexInformer() cache.SharedIndexInformer
	}); ok && namespace != "" && !nilptr.Is(i.SharedIndexInformer()) {
		indexer := i.SharedIndexInformer().GetIndexer()
		byNamespace, err := indexer.ByIndex(cache.NamespaceIndex, namespace)
		if err != nil { // no namespace index: scan
			byNamespace = indexer.List()
		}
		objs = byNamespace
	} else {
		objs = inf.List()
	}
	if selector == nil {
		selector = labels.Everything()
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, fmt.Errorf("list %s: %T: %w", resourceOf(inf), o, err)
		}
		if namespace != "" && m.GetNamespace() != namespace || !selector.Matches(labels.Set(m.GetLabels())) {
			continue
		}
		t, ok := o.(T)
		if !ok {
			key := cache.NewObjectName(m.GetNamespace(), m.GetName()).String()
			return nil, fmt.Errorf("list %s: %s: the cache holds a %T, not a %v: %w", resourceOf(inf), key, o, reflect.TypeFor[T](), ErrWrongType)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b T) int {
		ma, _ := meta.Accessor(a)
		mb, _ := meta.Accessor(b)
		return cmp.Or(cmp.Compare(ma.GetNamespace(), mb.GetNamespace()), cmp.Compare(ma.GetName(), mb.GetName()))
	})
	return out, nil
}
