package informer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/operatorkit/operatorkit/internal/nilptr"
	"github.com/operatorkit/operatorkit/internal/scope"
)

// DefaultResyncPeriod is the resync period used when Config.ResyncPeriod is
// zero.
const DefaultResyncPeriod = 5 * time.Minute

// MinResyncPeriod is the shortest positive Config.ResyncPeriod: client-go
// resyncs no handler more often, and its informer checks for due resyncs at
// the period given, which, shorter, keeps a goroutine spinning (a CPU core
// for a period of a few nanoseconds).
const MinResyncPeriod = time.Second

// Config configures an Informer. GVR and one of RESTConfig (with
// ObjectType), Client and RESTClient are required.
type Config struct {
	// RESTConfig, with ObjectType, is the typed path and the one to choose
	// first: New builds a client for GVR's group and version that decodes
	// every object straight into a new value of ObjectType's Go type (one
	// decode per event, no AddToScheme, no conversion from a map). It works
	// for built-in kinds (&corev1.ConfigMap{}) and custom resources (the Go
	// type of a kubebuilder API package) alike. Built-in kinds are read as
	// protobuf, as client-go's clientsets read them (smaller and cheaper to
	// decode than JSON), unless the config's ContentType asks for JSON;
	// custom resources, which have no other encoding, as JSON. Cached
	// objects carry their apiVersion and kind either way. An object of a
	// custom resource that the Go type cannot hold (a value of the wrong
	// type that no schema stopped) is cached as an *unstructured.Unstructured
	// instead, with a warning naming it: the other objects, the list and the
	// watch go on, and the resources can report the bad one. The config is
	// copied, so its rate limits (QPS, Burst) and transport wrappers apply.
	// operator.Operator.Informer sets it when ObjectType is set and no
	// client is. Client, RESTClient and RESTConfig exclude each other.
	//
	// With ObjectType &metav1.PartialObjectMetadata{} the informer is
	// metadata-only: see ObjectType.
	RESTConfig *rest.Config
	// Client lists and watches the objects as *unstructured.Unstructured:
	// for code that works on maps, or kinds without a Go type.
	Client dynamic.Interface
	// RESTClient, instead of Client, lists and watches the objects with a
	// typed client whose serializer decodes them straight into Go types
	// (ObjectType and its list type), so each event is decoded once rather
	// than into a map and then converted. Use a clientset's RESTClient for
	// built-in kinds (kubernetes.Interface.CoreV1().RESTClient() for
	// ConfigMaps) or NewRESTClient for custom resources. Its group and
	// version (APIVersion) must be those of GVR: New refuses another.
	//
	// The price: one object that the Go type cannot hold (a value of the
	// wrong type that the CRD's schema let through) fails the whole list or
	// watch, which client-go retries with backoff while the cache stays as
	// it was; and the client's serializer decodes metadata.managedFields,
	// which DropManagedFields then drops, where RESTConfig's decoder cuts
	// them before decoding. RESTConfig has neither price.
	RESTClient rest.Interface
	// ObjectType is an empty object of the Go type to cache, such as
	// &corev1.ConfigMap{}: a non-nil pointer to a struct, of one object's
	// type (New refuses a list type, &corev1.ConfigMapList{} or
	// &metav1.PartialObjectMetadataList{}), of the kind of GVR's objects
	// (New refuses a type of client-go's scheme that is another kind than
	// GVR's built-in resource, &corev1.Secret{} for configmaps: the typed
	// path decodes each object by the kind the API server sends, and the
	// cache would hold objects of another type). Required with RESTConfig
	// and RESTClient, unused with Client.
	//
	// &metav1.PartialObjectMetadata{} makes the informer metadata-only
	// (MetadataOnly), as controller-runtime's OnlyMetadata does: with
	// RESTConfig (New refuses it with Client or RESTClient, which read
	// whole objects), it lists and watches GVR through client-go's metadata
	// client (k8s.io/client-go/metadata, built from RESTConfig), so that the
	// API server sends, and the cache holds, each object's metadata only (a
	// *metav1.PartialObjectMetadata: name, namespace, labels, annotations,
	// owner references, finalizers, resourceVersion, ...), never its spec,
	// status or data. For an operator that watches objects only to be woken
	// when they come, go or change their metadata (Secrets or Pods it does
	// not own) it saves their content's memory and decoding. The cached
	// objects carry the apiVersion and kind of GVR's resource (not
	// meta.k8s.io/v1 PartialObjectMetadata, as the API server sends them):
	// the kind is ObjectType's when its TypeMeta names one (its apiVersion,
	// if set, must be GVR's group version), a built-in resource's from
	// client-go's scheme, and otherwise read once from the API server's
	// discovery by the first list or watch. An update that changes only
	// the content (a Secret's data) changes the object's resourceVersion
	// and still comes as an update. Selectors, Namespace, ResyncPeriod,
	// DropManagedFields, Transform (which receives the
	// *metav1.PartialObjectMetadata; ConvertTo is refused), Mutation and
	// the metrics work as on the other paths.
	ObjectType runtime.Object
	// GVR is the resource to inform about. Required: Version and Resource
	// must not be empty (Group is empty for the core group).
	GVR schema.GroupVersionResource
	// Namespace restricts the informer to one namespace; "" means all
	// namespaces, and is the only valid value for cluster-scoped
	// resources: the API server answers the list of one in a namespace
	// with NotFound, as for a resource it does not serve, so the cache
	// could never sync. When a list of its Namespace is answered NotFound
	// before the cache synced, the informer asks the API server which of
	// the two it is, within 10 s (the list is retried after), and no more
	// once the answer showed the resource served: its discovery with
	// RESTConfig or RESTClient; with Client, which has no discovery, a
	// list of one object in all namespaces and one in Namespace (a
	// Forbidden list in all namespaces cannot tell). A cluster-scoped
	// resource ends WaitForCacheSync at once, with an error wrapping
	// ErrNotSynced and ErrInvalidConfig that names the resource and this
	// field ("leave Namespace empty"); one not served is waited for, as
	// its CRD may come, and the wait's error says it is not served.
	// operator.Operator.Run refuses such a Namespace from the same reading
	// of discovery before any informer starts. Otherwise it must be a
	// namespace name (a DNS-1123 label): New refuses another, which no
	// object could be in.
	Namespace string
	// LabelSelector restricts the informer to objects whose labels match it,
	// in the syntax of labels.Parse ("app=web,tier!=db"). Objects whose
	// labels stop matching are reported as deleted (a framework.Framework
	// over the informer forgets such an object without running its delete
	// chain: see framework.Config.Informer). Validated by New.
	LabelSelector string
	// FieldSelector restricts the informer to objects whose fields match it,
	// in the syntax of fields.ParseSelector ("metadata.name=x"). The server
	// supports only a few fields per resource (metadata.name and
	// metadata.namespace everywhere; a CRD's selectableFields): it refuses
	// the list of another (400 BadRequest), and WaitForCacheSync then
	// returns with its error once the retried list is refused too, about
	// a second later. Validated by New (the syntax only).
	FieldSelector string
	// ResyncPeriod is how often every cached object is delivered again to
	// the event handlers as an update whose old and new objects are the
	// same, so that a level-based consumer reconciles everything
	// periodically. Resyncs replay the cache; they make no API request.
	// Zero means DefaultResyncPeriod; a negative value disables resyncs;
	// a positive one must be at least MinResyncPeriod.
	ResyncPeriod time.Duration
	// DropManagedFields clears metadata.managedFields from every object
	// before it is cached, which typically saves a third of the memory an
	// object takes (more of a metadata-only informer's, whose objects are
	// all metadata). Consumers then never see managedFields.
	DropManagedFields bool
	// Transform, if set, is applied to every object from the API server
	// before it is cached, after DropManagedFields. It receives an
	// *unstructured.Unstructured with Client, an object of ObjectType's type
	// with RESTClient, and either with RESTConfig (a
	// *metav1.PartialObjectMetadata, with its apiVersion and kind set, when
	// metadata-only, or an object it returned before), and may change it in
	// place or return another object, for instance a typed one converted
	// with runtime.DefaultUnstructuredConverter. It must be idempotent:
	// client-go may pass it an object it has already transformed (its
	// watch-list path does), as client-go's TransformFunc documents; every
	// transform of this package is. The result must still be a
	// runtime.Object that satisfies meta.Accessor (the cache keys objects by
	// namespace and name). It runs on the informer's hot path: keep it
	// fast. An error makes client-go abandon the current list or watch and
	// start over, so it should not fail.
	Transform cache.TransformFunc
	// MutationCacheSize caps the objects Mutation keeps: as many written
	// objects the cache holds, and as many again created ones it does not
	// hold yet (least recently written dropped first; a dropped one can
	// only cost a conflict, or, for a create, a Get that finds no object
	// until the watch delivers it, as without Mutation). Zero means
	// DefaultMutationCacheSize; negative is invalid.
	MutationCacheSize int
	// Logger receives the informer's own logs. nil means no logs; a nil
	// pointer in it is an error.
	Logger log.Logger
	// Registerer registers the informer's metrics (see the package
	// documentation). nil (or a nil *prometheus.Registry) means no metrics
	// are registered.
	Registerer prometheus.Registerer
	// Name is the value of the "informer" label of the metrics and of the
	// "informer" log key, valid UTF-8. Defaults to GVR.Resource.
	Name string
}

