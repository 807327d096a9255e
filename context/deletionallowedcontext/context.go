package deletionallowedcontext

import (
	"context"

	"github.com/operatorkit/operatorkit/internal/signal"
)

// NewContext returns a child of ctx holding a new, unset "deletion allowed"
// signal. It allocates once.
func NewContext(ctx context.Context) context.Context {
	return signal.WithFlag(ctx, signal.DeletionAllowed)
}

// SetDeletionAllowed marks deletions as allowed for the rest of the
// reconciliation. It is a no-op when ctx holds no "deletion allowed" signal.
func SetDeletionAllowed(ctx context.Context) {
	signal.FlagFrom(ctx, signal.DeletionAllowed).Set()
}

// IsDeletionAllowed reports whether deletions were marked as allowed. It
// returns false when ctx holds no "deletion allowed" signal.
func IsDeletionAllowed(ctx context.Context) bool {
	return signal.FlagFrom(ctx, signal.DeletionAllowed).IsSet()
}
