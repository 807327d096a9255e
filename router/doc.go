// Package router picks the resource set that reconciles an object.
//
// A [ResourceSet] is an ordered list of resources plus a Handles predicate
// and an optional InitCtx; an operator usually has one set per version of its
// custom object (for example "v1" and "v2", chosen by a version label). A
// [Router] holds the sets and, for every object, returns the one set whose
// Handles returns true. [Single] builds the router of an operator with one
// set, which handles every object.
//
// Guarantees:
//   - [Router.ResourceSet] returns exactly one set or an error: one matching
//     [ErrNoResourceSet] when no set handles the object (normal when several
//     operators share a kind), one matching [ErrMultipleResourceSets] when
//     several do (a bug in the Handles functions). Errors name the object.
//   - Every Handles function is called once per lookup, in the order of
//     Config.ResourceSets; a Router is safe for concurrent use when the
//     Handles functions are.
//   - Resource names are unique within a set, and set names (when given) are
//     unique within a router, so that logs, traces and metrics identify them.
package router
