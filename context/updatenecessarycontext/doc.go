// Package updatenecessarycontext carries the "update necessary" signal of one
// reconciliation in a context.Context.
//
// It is a flag resources pass to each other within one reconciliation: an
// earlier resource finds that an update is necessary (for example because the
// object's spec changed) and later resources act on it, for example by bumping a
// version or status. The framework only creates it, never reads it.
//
// Guarantees:
//   - NewContext returns a child context with a new, unset signal; it shadows
//     a signal the parent may hold.
//   - SetUpdateNecessary on a context without the signal does nothing, and IsUpdateNecessary
//     on such a context returns false. framework.ProcessUpdate and
//     ProcessDelete add the signal when their caller did not.
//   - The signal is one-way: once set it stays set for the rest of the
//     reconciliation.
//   - All functions are safe for concurrent use from several goroutines.
package updatenecessarycontext
