// Package resource defines [Interface], the building block of an operator's
// reconciliation: an operator is an ordered chain of resources, and every
// reconciliation of an object runs the chain in order.
//
// Guarantees made to a resource by the framework (framework.ProcessUpdate,
// framework.ProcessDelete and the Framework runtime built on them):
//   - Resources of a chain run one after another in the order given, never
//     concurrently within one reconciliation.
//   - One object is never reconciled by two workers at the same time, but
//     different objects are; a resource must therefore be safe for concurrent
//     use across objects.
//   - The first error stops the chain; the object is reconciled again later
//     (with backoff; an error marked with retry.Permanent only once the
//     object changes, or at the informer's periodic resync), starting from
//     the first resource. Hence every method
//     must be idempotent.
//   - ctx carries the reconciliation signals of the context/<x>context
//     packages; a resource may cancel itself (resourcecanceledcontext) or the
//     rest of the reconciliation (reconciliationcanceledcontext), ask for a
//     requeue (requeuecontext) or, on delete, keep the finalizer
//     (finalizerskeptcontext).
//   - A panic in a resource is recovered by the framework and handled like an
//     error.
//
// Most resources are built with resource/crud, which splits EnsureCreated and
// EnsureDeleted into current state, desired state, patch and apply steps, and
// are wrapped with resource/wrapper/retry and resource/wrapper/metrics.
package resource
