package resourcecanceledcontext

import (
	"context"

	"github.com/operatorkit/operatorkit/internal/signal"
)

// NewContext returns a child of ctx holding a new, unset "resource canceled"
// signal. It allocates once.
func NewContext(ctx context.Context) context.Context {
	return signal.WithFlag(ctx, signal.ResourceCanceled)
}

// SetCanceled cancels the rest of the resource running with ctx; the next
// resource runs as usual. It is a no-op when ctx holds no "resource canceled"
// signal.
func SetCanceled(ctx context.Context) {
	signal.FlagFrom(ctx, signal.ResourceCanceled).Set()
}

// IsCanceled reports whether the resource running with ctx was canceled. It
// returns false when ctx holds no "resource canceled" signal.
func IsCanceled(ctx context.Context) bool {
	return signal.FlagFrom(ctx, signal.ResourceCanceled).IsSet()
}
