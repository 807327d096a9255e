// Package resourceversioncontext carries, within one reconciliation, the
// resourceVersion of the reconciled object as the last write to it returned.
//
// A resource that writes the reconciled object itself (its status, an
// annotation) calls SetResourceVersion with the resourceVersion the API
// server answered. The Framework does the same for its finalizer patch.
// After the chain, the Framework expects its cache to show that version, or
// a newer one (compared as integers; a version that is not an integer only
// by equality): a reconciliation woken up before the cache has caught up (a
// child's event arriving first) is deferred until it has, instead of
// reading the object as it was before the write, which would repeat the
// write and fail it with a conflict. The wait is bounded
// (framework.DefaultWriteExpectationTTL), and a newer generation of the
// object ends it at once.
//
// Safe for concurrent use; the last version set wins. Without NewContext,
// SetResourceVersion does nothing and ResourceVersion returns false.
package resourceversioncontext