// Informer is a client-go SharedIndexInformer for the objects of one
// GroupVersionResource, read through the client its Config names. Create it with New;
// all methods are safe for concurrent use.
type Informer struct {
	gvr  schema.GroupVersionResource
	name string
	// namespace and selector are Config.Namespace and the parsed
	// Config.LabelSelector, for Selection.
	namespace string
	selector  labels.Selector
	// labelSelector and fieldSelector are Config's, as given: the error of
	// a list the server refuses names them.
	labelSelector, fieldSelector string

	informer cache.SharedIndexInformer
	logger   log.Logger
	metrics  *metrics

	started atomic.Bool

	// transform is what the informer applies to objects before caching
	// them; Mutation applies it too. nil means none.
	transform cache.TransformFunc
	// mutationCacheSize is Config.MutationCacheSize with its default.
	mutationCacheSize int
	// cachedType is the Go type of the cached objects when the informer
	// knows it (no Config.Transform); nil otherwise.
	cachedType reflect.Type
	// metadataOnly is true when the informer caches
	// *metav1.PartialObjectMetadata (Config.ObjectType), of the kind
	// metadataKind knows (once known).
	metadataOnly bool
	metadataKind *metadataKind
	// mutations overlays the objects given to Mutation on the cache; nil
	// until the first call, so that Get costs nothing extra without it.
	mutations     atomic.Pointer[mutations]
	mutationsOnce sync.Once
	// seen is the highest resourceVersion, as an integer, of the changes
	// an event handler of the informer was given (seeing, metricsHandler):
	// the cache shows every change up to it, and whatever a handler woke
	// for a change came after seen reached it.
	seen atomic.Uint64

	// stopping is closed (under mu, once) when the context given to Run
	// ends; Watch goroutines and pending Watch sends end with it.
	stopping        chan struct{}
	stopOnce        sync.Once
	mu              sync.Mutex
	watchers        map[*watcher]struct{}
	watchGoroutines sync.WaitGroup
	// syncErr is the last list or watch error seen while the cache had not
	// synced, for WaitForCacheSync's error, which reads it only then (the
	// first error after the sync clears it). Under mu.
	syncErr error
	// refused is closed (under mu, once) when the API server refused a
	// list or watch for good before the cache synced (refusedForGood);
	// refusedErr, set before, says which and why. WaitForCacheSync returns
	// refusedErr then, without waiting for its context.
	refused    chan struct{}
	refusedErr error
	// refusals counts the lists and watches refused for good in a row
	// before the cache synced (under mu): the wait ends at the
	// refusalsToEnd-th, so that one refusal the retried list no longer
	// meets does not end it.
	refusals int
	// scope tells, when a list of Config.Namespace is answered NotFound
	// before the cache synced, whether the resource is cluster-scoped
	// (the wait ends then) or not served; nil without a Namespace.
	scope *scopeCheck
}

// refusalsToEnd is how many lists or watches in a row the API server must
// refuse for good (refusedForGood) before WaitForCacheSync gives up: a
// refusal repeated by the retried list, about a second later (client-go's
// backoff), rather than one answer of a server that was still taking in a
// change, such as a CRD's new selectableFields that the Operator's
// EnsureCRD has just written.
const refusalsToEnd = 2

