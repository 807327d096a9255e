package requeuecontext

import (
	"context"
	"time"

	"github.com/operatorkit/operatorkit/internal/signal"
)

// NewContext returns a child of ctx holding a new, empty "requeue after"
// request. It allocates once.
func NewContext(ctx context.Context) context.Context {
	return signal.WithDuration(ctx)
}

// SetRequeueAfter asks for another reconciliation of the object after d,
// unless a shorter delay was already asked for in this reconciliation. A
// negative d counts as 0. It is a no-op when ctx holds no "requeue after"
// request.
func SetRequeueAfter(ctx context.Context, d time.Duration) {
	signal.DurationFrom(ctx).SetMin(d)
}

// RequeueAfter returns the shortest delay asked for with SetRequeueAfter and
// true, or 0 and false when none was asked for or ctx holds no "requeue
// after" request.
func RequeueAfter(ctx context.Context) (time.Duration, bool) {
	return signal.DurationFrom(ctx).Get()
}
