package reconciliationcanceledcontext

import (
	"context"

	"github.com/operatorkit/operatorkit/internal/signal"
)

// NewContext returns a child of ctx holding a new, unset "reconciliation
// canceled" signal. It allocates once.
func NewContext(ctx context.Context) context.Context {
	return signal.WithFlag(ctx, signal.ReconciliationCanceled)
}

// SetCanceled cancels the reconciliation ctx belongs to: no further step or
// resource runs, and the reconciliation counts as a success. It is a no-op
// when ctx holds no "reconciliation canceled" signal.
func SetCanceled(ctx context.Context) {
	signal.FlagFrom(ctx, signal.ReconciliationCanceled).Set()
}

// IsCanceled reports whether the reconciliation ctx belongs to was canceled.
// It returns false when ctx holds no "reconciliation canceled" signal.
func IsCanceled(ctx context.Context) bool {
	return signal.FlagFrom(ctx, signal.ReconciliationCanceled).IsSet()
}
