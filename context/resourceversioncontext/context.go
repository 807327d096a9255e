package resourceversioncontext

import (
	"context"

	"github.com/operatorkit/operatorkit/internal/signal"
)

// NewContext returns a child of ctx that can carry a resourceVersion. The
// Framework gives every reconciliation one (in the same context layer as the
// other signals); call it yourself only to use the signal outside a
// Framework. It allocates once.
func NewContext(ctx context.Context) context.Context {
	return signal.WithVersion(ctx)
}

// SetResourceVersion records rv as the resourceVersion the last write to the
// reconciled object returned. Empty rv and a ctx without the signal are
// ignored.
func SetResourceVersion(ctx context.Context, rv string) {
	signal.VersionFrom(ctx).Set(rv)
}

// ResourceVersion returns the resourceVersion last set, and false when none
// was set or ctx has no signal.
func ResourceVersion(ctx context.Context) (string, bool) {
	return signal.VersionFrom(ctx).Get()
}
