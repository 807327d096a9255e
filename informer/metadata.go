package informer

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/internal/scope"
)

// metadataOnly reports whether objType asks for a metadata-only informer:
// it is a *metav1.PartialObjectMetadata (see Config.ObjectType).
func metadataOnly(objType runtime.Object) bool {
	_, ok := objType.(*metav1.PartialObjectMetadata)
	return ok
}

// metadataKind is the kind of the objects of a metadata-only informer,
// which the API server does not send (each object comes as a
// PartialObjectMetadata of meta.k8s.io/v1): its transform sets it on every
// object before it is cached, so that the cache holds objects that carry
// the apiVersion and kind of their resource, as the typed path's do.
//
// It is known in New when Config.ObjectType's TypeMeta names it or when GVR
// is a resource of client-go's scheme; otherwise the first list or watch
// reads it from the API server's discovery (one request, retried with the
// list's backoff until it succeeds).
type metadataKind struct {
	gvr       schema.GroupVersionResource
	discovery scope.Discovery // nil when the kind was known in New
	kind      atomic.Pointer[schema.GroupVersionKind]
	mu        sync.Mutex // serializes discoveries
}

// newMetadataKind returns the kind of gvr's objects for a metadata-only
// informer whose Config.ObjectType is objType, or an error naming the
// field when objType's TypeMeta is not of gvr's group version.
// newDiscovery returns the informer's discovery client (the one its
// scopeCheck asks too), called when the kind must be discovered.
func newMetadataKind(newDiscovery func() (scope.Discovery, error), gvr schema.GroupVersionResource, objType *metav1.PartialObjectMetadata) (*metadataKind, error) {
	k := &metadataKind{gvr: gvr}
	gv := gvr.GroupVersion()
	if av := objType.APIVersion; av != "" && av != gv.String() {
		return nil, fmt.Errorf("%w: Config.ObjectType is a PartialObjectMetadata of apiVersion %q, not of GVR's group version %q", ErrInvalidConfig, av, gv.String())
	}
	if objType.Kind != "" {
		gvk := gv.WithKind(objType.Kind)
		k.kind.Store(&gvk)
		return k, nil
	}
	if gvk, ok := schemeKind(gvr); ok {
		k.kind.Store(&gvk)
		return k, nil
	}
	d, err := newDiscovery()
	if err != nil {
		return nil, fmt.Errorf("discovery client for the kind of %s: %w", gvr, err)
	}
	k.discovery = d
	return k, nil
}

// schemeKind returns the kind of gvr's objects when client-go's scheme has
// exactly one kind of gvr's group version whose resource name is gvr's
// (a built-in resource, such as secrets: Secret).
func schemeKind(gvr schema.GroupVersionResource) (schema.GroupVersionKind, bool) {
	var found []schema.GroupVersionKind
	for kind := range scheme.Scheme.KnownTypes(gvr.GroupVersion()) {
		if strings.HasSuffix(kind, "List") {
			continue
		}
		gvk := gvr.GroupVersion().WithKind(kind)
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural == gvr {
			found = append(found, gvk)
		}
	}
	if len(found) != 1 {
		return schema.GroupVersionKind{}, false
	}
	return found[0], true
}

// objectTypeOfGVR returns an error when objType is a type of client-go's
// scheme of another kind than the objects of gvr, a built-in resource (a
// *corev1.Secret for configmaps): the typed path decodes each object by
// the kind the API server sends, so the cache would hold objects of
// another type than ObjectType, and a consumer's type assertion would
// panic. A type the scheme does not know (a custom resource's, an
// *unstructured.Unstructured) and a resource it does not know cannot be
// told: nil.
func objectTypeOfGVR(gvr schema.GroupVersionResource, objType runtime.Object) error {
	want, ok := schemeKind(gvr)
	if !ok {
		return nil
	}
	kinds, _, err := scheme.Scheme.ObjectKinds(objType)
	if err != nil {
		return nil
	}
	for _, k := range kinds {
		if k.Group == want.Group && k.Kind == want.Kind {
			return nil
		}
	}
	return fmt.Errorf("%T is a %s, but %s holds %s objects: give &%s{} of that group's Go package", objType, kinds[0].GroupKind(), gvr.GroupResource(), want.Kind, want.Kind)
}

// resolve makes sure the kind is known, asking the API server's discovery
// when it is not yet: an error (the group version or the resource not
// served) fails the list or watch that called it, which client-go retries.
func (k *metadataKind) resolve(ctx context.Context) error {
	if k.kind.Load() != nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kind.Load() != nil {
		return nil
	}
	gv := k.gvr.GroupVersion()
	list, err := k.discovery.ServerResourcesForGroupVersionWithContext(ctx, gv.String())
	if err != nil {
		return fmt.Errorf("discover the kind of %s: %w", k.gvr, err)
	}
	if r, ok := scope.Find(list, k.gvr.Resource); ok {
		gvk := gv.WithKind(r.Kind)
		k.kind.Store(&gvk)
		return nil
	}
	return fmt.Errorf("discover the kind of %s: the API server does not serve resource %q in %s", k.gvr, k.gvr.Resource, gv.String())
}

// transform sets the kind on a *metav1.PartialObjectMetadata (once it is
// known: always, for the objects of a list or watch, which resolve it
// first); other objects pass unchanged. It is the first step of a
// metadata-only informer's transform.
func (k *metadataKind) transform(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok && m != nil {
		if gvk := k.kind.Load(); gvk != nil {
			m.SetGroupVersionKind(*gvk)
		}
	}
	return obj, nil
}

// newMetadataListWatch lists and watches gvr's objects as
// *metav1.PartialObjectMetadata through client-go's metadata client built
// from cfg, as client-go's metadatainformer does, resolving their kind
// first.
func newMetadataListWatch(cfg *rest.Config, kind *metadataKind, namespace, labelSelector, fieldSelector string) (cache.ListerWatcher, error) {
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client for %s: %w", kind.gvr, err)
	}
	ri := client.Resource(kind.gvr).Namespace(namespace)
	tweak := func(o *metav1.ListOptions) {
		o.LabelSelector = labelSelector
		o.FieldSelector = fieldSelector
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if err := kind.resolve(ctx); err != nil {
				return nil, err
			}
			tweak(&o)
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if err := kind.resolve(ctx); err != nil {
				return nil, err
			}
			tweak(&o)
			return ri.Watch(ctx, o)
		},
	}, client), nil
}

// asPartialObjectMetadata returns obj's metadata as the
// *metav1.PartialObjectMetadata a metadata-only informer caches: obj
// itself when it is one, its ObjectMeta (shared, not copied) otherwise;
// false when obj has no metadata.
func asPartialObjectMetadata(obj runtime.Object) (*metav1.PartialObjectMetadata, bool) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return m, true
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	return meta.AsPartialObjectMetadata(acc), true
}

// convertToCode holds the code pointers of the transforms that ConvertTo
// made, so that New can refuse one on a metadata-only informer, where it
// would convert nothing (its objects are never unstructured).
var convertToCode sync.Map // uintptr → struct{}

// isConvertTo reports whether t is a transform that ConvertTo returned.
func isConvertTo(t cache.TransformFunc) bool {
	if t == nil {
		return false
	}
	_, ok := convertToCode.Load(reflect.ValueOf(t).Pointer())
	return ok
}
