package webapp

import (
	"context"
	"errors"

	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
)

// reportingResource wraps a child resource so that its failures reach the
// user in the object's status, not only in logs and events: an error from
// EnsureCreated sets Ready False and Degraded True (reason InvalidSpec for
// ErrInvalidSpec, else ReconcileFailed), written only when the conditions
// change. The error itself is returned unchanged, so retries, backoff,
// metrics and the framework's Warning event see it as before. Errors of
// EnsureDeleted are left to the framework (the object is going away), and
// errors caused by the end of ctx (shutdown) are not reported.
type reportingResource struct {
	wrapped resource.Interface
	status  *statusWriter
}

var (
	_ resource.Interface = (*reportingResource)(nil)
	_ crud.OpsWrapper    = (*reportingResource)(nil)
)

func (r *reportingResource) Name() string { return r.wrapped.Name() }

func (r *reportingResource) EnsureCreated(ctx context.Context, obj any) error {
	err := r.wrapped.EnsureCreated(ctx, obj)
	if err == nil || ctx.Err() != nil {
		return err
	}
	reason := ReasonReconcileFailed
	if errors.Is(err, ErrInvalidSpec) {
		reason = ReasonInvalidSpec
	}
	r.status.fail(ctx, obj, reason, err)
	return err
}

func (r *reportingResource) EnsureDeleted(ctx context.Context, obj any) error {
	return r.wrapped.EnsureDeleted(ctx, obj)
}

// Unwrap returns the wrapped resource, so that framework.Plan and other
// tools that look through wrappers find the crud.Resource underneath.
func (r *reportingResource) Unwrap() resource.Interface { return r.wrapped }

// WrapOps implements crud.OpsWrapper by delegating to the wrapped resource.
func (r *reportingResource) WrapOps(wrap func(crud.Ops) crud.Ops) (resource.Interface, bool) {
	w, ok := r.wrapped.(crud.OpsWrapper)
	if !ok {
		return nil, false
	}
	inner, ok := w.WrapOps(wrap)
	if !ok {
		return nil, false
	}
	return &reportingResource{wrapped: inner, status: r.status}, true
}
