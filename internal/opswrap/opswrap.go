// Package opswrap builds a crud.Ops that runs every step of another Ops
// through one function, so that a wrapper (retry, metrics) writes its
// behaviour once instead of once per Ops method.
package opswrap

import (
	"context"

	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
)

// Around runs call, the step of a crud.Ops named step (a crud.Step*
// constant), and returns its error. It may call call several times, time it,
// or not call it at all.
type Around func(ctx context.Context, step string, call func(ctx context.Context) error) error

// New returns an Ops that behaves as ops with every method except Name run
// through around.
func New(ops crud.Ops, around Around) crud.Ops {
	return &wrapped{ops: ops, around: around}
}

type wrapped struct {
	ops    crud.Ops
	around Around
}

func (w *wrapped) Name() string { return w.ops.Name() }

func (w *wrapped) GetCurrentState(ctx context.Context, obj any) (state any, err error) {
	err = w.around(ctx, crud.StepGetCurrentState, func(ctx context.Context) (err error) {
		state, err = w.ops.GetCurrentState(ctx, obj)
		return err
	})
	return state, err
}

func (w *wrapped) GetDesiredState(ctx context.Context, obj any) (state any, err error) {
	err = w.around(ctx, crud.StepGetDesiredState, func(ctx context.Context) (err error) {
		state, err = w.ops.GetDesiredState(ctx, obj)
		return err
	})
	return state, err
}

func (w *wrapped) NewUpdatePatch(ctx context.Context, obj, currentState, desiredState any) (patch *crud.Patch, err error) {
	err = w.around(ctx, crud.StepNewUpdatePatch, func(ctx context.Context) (err error) {
		patch, err = w.ops.NewUpdatePatch(ctx, obj, currentState, desiredState)
		return err
	})
	return patch, err
}

func (w *wrapped) NewDeletePatch(ctx context.Context, obj, currentState, desiredState any) (patch *crud.Patch, err error) {
	err = w.around(ctx, crud.StepNewDeletePatch, func(ctx context.Context) (err error) {
		patch, err = w.ops.NewDeletePatch(ctx, obj, currentState, desiredState)
		return err
	})
	return patch, err
}

func (w *wrapped) ApplyCreateChange(ctx context.Context, obj, createChange any) error {
	return w.around(ctx, crud.StepApplyCreateChange, func(ctx context.Context) error {
		return w.ops.ApplyCreateChange(ctx, obj, createChange)
	})
}

func (w *wrapped) ApplyDeleteChange(ctx context.Context, obj, deleteChange any) error {
	return w.around(ctx, crud.StepApplyDeleteChange, func(ctx context.Context) error {
		return w.ops.ApplyDeleteChange(ctx, obj, deleteChange)
	})
}

func (w *wrapped) ApplyUpdateChange(ctx context.Context, obj, updateChange any) error {
	return w.around(ctx, crud.StepApplyUpdateChange, func(ctx context.Context) error {
		return w.ops.ApplyUpdateChange(ctx, obj, updateChange)
	})
}

// Resource puts around around each step of r when r runs a crud.Resource
// underneath (it implements crud.OpsWrapper and says so), returning the
// wrapped copy and true; otherwise it returns r itself and false, and the
// caller wraps whole operations instead.
func Resource(r resource.Interface, around Around) (resource.Interface, bool) {
	inner, ok := WrapOps(r, func(ops crud.Ops) crud.Ops { return New(ops, around) })
	if !ok {
		return r, false
	}
	return inner, true
}

// WrapOps calls r.WrapOps(wrap) when r implements crud.OpsWrapper, and
// returns nil and false when it does not.
func WrapOps(r resource.Interface, wrap func(crud.Ops) crud.Ops) (resource.Interface, bool) {
	w, ok := r.(crud.OpsWrapper)
	if !ok {
		return nil, false
	}
	return w.WrapOps(wrap)
}
