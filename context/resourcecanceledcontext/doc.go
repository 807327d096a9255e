// Package resourcecanceledcontext carries the "resource canceled" signal of
// one reconciliation in a context.Context.
//
// A resource calls SetCanceled to stop only itself: a crud.Resource runs none of
// its remaining steps and returns nil, and the chain goes on with the next
// resource. framework.ProcessUpdate and ProcessDelete give every resource a fresh
// signal (whatever the caller's context holds), so canceling one resource never
// skips another.
//
// Guarantees:
//   - NewContext returns a child context with a new, unset signal; it shadows
//     a signal the parent may hold.
//   - SetCanceled on a context without the signal does nothing, and IsCanceled
//     on such a context returns false. framework.ProcessUpdate and
//     ProcessDelete add the signal when their caller did not.
//   - The signal is one-way: once set it stays set for the rest of the
//     reconciliation.
//   - All functions are safe for concurrent use from several goroutines.
package resourcecanceledcontext
