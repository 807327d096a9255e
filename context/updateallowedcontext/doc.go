// Package updateallowedcontext carries the "update allowed" signal of one
// reconciliation in a context.Context.
//
// It is a flag resources pass to each other within one reconciliation: an
// earlier resource decides that updates may happen (for example because a
// maintenance window is open) and later resources check IsUpdateAllowed before
// they apply an update change. The framework only creates it, never reads it.
//
// Guarantees:
//   - NewContext returns a child context with a new, unset signal; it shadows
//     a signal the parent may hold.
//   - SetUpdateAllowed on a context without the signal does nothing, and IsUpdateAllowed
//     on such a context returns false. framework.ProcessUpdate and
//     ProcessDelete add the signal when their caller did not.
//   - The signal is one-way: once set it stays set for the rest of the
//     reconciliation.
//   - All functions are safe for concurrent use from several goroutines.
package updateallowedcontext
