// Package deletionallowedcontext carries the "deletion allowed" signal of one
// reconciliation in a context.Context.
//
// It is a flag resources pass to each other within one reconciliation: an
// earlier resource decides that deleting managed state is safe and later
// resources check IsDeletionAllowed before they apply a delete change. The
// framework only creates it, never reads it.
//
// Guarantees:
//   - NewContext returns a child context with a new, unset signal; it shadows
//     a signal the parent may hold.
//   - SetDeletionAllowed on a context without the signal does nothing, and IsDeletionAllowed
//     on such a context returns false. framework.ProcessUpdate and
//     ProcessDelete add the signal when their caller did not.
//   - The signal is one-way: once set it stays set for the rest of the
//     reconciliation.
//   - All functions are safe for concurrent use from several goroutines.
package deletionallowedcontext
