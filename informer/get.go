package informer

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/internal/nilptr"
)

// ErrWrongType is matched by the error [Get] returns when the cached object
// is not of the type asked for.
var ErrWrongType = errors.New("cached object of another type")

// Getter is the part of an informer that [Get] reads: [Interface] (so
// *Informer, *operator.SharedInformer and informertest.Informer) has it.
type Getter interface {
	// Get returns the cached object with the key "namespace/name" (just
	// "name" for a cluster-scoped object); exists is false when there is
	// none. It must not call the API server. The object belongs to the
	// cache.
	Get(key string) (obj any, exists bool, err error)
}

// Get returns the object namespace/name of inf's cache as a T: a typed
// read of an object that a resource refers to (a Secret named in its
// owner's spec, woken through operator.Operator.References), without a
// hand-built key or a type assertion:
//
//	secret, ok, err := informer.Get[*corev1.Secret](secrets, b.Namespace, b.Spec.SecretName)
//
// The key is "namespace/name", or "name" alone when namespace is empty (a
// cluster-scoped object). exists is false, with the zero T, when the cache
// has no such object; before the informer has synced that may only mean
// it has not been listed yet (operator.Operator.Run boots the
// Frameworks once its shared informers synced).
//
// T is the type that inf caches (see [Informer.Get]): ObjectType's type
// with Config.RESTConfig or Config.RESTClient, *metav1.PartialObjectMetadata
// for a metadata-only informer, *unstructured.Unstructured with
// Config.Client (or use a [ConvertTo] transform to cache a Go type), or
// what Config.Transform returns. A cached object of another type (also an
// object of a custom resource that ObjectType could not hold, which the
// typed path caches unstructured) is not converted: Get returns the zero T,
// exists true, and an error matching [ErrWrongType] that names the
// informer's resource (when inf has a GVR method, as *Informer and
// *operator.SharedInformer have), the key and both types. An error of
// inf.Get is returned wrapped, with the resource and the key. A nil inf
// (or a nil pointer in it: an informer never made) is an error matching
// [ErrInvalidConfig] that names the key, not a panic.
//
// The object belongs to the cache, as with [Informer.Get]: never modify
// it; DeepCopy it first. Get makes no API request.
func Get[T runtime.Object](inf Getter, namespace, name string) (obj T, exists bool, err error) {
	key := cache.NewObjectName(namespace, name).String()
	if nilptr.Is(inf) { // its Get would dereference it
		return obj, false, fmt.Errorf("%w: get %s: the informer is nil (%T)", ErrInvalidConfig, key, inf)
	}
	o, exists, err := inf.Get(key)
	if err != nil {
		return obj, exists, fmt.Errorf("get %s %s: %w", resourceOf(inf), key, err)
	}
	if !exists {
		return obj, false, nil
	}
	t, ok := o.(T)
	if !ok {
		return obj, true, fmt.Errorf("get %s %s: the cache holds a %T, not a %v: %w", resourceOf(inf), key, o, reflect.TypeFor[T](), ErrWrongType)
	}
	return t, true, nil
}

// resourceOf names inf's resource for an error: its GroupResource
// ("secrets", "backups.example.com") when it has a GVR method, else its Go
// type.
func resourceOf(inf any) string {
	if g, ok := inf.(gvrOf); ok {
		return g.GVR().GroupResource().String()
	}
	return fmt.Sprintf("%T", inf)
}

// gvrOf is implemented by *Informer and *operator.SharedInformer.
type gvrOf interface {
	GVR() schema.GroupVersionResource
}
