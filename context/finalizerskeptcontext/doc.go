// Package finalizerskeptcontext carries the "finalizers kept" signal of one
// reconciliation in a context.Context.
//
// During a delete, a resource calls SetKept to keep the framework's finalizer on
// the object although its EnsureDeleted returned nil, so that the delete chain
// runs again later (for example while an external resource is still being torn
// down). The Framework reads it after ProcessDelete; ProcessUpdate ignores it.
//
// Guarantees:
//   - NewContext returns a child context with a new, unset signal; it shadows
//     a signal the parent may hold.
//   - SetKept on a context without the signal does nothing, and IsKept
//     on such a context returns false. framework.ProcessUpdate and
//     ProcessDelete add the signal when their caller did not.
//   - The signal is one-way: once set it stays set for the rest of the
//     reconciliation.
//   - All functions are safe for concurrent use from several goroutines.
package finalizerskeptcontext