// New validates config and returns an Informer that has not started yet:
// call Run. It registers the metrics with config.Registerer, reusing
// collectors that another Informer registered there before.
func New(config Config) (*Informer, error) {
	// A client whose constructor failed: the list in Run would panic.
	if config.Client != nil && nilptr.Is(config.Client) {
		return nil, fmt.Errorf("%w: %T.Client is a nil %T", ErrInvalidConfig, config, config.Client)
	}
	if config.RESTClient != nil && nilptr.Is(config.RESTClient) {
		return nil, fmt.Errorf("%w: %T.RESTClient is a nil %T", ErrInvalidConfig, config, config.RESTClient)
	}
	if config.Logger != nil && nilptr.Is(config.Logger) { // its first log line would panic
		return nil, fmt.Errorf("%w: %T.Logger is a nil %T", ErrInvalidConfig, config, config.Logger)
	}
	switch clients := btoi(config.RESTConfig != nil) + btoi(config.Client != nil) + btoi(config.RESTClient != nil); {
	case clients == 0:
		return nil, fmt.Errorf("%w: %T needs a client: set RESTConfig and ObjectType (or Client, or RESTClient and ObjectType)", ErrInvalidConfig, config)
	case clients > 1:
		return nil, fmt.Errorf("%w: %T.RESTConfig, Client and RESTClient exclude each other: set one", ErrInvalidConfig, config)
	case config.RESTConfig != nil && config.ObjectType == nil:
		return nil, fmt.Errorf("%w: %T.ObjectType must not be empty when RESTConfig is set", ErrInvalidConfig, config)
	case config.RESTClient != nil && config.ObjectType == nil:
		return nil, fmt.Errorf("%w: %T.ObjectType must not be empty when RESTClient is set", ErrInvalidConfig, config)
	}
	_, isList := config.ObjectType.(metav1.ListInterface)
	if _, isObject := config.ObjectType.(metav1.Object); isList && !isObject && !nilptr.Is(config.ObjectType) {
		// Its decoder would take no object of the list or the watch: the
		// cache would never sync, with no list error to say why.
		return nil, fmt.Errorf("%w: %T.ObjectType %T is a list type: give the type of one object (&metav1.PartialObjectMetadata{} for a metadata-only informer, the list's item type otherwise)", ErrInvalidConfig, config, config.ObjectType)
	}
	md := metadataOnly(config.ObjectType)
	if md {
		switch {
		case nilptr.Is(config.ObjectType):
			return nil, fmt.Errorf("%w: %T.ObjectType is a nil %T: give &metav1.PartialObjectMetadata{} for a metadata-only informer", ErrInvalidConfig, config, config.ObjectType)
		case config.RESTConfig == nil:
			return nil, fmt.Errorf("%w: %T.ObjectType %T (metadata only) needs RESTConfig, which client-go's metadata client is built from: Client and RESTClient read whole objects", ErrInvalidConfig, config, config.ObjectType)
		case isConvertTo(config.Transform):
			return nil, fmt.Errorf("%w: %T.Transform is an informer.ConvertTo, which converts unstructured objects into a Go type: a metadata-only informer (ObjectType %T) caches metadata only, which it cannot convert", ErrInvalidConfig, config, config.ObjectType)
		}
	}
	if config.GVR.Resource == "" {
		return nil, fmt.Errorf("%w: %T.GVR.Resource must not be empty", ErrInvalidConfig, config)
	}
	if config.GVR.Version == "" {
		return nil, fmt.Errorf("%w: %T.GVR.Version must not be empty", ErrInvalidConfig, config)
	}
	if config.Client == nil && !md && !nilptr.Is(config.ObjectType) {
		if err := objectTypeOfGVR(config.GVR, config.ObjectType); err != nil {
			return nil, fmt.Errorf("%w: %T.ObjectType: %w", ErrInvalidConfig, config, err)
		}
	}
	if config.RESTClient != nil {
		// Another group version's client would list GVR.Resource where the
		// API server serves nothing: the cache would never sync.
		if gv := config.RESTClient.APIVersion(); !gv.Empty() && gv != config.GVR.GroupVersion() {
			return nil, fmt.Errorf("%w: %T.RESTClient is a client of %q, not of GVR's group version %q", ErrInvalidConfig, config, gv.String(), config.GVR.GroupVersion().String())
		}
	}
	if config.Namespace != "" {
		// The API server answers the list of a namespace that cannot
		// exist with nothing, or refuses it: the cache would stay empty.
		if errs := validation.IsDNS1123Label(config.Namespace); len(errs) > 0 {
			return nil, fmt.Errorf("%w: %T.Namespace %q is not a namespace: %s", ErrInvalidConfig, config, config.Namespace, strings.Join(errs, "; "))
		}
	}
	selector, err := labels.Parse(config.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("%w: %T.LabelSelector %q is invalid: %w", ErrInvalidConfig, config, config.LabelSelector, err)
	}
	if _, err := fields.ParseSelector(config.FieldSelector); err != nil {
		return nil, fmt.Errorf("%w: %T.FieldSelector %q is invalid: %w", ErrInvalidConfig, config, config.FieldSelector, err)
	}
	if config.MutationCacheSize < 0 {
		return nil, fmt.Errorf("%w: %T.MutationCacheSize must not be negative, got %d", ErrInvalidConfig, config, config.MutationCacheSize)
	}
	if config.MutationCacheSize == 0 {
		config.MutationCacheSize = DefaultMutationCacheSize
	}
	if config.ResyncPeriod > 0 && config.ResyncPeriod < MinResyncPeriod {
		return nil, fmt.Errorf("%w: %T.ResyncPeriod %s must be at least %s (MinResyncPeriod), or 0 for DefaultResyncPeriod, or negative for no resyncs", ErrInvalidConfig, config, config.ResyncPeriod, MinResyncPeriod)
	}
	if config.ResyncPeriod == 0 {
		config.ResyncPeriod = DefaultResyncPeriod
	}
	if config.ResyncPeriod < 0 {
		config.ResyncPeriod = 0 // client-go: no resync
	}
	if config.Logger == nil {
		config.Logger = log.NewNopLogger()
	}
	if config.Name == "" {
		config.Name = config.GVR.Resource
	}
	if !utf8.ValidString(config.Name) {
		// The metrics' label value: prometheus would panic.
		return nil, fmt.Errorf("%w: %T.Name (or GVR.Resource, its default) %q is not valid UTF-8", ErrInvalidConfig, config, config.Name)
	}

	m, err := newMetrics(config.Registerer, config.Name)
	if err != nil {
		// Another collector under one of the informer's metric names.
		return nil, fmt.Errorf("%w: %T.Registerer: %w", ErrInvalidConfig, config, err)
	}

	i := &Informer{
		gvr:           config.GVR,
		name:          config.Name,
		namespace:     config.Namespace,
		selector:      selector,
		labelSelector: config.LabelSelector,
		fieldSelector: config.FieldSelector,
		logger:        log.With(config.Logger, "informer", config.Name),
		metrics:       m,
		watchers:      make(map[*watcher]struct{}),
		stopping:      make(chan struct{}),
		refused:       make(chan struct{}),

		mutationCacheSize: config.MutationCacheSize,
		metadataOnly:      md,
	}
	// disc is the discovery client of the RESTConfig paths, made once,
	// for the metadata-only informer's kind and the scope check both.
	var disc scope.Discovery
	newDiscovery := func() (scope.Discovery, error) {
		if disc == nil {
			d, err := discovery.NewDiscoveryClientForConfig(config.RESTConfig)
			if err != nil {
				return nil, err
			}
			disc = d
		}
		return disc, nil
	}
	var lw cache.ListerWatcher
	// setKind is the metadata-only informer's first transform.
	var setKind cache.TransformFunc
	// objType is the type client-go's reflector insists on: none for the
	// typed path, which may deliver an unstructured object among the typed.
	var objType runtime.Object = &unstructured.Unstructured{}
	i.cachedType = reflect.TypeOf(objType)
	switch {
	case md:
		kind, err := newMetadataKind(newDiscovery, config.GVR, config.ObjectType.(*metav1.PartialObjectMetadata))
		if err != nil {
			return nil, err
		}
		if lw, err = newMetadataListWatch(config.RESTConfig, kind, config.Namespace, config.LabelSelector, config.FieldSelector); err != nil {
			return nil, err
		}
		objType, i.cachedType, setKind, i.metadataKind = &metav1.PartialObjectMetadata{}, reflect.TypeOf(config.ObjectType), kind.transform, kind
	case config.RESTConfig != nil:
		client, err := newTypedRESTClient(config.RESTConfig, config.GVR.GroupVersion(), config.ObjectType, config.DropManagedFields, i.logger, m.undecodable.Inc)
		if err != nil {
			return nil, err
		}
		lw = newRESTListWatch(client, config.GVR, config.Namespace, config.LabelSelector, config.FieldSelector)
		objType, i.cachedType = nil, reflect.TypeOf(config.ObjectType)
	case config.RESTClient != nil:
		lw = newRESTListWatch(config.RESTClient, config.GVR, config.Namespace, config.LabelSelector, config.FieldSelector)
		objType, i.cachedType = config.ObjectType, reflect.TypeOf(config.ObjectType)
	default:
		lw = newListWatch(config.Client, config.GVR, config.Namespace, config.LabelSelector, config.FieldSelector)
	}
	if config.Namespace != "" {
		switch {
		case config.RESTConfig != nil:
			d, err := newDiscovery()
			if err != nil {
				return nil, fmt.Errorf("discovery client for the scope of %s: %w", config.GVR, err)
			}
			i.scope = &scopeCheck{ask: discoveryScope(d, config.GVR), discovered: true}
		case config.RESTClient != nil:
			i.scope = &scopeCheck{ask: discoveryScope(restDiscovery{config.RESTClient}, config.GVR), discovered: true}
		default:
			i.scope = &scopeCheck{ask: listScope(config.Client, config.GVR, config.Namespace)}
		}
	}
	if config.Transform != nil {
		i.cachedType = nil
	}
	i.informer = cache.NewSharedIndexInformerWithOptions(
		lw,
		objType,
		cache.SharedIndexInformerOptions{
			ResyncPeriod:      config.ResyncPeriod,
			Indexers:          cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			ObjectDescription: config.GVR.String(),
		},
	)
	if t := transform(setKind, config.DropManagedFields, config.Transform); t != nil {
		i.transform = t
		if err := i.informer.SetTransform(t); err != nil {
			return nil, fmt.Errorf("set transform: %w", err)
		}
	}
	if err := i.informer.SetWatchErrorHandlerWithContext(i.onWatchError); err != nil {
		return nil, fmt.Errorf("set watch error handler: %w", err)
	}
	// The metrics handler does not ask for resyncs, so that
	// events_total{event="update"} counts real changes only.
	noResync := time.Duration(0)
	if _, err := i.informer.AddEventHandlerWithOptions(metricsHandler{i}, cache.HandlerOptions{ResyncPeriod: &noResync}); err != nil {
		return nil, fmt.Errorf("add metrics handler: %w", err)
	}
	return i, nil
}

