// Package framework runs an operator's resources for the objects it watches.
//
// # Running a chain
//
// [ProcessUpdate] and [ProcessDelete] run one reconciliation of one object:
// they call EnsureCreated, or EnsureDeleted, of each resource of a chain in
// order. They are plain functions with no state, usable on their own (in
// tests, in an informer's event handler) and used by the framework's runtime.
// Guarantees:
//   - Order: resources run one after another, in the order given, in the
//     caller's goroutine.
//   - First error stops: the first resource error ends the chain and is
//     returned as an [*ExecutionError] naming the resource and operation;
//     [IsExecutionFailed] reports it, and the resource's own error stays
//     reachable with errors.Is and errors.As.
//   - Panics: a panic in a resource (in its Name too) is recovered and
//     returned the same way, wrapping a [*PanicError] (matching [ErrPanic])
//     with the panic value and stack; the caller treats it like any other
//     error.
//   - Signals: the context gets every signal of the context/<x>context
//     packages the caller did not create, so resources may always set them;
//     signals the caller created are used as they are, so the caller can read
//     them afterwards (for example requeuecontext and finalizerskeptcontext).
//     Every resource gets a fresh resourcecanceledcontext signal, so a
//     resource canceling itself never skips another. Three packages are not
//     signals of the chain and are not added: conditioncontext and
//     statuscontext (the Framework's, with Config.Conditions) and
//     resourceversioncontext (read by the Framework only); outside a
//     Framework their setters do nothing unless the caller made them with
//     NewContext.
//   - Cancellation: when reconciliationcanceledcontext is set the chain stops
//     before the next resource and returns nil: a canceled reconciliation is
//     a success.
//   - Tracing: with a trace.Trace in the context, the ensure step of every
//     resource that runs is recorded (crud resources add their own steps);
//     of a chain that stops early (canceled, or superseded), the resource it
//     stops before is recorded as canceled, and none after it.
//   - Cost: without a trace, a call costs one allocation for the signals plus
//     one per resource run; see docs/benchmarks.md.
//
// # The runtime: Framework
//
// [New] and [Framework.Boot] run the chain for every object of one kind, the
// flow of DESIGN.md:
//
//	informer events -> update predicate -> rate-limited work queue (key namespace/name)
//	  -> worker: latest object from the informer cache -> router -> InitCtx
//	  -> deleting ? ProcessDelete : (add finalizer) ProcessUpdate -> outcome
//
// Guarantees and choices:
//   - Level-based: a worker always reconciles the object as the cache has it
//     now, never the copy carried by an event; many events for one object
//     coalesce into one reconciliation (client-go's queue dedups keys).
//   - One at a time per object: the queue never hands one key to two
//     workers at once. Config.Workers objects are reconciled in parallel.
//   - Finalizers: the finalizer "operatorkit.io/<Name>" is added before the
//     first EnsureCreated, with a JSON merge patch carrying the object's
//     resourceVersion (a conflict is retried with the latest object, no
//     finalizer of anyone else is lost). The chain then sees a copy of the
//     object with the new resourceVersion, so a status write in the same
//     reconciliation does not conflict. An object with a deletionTimestamp
//     and our finalizer runs ProcessDelete; the finalizer is removed, with the
//     same kind of patch, only when every EnsureDeleted succeeded, none set
//     finalizerskeptcontext and none canceled the chain
//     (reconciliationcanceledcontext: the resources after it did not run;
//     the chain runs again, after the delay asked for with requeuecontext,
//     else with the object's backoff). When a resource of the delete chain
//     wrote the object itself (a Guard's lock, a status patch, its version
//     reported with resourceversioncontext), the patch does not carry the
//     version read, which would conflict with that write: the object's
//     finalizers are read again (one read) and patched on the version read
//     then, since that write need not have had a precondition and another
//     controller may have removed its own finalizer before it (the API
//     server refuses a finalizer added back to an object in deletion). An object
//     deleted while the operator is down keeps the finalizer and is cleaned
//     up after the next Boot. A finalizer that someone else removes from an
//     object that is not being deleted is added back at once
//     ([Framework.UpdateFunc] enqueues the object whatever the update
//     predicate says). An object in deletion that no resource set
//     handles (relabelled out of every set) runs the delete chain of the
//     set that last reconciled it in this process; one that none did here
//     waits (result no_resource_set) for labels a set handles.
//   - Own writes do not wake the operator: [DefaultUpdatePredicate] drops
//     updates that change neither generation, labels, annotations nor the
//     deletion state (status writes, the finalizer patch). Resyncs (but
//     of an object during a wait its last error asked for, see Failures)
//     and [Framework.Enqueue] always enqueue (Enqueue drops, with a
//     warning, a key that can name no object); watches on children call
//     Enqueue.
//   - Own writes are waited for: a resource that writes the reconciled
//     object itself (a status patch) reports the resourceVersion the API
//     server returned with resourceversioncontext; the Framework does the
//     same for its finalizer patch. Until the cache shows that version, or
//     a newer one (a relist after a restarted watch can skip it; versions
//     are compared as integers, and one that is not an integer, as an
//     aggregated API server's can be, only by equality), a reconciliation
//     woken up by something else (a child's event) is deferred (result
//     "stale") and runs as soon as the cache catches up, instead of
//     computing from the old object and failing its write with a conflict.
//     A newer generation ends the wait at once, and it is bounded by
//     DefaultWriteExpectationTTL. A conflict that happens anyway (someone
//     else wrote) is result "conflict", logged at info, not reported as a
//     failure, and retried with the latest object: at once when the cache
//     already holds the version that won, otherwise with backoff; and when
//     the conflict is on the reconciled object itself (the API server's 409
//     names its resource and name: the finalizer patch, a status apply with
//     its precondition, a Guard lock, a resource's own write of the
//     object), the retry waits, as for an own write, until the cache shows
//     a version other than the one that lost (result "stale" meanwhile),
//     so that it does not send again a write that must fail. Config.Resource
//     or the informer's GVR tells the Framework the object's resource;
//     without either, conflicts are retried with backoff alone. The 409
//     does not name the namespace: a conflict on a child of the same
//     resource and name in another namespace (a copy of the object) is
//     taken for one on the object, and its retry waits as well, at most
//     DefaultWriteExpectationTTL, unless the object changes before.
//   - Superseded work stops: before each resource, the Framework checks
//     whether the cache already holds a newer generation of the object (its
//     spec changed, or its deletion started, during the reconciliation). If
//     it does, the chain stops there with result "superseded" and the newer
//     generation is reconciled next, so a burst of spec changes costs the
//     writes of the last one, not of each (Config.RunSuperseded turns this
//     off). A label change makes no new generation: a chain of the
//     resource set that the object's labels no longer route to finishes,
//     and the new set's runs next (router's doc.go: objects that move
//     between sets).
//   - Failures: an error requeues the object with its own exponential
//     backoff ([DefaultRequeueBackOff], or Config.BackOffFactory /
//     Config.RateLimiter), held at its maximum, never dropped; a success
//     resets it, unless it asks for another run at once (requeuecontext
//     with a delay of 0 or less: that run waits the object's backoff,
//     which goes on from where the failures left it). An error marked
//     with retry.Permanent is not retried until the object changes (or
//     something else wakes it: a child's event, a resync). An error that
//     asks for a wait (retry.DelayOf: one marked with retry.After, such
//     as a provider's 429 with Retry-After, or a Kubernetes API server's
//     answer with a Retry-After that client-go's REST client gave up
//     retrying) is a failure like any other (result "error", Ready False
//     with the error and its reason, Reconciling True, the error metric
//     and log line, a Warning event, the backoff grows; in a delete chain
//     the finalizer stays), and the object is requeued after the longer of
//     that wait and its backoff interval: never sooner than the API asked,
//     and never sooner than its backoff (the trace's RequeueAfter is the
//     wait asked for). The informer's periodic resync does not reconcile
//     the object before that wait has passed, nor does a requeue the
//     Framework asked for before it (an earlier failure's shorter wait or
//     backoff, a delay a resource asked for: client-go's queue keeps the
//     earliest time a key was added after), which waits for the rest of
//     it: they bring nothing new, and the requeue at the wait's end
//     reconciles the object anyway (a resync still runs an object whose
//     backoff alone has not passed, as client-go's queue does). The
//     Framework keeps the wait's end with the object, in memory, until an
//     event wakes it or its next reconciliation begins after the wait (a
//     restart, or the next owner after Release, does not know it). A
//     change of the object or an event that wakes it (a child's,
//     [Framework.Enqueue]; also one that came while the failing
//     reconciliation ran) reconciles it sooner (a resource that must
//     never call its API sooner keeps the time it may, and returns its
//     error again without calling). A panic in a
//     resource, InitCtx or Handles is recovered, logged with its stack, counted
//     (operatorkit_framework_panics_total) and retried with backoff; other
//     objects go on. Each reconciliation is bounded by
//     Config.ReconcileTimeout; a timed-out one is a failure like any other,
//     and the worker is free again — provided
//     the resource honours its context (Go cannot stop a goroutine that
//     ignores it: such a resource keeps its worker; make every I/O call
//     take ctx).
//   - Requeue: a resource may ask for another run with requeuecontext; the
//     shortest delay asked for wins. An error of the chain takes precedence
//     (backoff, the longer of backoff and the wait an error asks for with
//     retry.After, or none for a permanent one). A delete chain's request
//     counts only when the chain keeps the finalizer (finalizerskeptcontext,
//     a canceled chain); a delete chain that finished has nothing to come
//     back for.
//   - Unroutable objects: an object no ResourceSet handles is logged,
//     counted (result "no_resource_set"), recorded as a Warning event, and
//     not retried with backoff: routing is a pure function of the object,
//     so retrying could not help; it runs again when it changes (or at the
//     informer's periodic resync, which runs every object again). If the
//     object is being deleted and carries our finalizer, the finalizer is
//     kept: removing it could leak whatever
//     an earlier release created for it, while keeping it is visible (the
//     object stays Terminating, with an event saying why, and counts in
//     objects_in_deletion and oldest_deletion_age_seconds) and is fixed by
//     deploying a release that handles the object, or by removing the
//     finalizer by hand once its resources are known to be gone.
//   - Shutdown: when Boot's context ends the Framework takes no new work,
//     lets in-flight reconciliations finish (they are not canceled, only
//     bounded by the reconcile timeout), stops the informer and returns nil.
//     Keys still queued are taken out of the queue and never reconciled by
//     this Framework (Boot runs once); the state they stand for is in the
//     API server, and the next Framework's Boot (a restart, another
//     replica) reconciles every object again. No goroutine is left behind.
//     [Framework.Abort] cancels the reconciliations in flight instead, for
//     a replica that lost its Lease and must stop writing at once: a
//     reconciliation that Abort ended writes no status and records no
//     event.
//   - Hand-over: [Framework.Release] stops reconciling one object, after
//     the reconciliation in flight (in flight from before it reads the
//     object from the cache), so that another owner (a shard of the
//     operator package) takes it; the object leaving the informer is then
//     forgotten, its delete chain does not run. [Framework.Reclaim] takes
//     it back.
//   - Dry run: with Config.DryRun the Framework computes every object's
//     [Plan] (the read-only half of each crud resource), records it in the
//     trace store and metrics, and writes nothing, not even its finalizer;
//     it plans the chain a reconciliation without DryRun would run, so an
//     object being deleted without the Framework's finalizer, which such a
//     reconciliation skips, is skipped with no plan.
//     [Framework.Plan] computes one object's plan on demand, through the
//     router ([ObjectPlan]); operator.Operator.Plan runs it for a one-off
//     plan command. With Config.Conditions, the set's InitCtx and the
//     resources of a plan find the object's conditions with
//     conditioncontext.Get, as in a reconciliation (none of them is
//     written; an object already gone has none, as its delete chain has
//     none).
//   - Traces: every reconciliation records its path (resource set, each
//     resource and CRUD step with outcome and duration, result). The last
//     Config.TracesPerObject traces of the last Config.TraceObjects objects
//     are kept (memory bounded; see [MaxStepsPerTrace]; objects whose last
//     reconciliation ended without an error take at most half of the
//     places, so that healthy objects do not push failing ones out, and a
//     reconciliation that changed nothing takes only a free place, so that
//     a resync does not push out the traces of changes), returned by
//     [Framework.Traces], logged as one debug line, and served as JSON or text
//     by [Framework.DebugHandler].
//   - Cost of a reconciliation that changes nothing: the Framework's own
//     work is a handful of allocations (one context that carries the
//     reconciliation's signals, trace and conditions in its own fields, the
//     trace's head, a fresh resource-canceled signal per resource; none in
//     the work queue, whose FIFO is a ring buffer that keeps its room
//     (client-go's default reallocates its slice as keys pass through,
//     about 36 bytes per key); with Config.Conditions the status state
//     only when a resource asks for the conditions, sets a status field
//     (statuscontext) or the object does not already show the outcome),
//     one clock read
//     per step (a step starts where the one before it ended), no timer (the
//     reconcile timeout's timer is made only when something waits on the
//     context's Done, as a client call does), and no log line built unless
//     Config.Logger is set. docs/benchmarks.md has the figures.
//
// # Status conditions
//
// With Config.Conditions the Framework maintains the status of every object
// it reconciles (its CRD needs a status subresource; a kind built into
// Kubernetes whose status its own controller writes, such as a Namespace,
// is refused by New), following the kstatus
// conventions of sigs.k8s.io/cli-utils, so that
// "kubectl wait --for=condition=Ready" and kstatus-based tools understand
// every operatorkit operator. Condition types and the resource-facing API
// are in package conditioncontext.
//   - Ready (normal-true): True, reason [ReasonSucceeded], after a
//     successful chain; False after a failed one, with reason
//     "<Resource><Step>Failed" in CamelCase ("ConfigmapApplyCreateChangeFailed")
//     and the error as message; False with a resource's reason when a
//     resource reported Reconciling or Stalled True.
//   - Reconciling (abnormal-true, present only while True): while a failed
//     reconciliation is retried with backoff (reason
//     [ReasonProgressingWithRetry]), or when a resource reported that a
//     child is not ready yet.
//   - Stalled (abnormal-true, present only while True): the give-up state:
//     a permanent error (retry.Permanent), no resource set, an invalid
//     condition; not retried with backoff: the next reconciliation is the
//     object's next change, an event that wakes it (a child's, through
//     operator.Owns; [Framework.Enqueue]), or the informer's periodic
//     resync, which runs every object again.
//   - status.observedGeneration, and each condition's observedGeneration,
//     is the generation the outcome is about. lastTransitionTime changes
//     only when a condition's status does (and when a Guard locks it).
//   - Resources own conditions of their own through conditioncontext.Set;
//     they are written with the Framework's, and kept while no resource sets
//     them again: also after the object moved to a resource set none of
//     whose resources sets them (it may be a Guard's outcome, which a move
//     back must find), with the generation they observed, which a label
//     change does not change. A set to which such a condition does not
//     apply sets it to what it means there. An invalid condition (a type that is not a qualified name,
//     a reason that is not CamelCase) is left out and fails the
//     reconciliation with a permanent error matching [ErrInvalidCondition]
//     that names the object and the field.
//   - One write per reconciliation at most (plus one per Guard lock, and a
//     read and another apply after a conflict, see below), at the
//     end of the chain, whatever its outcome (but none after Abort), and
//     none when the status as read from the cache already says it all: a
//     steady resync writes nothing. A conflict, a stale cache, a superseded
//     chain or a delete chain that succeeded decide nothing about Ready,
//     Reconciling and Stalled; conditions and status fields resources set
//     are still written (a Guard's outcome must be). Nothing is written
//     once the finalizer is removed.
//   - Events: a Normal or Warning event (Warning when Ready or a resource's
//     condition turns False, or Stalled True), with the condition's reason,
//     when a condition's status or reason changes; none on steady
//     reconciliations, and none for a condition that appears in its good
//     state (Ready True on a new object's first reconciliation: the
//     expected path, shown by the status, would cost one API write per
//     object), nor after Abort. client-go's recorder rate-limits them per
//     object, and records those of a cluster-scoped object in the
//     namespace "default".
//   - Other status fields (the names of a Deployment's pods in
//     status.nodes, an endpoint, an external system's record ID) are set by
//     resources with statuscontext.Set(ctx, field, value), a top-level field
//     of status, and written in the same apply, under Config.FieldManager:
//     no write, field manager or comparison of their own. The same rules
//     hold as for the conditions resources set: a field is written only
//     when its value (as JSON) differs from the object's (an empty list or
//     map is the same as an absent field); one set before a
//     chain failed (or stopped) is written with the failure's conditions;
//     one the Framework wrote before and no resource sets this time is kept
//     (the apply carries it over, read from the object: managedFields tell
//     which fields are the Framework's; when the cache dropped them and
//     the object holds a field not set this time, they are read from the
//     API server before the write, unless the answer to the Framework's
//     last apply of the object in this process, or its last read, showed
//     its field manager owning none: see below); nil removes it. A field
//     named "conditions" or "observedGeneration", or with a dot, or a
//     value that does not encode
//     to JSON, or a field or value the CRD's status schema refuses (the
//     API server refuses the whole apply; the Framework applies again
//     without it), is left out and fails the reconciliation with a permanent
//     error matching [ErrInvalidStatusField] that names the object and the
//     field (reason [ReasonInvalidStatusField]). A typed object's field is
//     read from its Go field of that JSON name (one of an embedded struct
//     too), encoded alone, and only in
//     a reconciliation that sets a field or writes: one that sets none
//     costs nothing more (BenchmarkNoOpReconciliation); one that sets a
//     field to the value the object holds costs about 3 µs and 21
//     allocations more (its case field=set). With a cache that drops
//     managedFields (the Operator's informers do), the first status write
//     in a process of an object whose status holds a field no resource set
//     this time (another writer's too) reads the object first: an earlier
//     process, or release, may have applied that field under
//     Config.FieldManager, and only managedFields tell. The answer to the
//     apply tells which fields the Framework's manager owns then, and the
//     Framework remembers per object (a bit of the state it keeps anyway)
//     when it owns none: its later writes of the object need no read, so
//     a Framework whose resources set no field reads each such object at
//     most once per process. A write after one that applied a field reads
//     managedFields again, as does the first write after Release (the next
//     owner may apply fields under the same manager). This holds while
//     one process at a time writes the object under Config.FieldManager
//     (leader election, or a shard's Lease; resources apply with field
//     managers of their own, as below). A status field another writer
//     applies under a field manager of its own stays its own: the
//     Framework's apply neither carries it over nor removes it. Write a
//     field so (a server-side apply of the status subresource under a field
//     manager other than Config.FieldManager, the answer's resourceVersion
//     reported with resourceversioncontext) only when it must be written
//     before the chain's end, or without Config.Conditions; never set one
//     field both ways. See package statuscontext, and
//     docs/getting-started.md ("Later: steps that run one after another")
//     for a workflow's status.currentStep set before a child that waits.
//   - A CRD without status subresource fails at New when Config.CRD says
//     so, otherwise at the first write, with a permanent error matching
//     [ErrNoStatusSubresource] that names the object (the API server answers
//     404 for the subresource; a read of the object tells it from an object
//     that is gone). Neither panics nor loops.
//
// Design note: how the Framework writes.
//   - Finalizer writes keep their resourceVersion precondition: a JSON merge
//     patch of metadata.finalizers must not lose a finalizer someone else
//     added since the read. They go through Config.MetadataClient when it
//     is set (operator.Operator.NewFramework sets it), so the API server
//     answers with the object's metadata only.
//   - Status writes use server-side apply on the status subresource under
//     the Framework's field manager (Config.FieldManager,
//     "operatorkit-<Name>"; through Config.MetadataClient when it is set,
//     so that the answer is the object's metadata only), with force: the
//     Framework owns only the fields it applies, the conditions it sets,
//     status.observedGeneration and the fields resources set with
//     statuscontext, so the write cannot undo another controller's status
//     field. An object that carries the Framework's
//     finalizer is the one read until the Framework removes it, so its
//     apply has no resourceVersion precondition: a concurrent spec change
//     cannot make the write fail; unless the apply carries over, from the
//     object as read, a condition (in a map list, below: one it applied
//     before that no resource decides this time) or a status field
//     (statuscontext), which it then applies on that version only, so that
//     a stale cache does not write back a value another writer (kubectl, a
//     controller that took the condition type over) changed since; a
//     conflict reads the latest object and applies again, as below. Its
//     apply that carries nothing over (every condition it applied before
//     decided again, no status field left unset) has none, and costs
//     nothing more. An object that does not (DisableFinalizers,
//     or a finalizer removed by another writer) may be deleted and created
//     again under its name while the chain runs, and the new one must not
//     get the first one's outcome: its apply carries the resourceVersion of
//     the object as the reconciliation last knew it, the one precondition
//     the API server honours on the status subresource (it ignores
//     metadata.uid there). A concurrent change then answers 409; the
//     Framework reads the latest object and, when it is still the one
//     reconciled (same UID), applies again on it (up to two times; then the
//     reconciliation ends as a conflict and is retried), at the price of a
//     read and a second apply. When
//     status.conditions is a map list keyed by type
//     (x-kubernetes-list-type: map, as kubebuilder generates for
//     []metav1.Condition) the apply holds only the
//     Framework's conditions, carrying over those it applied before
//     (managedFields tell which); when it is an atomic list (for instance
//     under x-kubernetes-preserve-unknown-fields) the API server replaces it
//     whole, so the apply holds the whole list as the cache shows it, other
//     writers' conditions included: a condition another writer adds between
//     the read and the write can be lost then. Declare the list as a map to
//     avoid that. With informer.Config.DropManagedFields the Framework learns
//     the list type from its first write's answer, and reads managedFields
//     from the API server before a write only when the object holds a
//     condition that the reconciliation does not decide (to know whether it
//     owns it).
//   - A typed cache (informer.Config.RESTClient) strips apiVersion and kind,
//     which an apply needs: without Config.CRD, the Framework reads the kind
//     from the API server once per process.
//   - A typed object laid out as kubebuilder generates it (Status with
//     Conditions []metav1.Condition and ObservedGeneration int64) is read
//     without a conversion to unstructured: a steady reconciliation that
//     writes nothing costs 0.1–0.2 µs more for it (BenchmarkNoOpReconciliation,
//     conditions=true against false, on the 2-core machine of
//     docs/benchmarks.md; BenchmarkSteadyStatus, which also makes the
//     conditions' context the Framework keeps in its own, 0.32–0.36 µs).
//   - A failed reconciliation's reason is the one its error carries
//     (conditioncontext.WithReason), such as "InvalidSpec", or else
//     "<Resource><Step>Failed".
//   - The answer's resourceVersion of every status write (and Guard lock)
//     feeds the own-write expectations, as the finalizer patch's does, so
//     the operator is not woken by its own write nor reconciles from a
//     cache that does not show it.
//   - The Guard (conditioncontext.Guard) is the one status write that keeps
//     a resourceVersion precondition, on purpose: a JSON merge patch of
//     status.conditions carrying the latest resourceVersion the
//     reconciliation knows of the object: the one it read, its own last
//     lock's, or the one a resource's own write of the object left and
//     reported with resourceversioncontext (as the finalizer patch does),
//     never an older one, which that write superseded. After such a write
//     the lock reads the object first (its answer is not at hand): another
//     version than the one reported, another generation or other conditions
//     (someone else's write before or after the own one) fail the lock as
//     a conflict, without writing. A stale cache or a second writer
//     (another replica) fails it with 409 before the task runs, and the
//     reconciliation ends as a conflict, retried with the latest object. A
//     condition locked by another reconciliation (status Unknown, message
//     conditioncontext.LockMessage) for less than Config.ReconcileTimeout
//     plus 10 s stops the Guard the same way; an
//     older lock belongs to a reconciliation that died, and is taken over.
//     lastTransitionTime holds whole seconds, so a lock is taken over once
//     it is Config.ReconcileTimeout plus 11 s ago, never early by the
//     clock of the replica that reads it (a skew between the replicas'
//     clocks moves the take-over by as much).
//
// # Errors
//
// Sentinels are compared with errors.Is: [ErrInvalidConfig] (the same value
// in every operatorkit package), [ErrExecutionFailed], [ErrPanic],
// [ErrNoResourceSet] (the same value as router.ErrNoResourceSet),
// [ErrInvalidCondition] (the same value as
// conditioncontext.ErrInvalidCondition), [ErrInvalidStatusField] (the same
// value as statuscontext.ErrInvalidField) and [ErrNoStatusSubresource]. The Is*
// helpers are one-line errors.Is wrappers kept from the seed API.
//
// # Metrics
//
// Metrics of this package are named operatorkit_framework_<name>, from
// [PrometheusNamespace] and [PrometheusSubsystem], and are labelled with the
// Framework's name ("controller") and other low-cardinality values only
// (result, resource, step, resource_set), never with object names:
// reconciliations_total{result}, reconcile_duration_seconds, errors_total
// {resource,step}, panics_total, last_successful_reconcile_timestamp_seconds,
// objects_in_deletion, oldest_deletion_age_seconds,
// oldest_pending_reconcile_age_seconds, objects{resource_set},
// update_events_filtered_total and watch_errors_total. client-go's work
// queue metrics are exported as operatorkit_workqueue_<name>{name}.
// docs/observability.md describes each.
package framework
