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
//   - Panics: a panic in a resource is recovered and returned the same way,
//     wrapping a [*PanicError] (matching [ErrPanic]) with the panic value and
//     stack; the caller treats it like any other error.
//   - Signals: the context gets every signal of the context/<x>context
//     packages the caller did not create, so resources may always set them;
//     signals the caller created are used as they are, so the caller can read
//     them afterwards (for example requeuecontext and finalizerskeptcontext).
//     Every resource gets a fresh resourcecanceledcontext signal, so a
//     resource canceling itself never skips another.
//   - Cancellation: when reconciliationcanceledcontext is set the chain stops
//     before the next resource and returns nil: a canceled reconciliation is
//     a success.
//   - Tracing: with a trace.Trace in the context, every resource's ensure
//     step is recorded (crud resources add their own steps).
//   - Cost: without a trace, a call costs one allocation for the signals plus
//     one per resource run; see docs/benchmarks.md.
//
// # Errors
//
// Sentinels are compared with errors.Is: [ErrInvalidConfig] (the same value
// in every operatorkit package), [ErrExecutionFailed], [ErrPanic] and
// [ErrNoResourceSet] (the same value as router.ErrNoResourceSet). The Is*
// helpers are one-line errors.Is wrappers kept from the seed API.
//
// # Metrics
//
// Metrics of this package are named operatorkit_framework_<name>, from
// [PrometheusNamespace] and [PrometheusSubsystem].
package framework