func newListWatch(client dynamic.Interface, gvr schema.GroupVersionResource, namespace, labelSelector, fieldSelector string) cache.ListerWatcher {
	ri := client.Resource(gvr).Namespace(namespace)
	tweak := func(o *metav1.ListOptions) {
		o.LabelSelector = labelSelector
		o.FieldSelector = fieldSelector
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return ri.Watch(ctx, o)
		},
	}, client)
}

// newRESTListWatch lists and watches gvr.Resource with a typed REST client.
func newRESTListWatch(client rest.Interface, gvr schema.GroupVersionResource, namespace, labelSelector, fieldSelector string) cache.ListerWatcher {
	lw := cache.NewFilteredListWatchFromClient(client, gvr.Resource, namespace, func(o *metav1.ListOptions) {
		o.LabelSelector = labelSelector
		o.FieldSelector = fieldSelector
	})
	return cache.ToListWatcherWithWatchListSemantics(lw, client)
}

// NewRESTClient returns a REST client for the group and version gv of
// custom resources whose Go types addToScheme registers (a kubebuilder
// API package's AddToScheme), for Config.RESTClient: it decodes JSON
// straight into those types. cfg is copied, so its rate limits (QPS,
// Burst) and transport wrappers apply.
func NewRESTClient(cfg *rest.Config, gv schema.GroupVersion, addToScheme func(*runtime.Scheme) error) (rest.Interface, error) {
	if cfg == nil {
		return nil, fmt.Errorf("%w: NewRESTClient needs a *rest.Config", ErrInvalidConfig)
	}
	if gv.Version == "" {
		return nil, fmt.Errorf("%w: NewRESTClient needs a group version with a version, got %q", ErrInvalidConfig, gv.String())
	}
	if addToScheme == nil {
		return nil, fmt.Errorf("%w: NewRESTClient needs the addToScheme function of the types of %s", ErrInvalidConfig, gv.String())
	}
	scheme := runtime.NewScheme()
	if err := addToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register types of %s: %w", gv.String(), err)
	}
	metav1.AddToGroupVersion(scheme, gv)
	return restClientFor(cfg, gv, serializer.NewCodecFactory(scheme).WithoutConversion(), runtime.ContentTypeJSON)
}

