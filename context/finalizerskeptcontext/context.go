package finalizerskeptcontext

import (
	"context"

	"github.com/operatorkit/operatorkit/internal/signal"
)

// NewContext returns a child of ctx holding a new, unset "finalizers kept"
// signal. It allocates once.
func NewContext(ctx context.Context) context.Context {
	return signal.WithFlag(ctx, signal.FinalizersKept)
}

// SetKept asks the framework to keep its finalizer on the object being
// deleted, so that the delete chain runs again later. It is a no-op when ctx
// holds no "finalizers kept" signal.
func SetKept(ctx context.Context) {
	signal.FlagFrom(ctx, signal.FinalizersKept).Set()
}

// IsKept reports whether a resource asked to keep the finalizer. It returns
// false when ctx holds no "finalizers kept" signal.
func IsKept(ctx context.Context) bool {
	return signal.FlagFrom(ctx, signal.FinalizersKept).IsSet()
}
