// Package informer provides a client-go shared informer for the objects of
// one GroupVersionResource, with the settings an operator needs in a
// Config: namespace, label and field selectors, resync period, a transform
// (and a switch to drop managedFields), a logger and Prometheus metrics.
//
// Three ways to read the objects, in the order to choose them:
//
//   - Config.RESTConfig with Config.ObjectType (what operator.Operator's
//     Informer does when ObjectType is set): every object is decoded once,
//     straight into its Go type, with no scheme to register: from protobuf
//     for built-in kinds (as client-go's clientsets read them), from JSON
//     for custom resources. An object of a custom resource that the Go type
//     cannot hold stays unstructured (with a warning), so it cannot stall
//     the list or the watch.
//   - Config.RESTClient with Config.ObjectType: decoded once too, by a REST
//     client of your own (a clientset's, or one from [NewRESTClient] with a
//     scheme), whose serializer decodes metadata.managedFields even when
//     the informer drops them (RESTConfig's decoder cuts them out of each
//     object before decoding it: BenchmarkTypedCodecDecode, about half the
//     time and garbage for an object with three entries); one object the
//     type cannot hold fails the whole list or watch until it is fixed.
//     Prefer RESTConfig.
//   - Config.Client, a dynamic client: every event is decoded into a map,
//     for code that works on unstructured objects. Converting those to Go
//     types ([ConvertTo]) costs a second pass over each event, whose garbage
//     shows in the operator's CPU (see docs/benchmarks.md).
//
// For objects whose content the consumer never reads (an operator woken by
// Secrets or Pods it does not own), Config.RESTConfig with ObjectType
// &metav1.PartialObjectMetadata{} makes a metadata-only informer
// ([Informer.MetadataOnly]): it lists and watches through client-go's
// metadata client, so the API server sends, and the cache holds, each
// object's metadata only, as *metav1.PartialObjectMetadata carrying the
// resource's apiVersion and kind (a Secret with 1 KiB of data takes less
// than half the heap: BenchmarkSecretsCacheHeap in the integration
// module). Selectors, namespace, resync, DropManagedFields, Transform,
// Mutation and the metrics work on it as on the other paths; [ConvertTo]
// is refused, and so is resource/child's Cache, which compares content.
//
// An [Informer] lists the objects once, then watches them, and keeps a
// local cache that [Informer.Get] and [Informer.List] read without any API
// request; [Get] reads one object of it typed, by namespace and name, and
// [List] the objects of a namespace whose labels match a selector, typed
// and sorted (the pods of a Deployment; an object of another type is an
// error matching [ErrWrongType], not a panic). Changes reach consumers in
// two ways:
//
//   - event handlers ([Informer.AddEventHandler]), client-go's
//     ResourceEventHandler, which is what the Framework uses;
//   - the channel view of the original operatorkit ([Informer.Watch]): an
//     update channel (adds, updates and resyncs), a delete channel and an
//     error channel.
//
// [Interface] holds what a consumer needs, and the informertest package has
// an in-memory fake of it for unit tests.
//
// # Guarantees
//
//   - Level-based cache: the cache holds the latest state the informer has
//     seen. Consumers should read the object from the cache when they act,
//     not keep the copy from an event. Cached objects are shared: never
//     modify them, DeepCopy first.
//   - Per-handler order: each handler gets its calls one at a time, in the
//     order the informer saw the changes, from its own goroutine.
//   - No head-of-line blocking: every handler has its own unbounded buffer,
//     so a slow handler (or a Watch consumer that does not read) delays only
//     itself. The price is memory when a consumer falls far behind.
//   - Resync: every Config.ResyncPeriod (DefaultResyncPeriod, 5 minutes, by
//     default) each cached object is delivered again as an update whose old
//     and new objects are equal. Resyncs replay the cache; they make no API
//     request. A negative ResyncPeriod disables them; New refuses a
//     positive one under MinResyncPeriod (1s).
//   - Own writes: the cache shows a write only when the watch delivers it.
//     [Informer.Mutation] records the object a write returned, so that Get
//     returns it meanwhile and a reconciliation that follows does not work
//     from the version before the write (and fail its update with a 409),
//     nor, after a create, from no object at all.
//   - Recovery: when the watch fails or expires the informer lists and
//     watches again by itself, with client-go's backoff, and turns the
//     difference into the right adds, updates and deletes; a delete it could
//     not see itself comes as a cache.DeletedFinalStateUnknown tombstone to
//     handlers (Watch unwraps it).
//   - Clean stop: [Informer.Run] returns only when every goroutine the
//     informer started has ended, including those of Watch calls, whose
//     channels are closed by then; a Watch also ends, earlier, with its own
//     context. Event handlers must return: client-go waits for them.
//
// # Metrics
//
// With Config.Registerer set, New registers (reusing the collectors another
// Informer registered before):
//
//	operatorkit_informer_cache_objects{informer}        gauge: objects cached by running informers
//	operatorkit_informer_events_total{informer,event}   counter: event is add, update or delete (resyncs not counted)
//	operatorkit_informer_watch_errors_total{informer}   counter: errors that ended a list or watch
//	operatorkit_informer_undecodable_objects_total{informer}
//	                                                    counter: objects the typed path (Config.RESTConfig)
//	                                                    could not decode into ObjectType, cached unstructured
//
// The informer label is Config.Name (by default GVR.Resource). Informers
// that share a name share these series. The label sets of one informer are
// initialised to zero in New. The cache_objects gauge reads the size of the
// running informers' stores at each scrape (so that a delete delivered twice
// does not lower it twice); when Run returns, the informer's objects are
// taken out of it.
//
// # Logging
//
// The Informer logs with go-kit/log under the key "informer": start and stop
// at debug level, list and watch failures at warn level (expired watches
// and unexpected EOFs, which the informer handles routinely, at debug
// level). client-go itself still logs through klog.
package informer