// restClientFor returns a REST client for gv on a copy of cfg that speaks
// contentType (JSON for custom resources, which have no other encoding;
// protobuf, with JSON accepted, for built-in kinds) through codecs.
func restClientFor(cfg *rest.Config, gv schema.GroupVersion, codecs runtime.NegotiatedSerializer, contentType string) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.NegotiatedSerializer = codecs
	c.ContentType = contentType
	c.AcceptContentTypes = contentType
	if contentType == runtime.ContentTypeProtobuf {
		c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("REST client for %s: %w", gv.String(), err)
	}
	return client, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// transform chains the metadata-only informer's kind setter (nil
// otherwise), the managedFields dropper and the user's transform; nil when
// there is none.
func transform(setKind cache.TransformFunc, dropManagedFields bool, user cache.TransformFunc) cache.TransformFunc {
	var drop cache.TransformFunc
	if dropManagedFields {
		drop = dropManagedFieldsTransform
	}
	var steps []cache.TransformFunc
	for _, t := range []cache.TransformFunc{setKind, drop, user} {
		if t != nil {
			steps = append(steps, t)
		}
	}
	switch len(steps) {
	case 0:
		return nil
	case 1:
		return steps[0]
	}
	return func(obj any) (any, error) {
		for _, t := range steps {
			var err error
			if obj, err = t(obj); err != nil {
				return nil, err
			}
		}
		return obj, nil
	}
}

func dropManagedFieldsTransform(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// Run starts the informer and blocks until ctx ends; then it stops every
// goroutine the informer started (list, watch, resync and the event
// handlers' delivery goroutines, the goroutines of Watch calls), waits for
// them, and returns nil. Handlers are never called after Run returned, and
// every Watch channel is closed by then. A handler that does not return
// keeps Run from returning; a Watch consumer that does not read does not.
// The cache keeps its last content.
//
// Run may be called only once: a second call, concurrent or later, returns
// ErrAlreadyStarted at once.
func (i *Informer) Run(ctx context.Context) error {
	if !i.started.CompareAndSwap(false, true) {
		return fmt.Errorf("run informer %s: %w", i.name, ErrAlreadyStarted)
	}
	level.Debug(i.logger).Log("msg", "starting informer", "gvr", i.gvr.String())
	// The cache_objects gauge counts running informers only.
	i.metrics.cacheObjects.start(i)
	// Release Watch consumers as soon as ctx ends: client-go waits for
	// every handler call to return before RunWithContext does.
	released := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		defer close(released)
		i.closeStopping()
	})
	i.informer.RunWithContext(ctx)
	if !stopAfter() {
		<-released
	}
	i.closeStopping()
	i.watchGoroutines.Wait()
	// Take this informer's objects out of the cache_objects gauge, and
	// the informer out of its collector.
	i.metrics.cacheObjects.stop(i)
	level.Debug(i.logger).Log("msg", "informer stopped")
	return nil
}

func (i *Informer) closeStopping() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.stopOnce.Do(func() { close(i.stopping) })
}

// HasSynced reports whether the cache has been filled by a complete initial
// list. It never goes back to false, and says nothing about whether the
// event handlers have processed that list: use the registration returned
// by AddEventHandler for that.
func (i *Informer) HasSynced() bool { return i.informer.HasSynced() }

// WaitForCacheSync blocks until HasSynced is true or ctx ends, whichever
// comes first. In the latter case it returns an error wrapping ErrNotSynced
// and the context's cause, and naming (and wrapping) the last error of the
// informer's lists and watches since Run started, when there was one: the
// reason the cache did not sync (a Forbidden list: RBAC does not let this
// identity list the resource; NotFound: the server does not serve it,
// which the error then says when Config.Namespace is set). Those errors
// do not end the wait: the informer retries the list with backoff, and
// RBAC granted or a CRD installed meanwhile lets it sync.
//
// A list of Config.Namespace answered NotFound for a resource that the
// API server serves cluster-scoped (see Config.Namespace for how the
// informer tells) ends the wait at once, with an error wrapping
// ErrNotSynced and ErrInvalidConfig that names the resource, the
// Namespace field and the fix: no list in a namespace can ever sync it.
//
// A list or watch that the API server refuses for good, twice in a row
// before the cache synced (the first list and its retry, about a second
// later: one refusal may be the answer of a server still taking in a
// change), ends the wait then instead, with an error wrapping
// ErrNotSynced and the server's error that names the resource, the
// namespace and the selectors: 400 BadRequest (the server refuses
// Config.FieldSelector, a field it does not select on for the resource,
// or Config.LabelSelector) and 405 MethodNotAllowed (the resource cannot
// be listed or watched). Retrying the same request cannot heal them; the
// informer still retries, with backoff, until Run's context ends. (A field
// selector that a CRD's selectableFields gain later would be accepted
// then: such an informer needs a new start, after the CRD is updated.)
//
// It does not start the informer: if Run is never called it waits for ctx.
func (i *Informer) WaitForCacheSync(ctx context.Context) error {
	select {
	case <-i.informer.HasSyncedChecker().Done():
		return nil
	case <-i.refused:
		if i.HasSynced() {
			return nil
		}
		i.mu.Lock()
		defer i.mu.Unlock()
		return i.refusedErr
	case <-ctx.Done():
		if i.HasSynced() {
			return nil
		}
		i.mu.Lock()
		last, refused := i.syncErr, i.refusedErr
		i.mu.Unlock()
		if refused != nil { // the reason, whichever select saw first
			return refused
		}
		if last == nil {
			return fmt.Errorf("informer %s: %w: %w (no list or watch error so far: the first list has not answered)", i.name, ErrNotSynced, context.Cause(ctx))
		}
		return fmt.Errorf("informer %s: %w: %w: last list or watch error: %w", i.name, ErrNotSynced, context.Cause(ctx), last)
	}
}

