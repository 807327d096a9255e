package updateallowedcontext

import (
	"context"

	"github.com/operatorkit/operatorkit/internal/signal"
)

// NewContext returns a child of ctx holding a new, unset "update allowed"
// signal. It allocates once.
func NewContext(ctx context.Context) context.Context {
	return signal.WithFlag(ctx, signal.UpdateAllowed)
}

// SetUpdateAllowed marks updates as allowed for the rest of the
// reconciliation. It is a no-op when ctx holds no "update allowed" signal.
func SetUpdateAllowed(ctx context.Context) {
	signal.FlagFrom(ctx, signal.UpdateAllowed).Set()
}

// IsUpdateAllowed reports whether updates were marked as allowed. It returns
// false when ctx holds no "update allowed" signal.
func IsUpdateAllowed(ctx context.Context) bool {
	return signal.FlagFrom(ctx, signal.UpdateAllowed).IsSet()
}
