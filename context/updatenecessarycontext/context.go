package updatenecessarycontext

import (
	"context"

	"github.com/operatorkit/operatorkit/internal/signal"
)

// NewContext returns a child of ctx holding a new, unset "update necessary"
// signal. It allocates once.
func NewContext(ctx context.Context) context.Context {
	return signal.WithFlag(ctx, signal.UpdateNecessary)
}

// SetUpdateNecessary marks an update as necessary for the rest of the
// reconciliation. It is a no-op when ctx holds no "update necessary" signal.
func SetUpdateNecessary(ctx context.Context) {
	signal.FlagFrom(ctx, signal.UpdateNecessary).Set()
}

// IsUpdateNecessary reports whether an update was marked as necessary. It
// returns false when ctx holds no "update necessary" signal.
func IsUpdateNecessary(ctx context.Context) bool {
	return signal.FlagFrom(ctx, signal.UpdateNecessary).IsSet()
}