// Get returns the cached object with the key "namespace/name" (just "name"
// for cluster-scoped objects); exists is false when there is none. The
// object is of ObjectType's type with RESTConfig or RESTClient (with
// RESTConfig, an object of a custom resource that the type cannot hold is
// an *unstructured.Unstructured; a metadata-only informer's are
// *metav1.PartialObjectMetadata), an *unstructured.Unstructured with
// Client, or what Config.Transform returns. It belongs to the cache: never
// modify it; DeepCopy it first.
func (i *Informer) Get(key string) (obj any, exists bool, err error) {
	if m := i.mutations.Load(); m != nil {
		if obj, exists, err = i.getMutated(m, key); err != nil || exists {
			return obj, exists, err
		}
		obj, exists = m.created(key, i.delivered)
		return obj, exists, nil
	}
	return i.informer.GetIndexer().GetByKey(key)
}

// getMutated is Get through the mutation cache, which panics when it
// compares a resourceVersion that is not an integer (an aggregated API
// server's, a fake's): the cache's own object is returned then.
func (i *Informer) getMutated(m *mutations, key string) (obj any, exists bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			obj, exists, err = i.informer.GetIndexer().GetByKey(key)
		}
	}()
	return m.cache.GetByKey(key)
}

// Mutation records obj, the object the API server returned for a create,
// update or patch of an object this informer caches, so that Get returns
// it instead of an older cached version until the cache holds that version
// or a newer one. Call it after each write whose result a reconciliation
// that follows soon may read from this informer: otherwise that
// reconciliation works from the version before the write, and its next
// update fails with a conflict (409). It is client-go's MutationCache:
//
//   - resourceVersions are compared as integers, as etcd makes them, and
//     the newest of the cache's object and the recorded ones wins (the
//     answer of an older write never replaces a newer one);
//   - an object the cache does not hold (the answer of a create) is
//     returned until the informer's event handlers have been given a
//     change at or past its resourceVersion: the cache shows it then, or
//     its later delete, which is so never hidden from what a handler
//     registered with AddEventHandler wakes for it (created and deleted again
//     while the watch was down, and shown by neither a later change nor
//     the relist, it is returned until MutationTTL at most); an answer
//     that the informer can never deliver (of another namespace than
//     Config.Namespace, with labels that Config.LabelSelector does not
//     select, or of an informer with a Config.FieldSelector) is not
//     returned before the cache has it;
//   - entries expire after MutationTTL, and at most Config.MutationCacheSize
//     are kept (least recently written dropped first; as many again for
//     creates): enough for the writes of the time the watch lags behind,
//     since an entry is needed only until the cache shows its version;
//   - List, event handlers and Watch are not affected.
//
// obj must be of the type the informer caches (after Config.Transform) and
// belongs to the informer afterwards: the informer's transform
// (DropManagedFields, Config.Transform) is applied to it. A metadata-only
// informer takes any object with metadata (the typed object an Update
// returned, or the *metav1.PartialObjectMetadata of the metadata client's
// Patch) and records its metadata as a *metav1.PartialObjectMetadata of
// the informer's kind (nothing before its first list or watch, when that
// has to discover the kind: see Config.ObjectType). A nil obj (or a
// nil pointer in it), or one without metadata, is ignored; so is, with a warning, an object of another
// type than the cached ones when the informer knows that type (no
// Config.Transform), or one whose resourceVersion is not an integer (an
// aggregated API server's). Safe for concurrent use.
func (i *Informer) Mutation(obj runtime.Object) {
	if nilptr.Is(obj) { // nil, or a nil pointer (a failed write's answer): its getters would panic
		return
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	if rv := acc.GetResourceVersion(); rv != "" {
		if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
			// The mutation cache compares resourceVersions as integers.
			level.Warn(i.logger).Log("msg", "Mutation with a resourceVersion that is not an integer; not recorded", "resourceVersion", rv)
			return
		}
	}
	if i.metadataOnly {
		if i.metadataKind.kind.Load() == nil {
			// Before the first list discovered it: Get would
			// return an object without its kind.
			level.Debug(i.logger).Log("msg", "Mutation before the kind of a metadata-only informer is known; not recorded")
			return
		}
		// What the metadata client would have sent of it: the
		// transform then sets the informer's kind.
		m, ok := asPartialObjectMetadata(obj)
		if !ok {
			return
		}
		obj = m
	}
	if i.cachedType != nil && reflect.TypeOf(obj) != i.cachedType {
		// Get would hand consumers an object of a type they do not expect.
		level.Warn(i.logger).Log("msg", "Mutation with an object of the wrong type; not recorded", "type", fmt.Sprintf("%T", obj), "want", i.cachedType.String())
		return
	}
	var o any = obj
	if i.transform != nil {
		t, err := i.transform(o)
		if err != nil {
			level.Debug(i.logger).Log("msg", "transform of a mutation failed; not recorded", "err", err)
			return
		}
		o = t
	}
	i.mutationCache().Mutation(o)
	i.mutations.Load().create(i, o)
}

// MutationTTL and DefaultMutationCacheSize bound what Informer.Mutation
// records.
const (
	MutationTTL              = time.Minute
	DefaultMutationCacheSize = 512
)

// mutations holds the client-go MutationCache behind Informer.Mutation,
// which returns a recorded object only while the cache holds it too, and
// the answers of creates, which Get returns until the informer's event
// handlers have been given their resourceVersion (Informer.delivered).
type mutations struct {
	cache cache.MutationCache
	size  int

	mu      sync.Mutex
	creates map[string]createdObject
	// order holds the creates' keys and resourceVersions in the order
	// recorded (about the order of their versions), so that see drops
	// each once the handlers have been given it (passed): the recorded
	// objects are not kept past the instant they are needed. ncreates
	// counts the entries of creates, for see's check without the lock.
	order    []createdKey
	ncreates atomic.Int32
}

// createdKey is an entry of mutations.order.
type createdKey struct {
	key string
	rv  uint64
}

// createdObject is a recorded answer of a create: the object, its
// resourceVersion as an integer, and when it was recorded.
type createdObject struct {
	obj any
	rv  uint64
	at  time.Time
}

