// Package conditioncontext carries, within one reconciliation, the status
// conditions that resources report about the reconciled object, and the
// [Guard] for changes outside Kubernetes.
//
// A Framework with Config.Conditions maintains the kstatus conditions
// [Ready], [Reconciling] and [Stalled] of every object it reconciles. A
// resource may own conditions of its own, such as "DatabaseReady": it calls
// [Set] during the reconciliation, and the Framework writes every condition
// set, together with its own, once at the end of the chain, in a single
// status write, and only when something changed. [Get] reads a condition as
// it will be written (set in this reconciliation) or, when none was set, as
// the object has it. Status fields other than conditions (status.nodes) go
// into the same write through package statuscontext.
//
// A resource may also set the Framework's own types to describe its
// progress; they count when the chain succeeds: Reconciling True (a child is
// not ready yet: pair it with requeuecontext to look again later) or Stalled
// True (nothing more can be done until the object changes) make Ready False
// with the same reason and message, and Ready set by a resource replaces the
// Framework's. When the chain fails, the Framework decides these three.
//
// # Guard
//
// [Guard] protects a change outside Kubernetes that must not happen twice,
// such as creating a database in a cloud API: it first writes the condition
// with status Unknown and the given reason ("Creating") under a
// resourceVersion precondition (the object as the reconciliation read it, or
// as its own last write of it left it: a resource that writes the object
// itself reports the answer's resourceVersion with resourceversioncontext),
// then runs the task, then records the task's outcome as the condition, for
// the end-of-chain write. When the object changed since it was read (a stale
// cache, a second writer), the precondition fails before the task runs, and
// Guard returns an error that matches apierrors.IsConflict: the Framework
// retries the reconciliation with the latest object. The resource decides
// from the object's condition whether the task is needed at all: typically
// it runs Guard only while the condition is not True.
//
// A condition still at status Unknown with the lock's reason after the
// reconciliation means the outcome of an earlier task was never recorded
// (the process stopped, or the end-of-chain write failed): the resource must
// find out from the external system before running the task again. A task
// that panicked is recorded as Unknown too, with the lock's reason plus
// "Failed" (when that fits) and the panic as message (the change may or may not have
// happened), and the panic goes on to the Framework, which retries the
// object. So is a task that returned an error without a status (a timeout,
// a 5xx answer after which the change may have happened): Guard's error
// then matches [ErrOutcomeUnknown], which the retry wrapper
// (resource/wrapper/retry) does not retry in place (that would run the task
// again without finding out first); the Framework retries the object with
// backoff, and its next reconciliation sees the Unknown condition.
//
// Guarantees:
//   - NewContext returns a child context with a new, empty set of conditions
//     and no lock: Guard then runs the task without writing first, which is
//     what a unit test of a resource wants. [NewGuardedContext] knows the
//     object's current conditions and how to lock one; the Framework's
//     reconciliation context holds the same, without a layer of its own.
//   - Set on a context without conditions does nothing, Get and List on such
//     a context find nothing, and Guard on it runs nothing and returns an
//     error matching [ErrNoConditions], marked permanent: only a Framework
//     with Config.Conditions (or NewContext) provides them; ProcessUpdate
//     alone does not, and neither does the delete chain of an object that
//     is already gone (deleted without the Framework's finalizer: with
//     DisableFinalizers, or before its first reconciliation), which has no
//     status to lock: a resource that guards a change in EnsureDeleted
//     needs the Framework's finalizer.
//   - Set does not validate: the Framework validates every condition before
//     it writes, with the rules of metav1.Condition (the type a qualified
//     name, the reason CamelCase), and reports an invalid one as a permanent
//     error matching [ErrInvalidCondition] that names the object and the
//     field. Guard validates its type and reason before it locks.
//   - The last Set of a type wins. All functions are safe for concurrent
//     use from several goroutines. Guards of one condition called at once
//     take turns: each waits until the one before it recorded its outcome
//     (or until ctx ends, its error) before it locks, so a task must not
//     call Guard for its own condition.
package conditioncontext
