// Package informertest provides Informer, an in-memory fake of
// informer.Interface for unit tests of code that consumes an informer (the
// Framework, for instance), with no API server and no client.
//
// The fake is deterministic: Add, Update, Delete and DeleteTombstone change
// the store and then call every registered handler synchronously, in the
// calling goroutine, in registration order, so a test knows that all
// handlers have run when the helper returns. Handlers may call any method
// of the fake (no lock is held while they run); a handler registered or
// removed meanwhile takes part from the next event on. Unlike the real
// informer, the fake does not resync and does not copy objects.
package informertest