// create records o, an answer given to Mutation of an object the cache
// does not hold (a create's), for Get to return while the cache does not
// hold it, unless the informer can never deliver it (see Mutation) or has
// delivered a change at or past its resourceVersion.
func (m *mutations) create(i *Informer, o any) {
	acc, err := meta.Accessor(o)
	if err != nil || i.fieldSelector != "" || (i.namespace != "" && acc.GetNamespace() != i.namespace) ||
		(i.selector != nil && !i.selector.Matches(labels.Set(acc.GetLabels()))) {
		return
	}
	rv, err := strconv.ParseUint(acc.GetResourceVersion(), 10, 64)
	if err != nil || rv <= i.delivered() {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(o)
	if err != nil {
		return
	}
	if _, cached, _ := i.informer.GetIndexer().GetByKey(key); cached {
		return // an update: the MutationCache's
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.creates[key]; ok && c.rv >= rv {
		return
	}
	if m.creates == nil {
		m.creates = map[string]createdObject{}
	}
	if len(m.creates) >= m.size {
		m.sweepLocked(i.delivered(), now)
	}
	m.creates[key] = createdObject{obj: o, rv: rv, at: now}
	m.order = append(m.order, createdKey{key: key, rv: rv})
	m.ncreates.Store(int32(len(m.creates)))
}

// passed drops the creates at or below seen, the point the informer's
// handlers have reached, from the oldest recorded on, stopping at the
// first one above it (one recorded out of order behind it goes with it,
// or with a sweep).
func (m *mutations) passed(seen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.order {
		if e.rv > seen {
			break
		}
		if c, ok := m.creates[e.key]; ok && c.rv <= seen {
			delete(m.creates, e.key)
		}
		n++
	}
	if n > 0 {
		m.order = m.order[n:]
		if len(m.order) == 0 {
			m.order = nil // the array's old entries go with it
		}
	}
	m.ncreates.Store(int32(len(m.creates)))
}

// sweepLocked drops the creates the informer has delivered a change at or
// past (seen) and the expired ones, and then, while there are too many,
// the oldest.
func (m *mutations) sweepLocked(seen uint64, now time.Time) {
	for key, c := range m.creates {
		if c.rv <= seen || now.Sub(c.at) > MutationTTL {
			delete(m.creates, key)
		}
	}
	for len(m.creates) >= m.size {
		var oldest string
		for key, c := range m.creates {
			if oldest == "" || c.at.Before(m.creates[oldest].at) {
				oldest = key
			}
		}
		delete(m.creates, oldest)
	}
	// order keeps only the keys still recorded.
	m.order = slices.DeleteFunc(m.order, func(e createdKey) bool {
		c, ok := m.creates[e.key]
		return !ok || c.rv != e.rv
	})
	m.ncreates.Store(int32(len(m.creates)))
}

// created returns the recorded create of key while the informer has not
// delivered a change at or past its resourceVersion (delivered, read only
// when there is one, after the caller found no object in the cache) and it
// has not expired.
func (m *mutations) created(key string, delivered func() uint64) (any, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.creates[key]
	switch {
	case !ok:
		return nil, false
	case c.rv <= delivered() || time.Since(c.at) > MutationTTL:
		delete(m.creates, key) // its order entry goes with passed or a sweep
		m.ncreates.Store(int32(len(m.creates)))
		return nil, false
	}
	return c.obj, true
}

func (i *Informer) mutationCache() cache.MutationCache {
	i.mutationsOnce.Do(func() {
		c := cache.NewIntegerResourceVersionMutationCacheWithOptions(klog.Background(), i.informer.GetStore(), cache.MutationCacheOptions{
			Indexer: i.informer.GetIndexer(), TTL: MutationTTL, MaxCacheSize: i.mutationCacheSize,
		})
		i.mutations.Store(&mutations{cache: c, size: max(i.mutationCacheSize, 1)})
	})
	return i.mutations.Load().cache
}

// List returns every cached object, in no particular order, of the types
// Get returns. The objects belong to the cache: never modify them.
func (i *Informer) List() []any { return i.informer.GetIndexer().List() }

// AddEventHandler registers h and returns its registration, which
// RemoveEventHandler takes and whose HasSynced reports whether h has seen
// the initial list. h gets resyncs as updates every Config.ResyncPeriod.
// Before h is given a change, Get no longer returns a create's answer
// (Mutation) that the change has passed, so that an owner h wakes for a
// child's delete does not read the child as still there.
//
// Calls to one handler are sequential, from a goroutine of their own, and
// are buffered without bound: a slow handler delays only itself, never the
// informer or other handlers. Handlers added after Run started first get an
// add for every cached object. Objects passed to h belong to the cache:
// never modify them. A deleted object may come as a
// cache.DeletedFinalStateUnknown when the informer missed the delete.
// Adding a handler after Run returned fails.
func (i *Informer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	reg, err := i.informer.AddEventHandler(seeing{i: i, h: h})
	if err != nil {
		return nil, fmt.Errorf("add event handler to informer %s: %w", i.name, err)
	}
	return reg, nil
}

// RemoveEventHandler unregisters the handler of reg. It is idempotent. Calls
// to the handler that were already queued may still happen after it
// returns.
func (i *Informer) RemoveEventHandler(reg cache.ResourceEventHandlerRegistration) error {
	return i.informer.RemoveEventHandler(reg)
}

// SharedIndexInformer returns the underlying client-go informer, for
// indexers and other features this type does not wrap. Do not call its
// Run, SetTransform or SetWatchErrorHandler: the Informer owns them.
func (i *Informer) SharedIndexInformer() cache.SharedIndexInformer { return i.informer }

// GVR returns the resource the informer watches.
func (i *Informer) GVR() schema.GroupVersionResource { return i.gvr }

// MetadataOnly reports whether the informer caches its objects' metadata
// only, as *metav1.PartialObjectMetadata (Config.ObjectType
// &metav1.PartialObjectMetadata{}). Consumers that need the objects'
// content check it: resource/child's New refuses such a Cache. A nil
// *Informer is not metadata-only.
func (i *Informer) MetadataOnly() bool { return i != nil && i.metadataOnly }

// Selection returns the informer's Config.Namespace ("" for all namespaces)
// and its Config.LabelSelector, parsed (empty, selecting everything, when
// none was given): the objects its cache can hold. Writers of objects that
// they later look up in the cache check with it that they will find them
// (resource/child does, for its children's namespace and managed-by label).
func (i *Informer) Selection() (namespace string, selector labels.Selector) {
	return i.namespace, i.selector
}

// onWatchError is the informer's watch error handler: it keeps err for
// WaitForCacheSync while the cache has not synced (a NotFound list of
// Config.Namespace first asks scope whether the resource is
// cluster-scoped, which ends the wait, or not served, which the kept
// error then says), counts and logs it, and passes it on to the Watch
// error channels. io.EOF (a watch that the server closed normally) is not
// an error. err is kept first: once the metric or the log shows it,
// WaitForCacheSync names it.
func (i *Informer) onWatchError(ctx context.Context, _ *cache.Reflector, err error) {
	if errors.Is(err, io.EOF) {
		return
	}
	synced := i.HasSynced()
	// A NotFound list of a Namespace: a cluster-scoped resource, or one
	// not served (yet). Asked before mu, which the answer may take seconds
	// to come without.
	served := scope.Unknown
	if !synced && i.scope != nil && apierrors.IsNotFound(err) {
		served = i.scope.of(ctx)
	}
	refused, clusterScoped := false, false
	i.mu.Lock()
	if synced {
		i.syncErr = nil
	} else {
		i.syncErr = err
		switch {
		case served == scope.ClusterScoped:
			// Certain at once: no retry can sync it.
			if i.refusedErr == nil {
				i.refusedErr = fmt.Errorf("informer %s: %w: %w: %s", i.name, ErrNotSynced, ErrInvalidConfig, scope.NamespaceOfClusterScoped(i.gvr, i.namespace, i.scope.discovered))
				close(i.refused)
				clusterScoped = true
			}
		case served == scope.NotServed:
			i.syncErr = fmt.Errorf("%w (the API server does not serve %s: a CRD not installed yet?)", err, i.resource())
			i.refusals = 0
		case !refusedForGood(err):
			i.refusals = 0
		default:
			if i.refusals++; i.refusals >= refusalsToEnd && i.refusedErr == nil {
				i.refusedErr = fmt.Errorf("informer %s: %w: the API server refuses to list %s: %w", i.name, ErrNotSynced, i.listed(), err)
				close(i.refused)
				refused = true
			}
		}
	}
	i.mu.Unlock()
	i.metrics.watchErrors.Inc()
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, io.ErrUnexpectedEOF) {
		level.Debug(i.logger).Log("msg", "watch closed, relisting", "err", err)
	} else {
		level.Warn(i.logger).Log("msg", "list or watch failed, retrying", "err", err)
	}
	if refused {
		level.Error(i.logger).Log("msg", "the API server refuses the list for good: the cache cannot sync until the informer's Config changes", "err", err)
	}
	if clusterScoped {
		level.Error(i.logger).Log("msg", "Namespace given for a cluster-scoped resource: the cache cannot sync until the informer's Config changes", "namespace", i.namespace, "err", err)
	}
	err = fmt.Errorf("watch %s: %w", i.gvr.String(), err)
	i.mu.Lock()
	defer i.mu.Unlock()
	for w := range i.watchers {
		w.sendError(err)
	}
}

// refusedForGood reports whether err, a list or watch error, is an answer
// of the API server that no retry of the same request can change: 400
// BadRequest (a field or label selector it refuses) or 405
// MethodNotAllowed (a resource that cannot be listed or watched). A
// Forbidden (RBAC may be granted later), a NotFound (a CRD may be
// installed later), a timeout or a server error are not.
func refusedForGood(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err)
}

