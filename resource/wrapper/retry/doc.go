// Package retry wraps a resource.Interface so that failed operations are
// retried with a backoff from github.com/cenkalti/backoff/v4.
//
// What is retried: when the wrapped resource runs a crud.Resource underneath
// (a *crud.Resource, or another wrapper around one; see crud.OpsWrapper),
// each CRUD step is retried on its own, so a failed apply is retried without
// reading the current and desired state again. Otherwise the whole
// EnsureCreated or EnsureDeleted is retried. Every retried call gets a new
// backoff from Config.BackOffFactory.
//
// Guarantees:
//   - An error marked with [Permanent] is never retried, and is returned with
//     its mark, so the framework's backoff can honour it too.
//   - An error that asks for a wait ([DelayOf]: one marked with [After],
//     or a Kubernetes API server's answer with a Retry-After, which
//     client-go's REST client retried up to 10 times already) is returned at
//     once, with its mark, whatever Config.Retryable says: the wrapper does
//     not wait d in place, even a d within its own budget, so that a
//     worker is never held for an API's wait and there is one rule to
//     know. The framework requeues the object after d or its backoff,
//     whichever is longer.
//   - An error of a conditioncontext.Guard whose change's outcome is unknown
//     (it matches conditioncontext.ErrOutcomeUnknown: the task failed, and
//     the change outside Kubernetes may have happened) is returned at once,
//     unmarked, whatever Config.Retryable says: running the step again
//     would run the task again before the resource found out whether it
//     did, and could make the change twice. The Framework retries the
//     object with backoff, and its next reconciliation reads the state
//     again.
//   - An error Config.Retryable rejects is returned at once, unmarked. The
//     default, [DefaultRetryable], rejects Kubernetes API errors that the same
//     request cannot fix: a 409 conflict needs a fresh read of the object,
//     which only a new reconciliation gives (the framework requeues it with
//     backoff); 403, 422, 400 and the like stay what they are. Retrying them
//     in place only fills the log.
//   - Retries stop when the backoff returns backoff.Stop (the last error is
//     returned), when the call canceled the resource or the reconciliation
//     (resourcecanceledcontext, reconciliationcanceledcontext: nothing more
//     to do this time; its error is returned) or when ctx is done (the last
//     error joined with context.Cause(ctx) is returned, or the last error
//     alone when it already matches the cause, as a resource's ctx.Err()
//     does); waiting never outlives ctx.
//   - Each retry is logged at warn level with the keys resource, operation
//     (a crud.Step* or resource.Operation* name), attempt (1 for the first
//     failure), backoff and err.
//
// Wrappers compose: retry.New(Config{Resource: metrics(crud)}) retries each
// step and times each attempt; metrics wrapping retry(crud) times each step
// including its retries.
package retry
