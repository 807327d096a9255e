package statuscontext

import (
	"context"

	"github.com/operatorkit/operatorkit/internal/ctxkey"
	"github.com/operatorkit/operatorkit/internal/statusfields"
)

// ErrInvalidField is matched by the permanent error of a reconciliation in
// which a resource set a field that cannot be written: a name that is empty,
// holds a dot, or is "conditions" or "observedGeneration" (the Framework's
// own), a value that does not encode to JSON, or a field or value the
// API server refuses (one the CRD's status schema does not declare or
// allow). The error names the object and the field. framework.ErrInvalidStatusField is the same value.
var ErrInvalidField = statusfields.ErrInvalidField

// NewContext returns a child of ctx holding a new, empty set of status
// fields. The Framework makes the set of each reconciliation itself, with
// framework.Config.Conditions; call NewContext to run a resource without a
// Framework, in its unit test for instance, and read with [Get] what it set.
func NewContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, ctxkey.StatusFields{}, &statusfields.Store{})
}

// Set records value as the field of the reconciled object's status named
// field (a top-level field: "nodes" for status.nodes), for the Framework's
// status write at the end of the reconciliation. value is encoded to JSON
// at once, so a later change of it changes nothing; a nil value (or one
// that encodes to null) removes the field the Framework wrote before. A
// later Set of the same field replaces the value. Set does not fail: a
// field that cannot be written fails the reconciliation (see
// [ErrInvalidField]). It is a no-op on a context without status fields.
// Safe for concurrent use.
func Set(ctx context.Context, field string, value any) {
	if s := statusfields.From(ctx); s != nil {
		s.Set(field, value)
	}
}

// Get returns the value last set for field with [Set] in this
// reconciliation, as it was given, and true; nil and false when none was
// set or ctx has no status fields. It does not read the object: a resource
// reads the object's status from the object it is given.
func Get(ctx context.Context, field string) (any, bool) {
	s := statusfields.From(ctx)
	if s == nil {
		return nil, false
	}
	return s.Get(field)
}