// listed describes what the informer lists: its resource, namespace and
// selectors.
func (i *Informer) listed() string {
	s := i.resource()
	if i.namespace != "" {
		s += " in namespace " + i.namespace
	}
	if i.labelSelector != "" {
		s += fmt.Sprintf(" with label selector %q", i.labelSelector)
	}
	if i.fieldSelector != "" {
		s += fmt.Sprintf(" with field selector %q", i.fieldSelector)
	}
	return s
}

// resource names the informer's resource: resource.group/version.
func (i *Informer) resource() string {
	s := i.gvr.Resource
	if i.gvr.Group != "" {
		s += "." + i.gvr.Group
	}
	return s + "/" + i.gvr.Version
}

// metricsHandler keeps the informer's event metrics (cache_objects reads
// the store instead: see cacheObjects).
type metricsHandler struct{ i *Informer }

func (h metricsHandler) OnAdd(obj any, _ bool) { h.i.metrics.adds.Inc(); h.i.see(obj) }
func (h metricsHandler) OnUpdate(old, obj any) { h.i.metrics.updates.Inc(); h.i.seeUpdate(old, obj) }
func (h metricsHandler) OnDelete(obj any)      { h.i.metrics.deletes.Inc(); h.i.see(obj) }

// seeing is an event handler registered with AddEventHandler: it raises
// Informer.seen to the changed object's resourceVersion before h is given
// the change, so that what h wakes (an owner, through Framework.Enqueue)
// reads no recorded create that the change has passed: a delete that
// follows a create is never hidden from the owner it wakes, whatever the
// other handlers' lag.
type seeing struct {
	i *Informer
	h cache.ResourceEventHandler
}

func (s seeing) OnAdd(obj any, initial bool) { s.i.see(obj); s.h.OnAdd(obj, initial) }
func (s seeing) OnUpdate(old, obj any)       { s.i.seeUpdate(old, obj); s.h.OnUpdate(old, obj) }
func (s seeing) OnDelete(obj any)            { s.i.see(obj); s.h.OnDelete(obj) }

// seeUpdate is see for an update from old to obj: a resync (the cached
// object given as both) brings no version a handler was not given before,
// so it reads none (the steady path of every informer).
func (i *Informer) seeUpdate(old, obj any) {
	// Objects of an informer are pointers (metav1.Object's methods have
	// pointer receivers), so the comparison cannot panic.
	if a, ok := old.(metav1.Object); ok {
		if b, ok := obj.(metav1.Object); ok && a == b {
			return
		}
	}
	i.see(obj)
}

// see raises seen to obj's resourceVersion, when it is an integer.
func (i *Informer) see(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	rv, err := strconv.ParseUint(acc.GetResourceVersion(), 10, 64)
	for err == nil {
		s := i.seen.Load()
		if rv <= s || i.seen.CompareAndSwap(s, rv) {
			break
		}
	}
	if m := i.mutations.Load(); m != nil && m.ncreates.Load() > 0 {
		m.passed(i.seen.Load())
	}
}

// delivered returns the resourceVersion, as an integer, up to which the
// informer's event handlers have been given every change (seen): the cache
// shows each of them (a handler is given a change after the cache has it),
// so a recorded create at or below it is the cache's to show, or its
// later delete's, and is not returned. It is not the watch's point (the
// reflector's last synced resourceVersion), which runs ahead of the cache
// by the changes waiting in the informer's queue: a Get in between would
// miss the create. Whatever a handler wakes for a change comes after seen
// reached the change's version (seeing), so that an owner woken by a
// child's delete never reads the child's create as in place, whatever the
// lag of the other handlers.
func (i *Informer) delivered() uint64 { return i.seen.Load() }
