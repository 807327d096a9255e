// Package ctxkey holds the context keys that a package of this module
// stores a value under and another package answers for: framework's
// reconciliation context carries the values of one reconciliation in its
// own fields, in one allocation and one context layer, instead of a
// context.WithValue layer for each.
package ctxkey

// Trace is the key of the *trace.Trace of a reconciliation
// (trace.NewContext, trace.FromContext).
type Trace struct{}

// Conditions is the key of the *conditions.Store of a reconciliation
// (conditioncontext.NewContext, conditioncontext.NewGuardedContext).
type Conditions struct{}

// StatusFields is the key of the *statusfields.Store of a reconciliation
// (statuscontext.NewContext).
type StatusFields struct{}
