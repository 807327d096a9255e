// Package crudtest provides fakes of crud.Ops for tests: [Ops], which records
// its calls and fails or runs hooks on demand, and [Nop], which does nothing
// and allocates nothing.
package crudtest

import (
	"context"
	"sync"

	"github.com/operatorkit/operatorkit/resource/crud"
)

// Ops is a fake crud.Ops. Every method records its call and then, in this
// order, runs the step's hook (if any) and returns the step's next error (if
// any). Steps are named by the crud.Step* constants. Set the fields before
// first use; the methods are safe for concurrent use.
type Ops struct {
	// Resource is returned by Name.
	Resource string
	// Current and Desired are returned by GetCurrentState and GetDesiredState.
	Current, Desired any
	// Patch is returned by NewUpdatePatch and NewDeletePatch.
	Patch *crud.Patch
	// Errors maps a step to the errors its successive calls return; the last
	// entry repeats, so {boom} always fails and {boom, nil} fails once.
	Errors map[string][]error
	// Hooks maps a step to a function run at its start, for example to set a
	// cancel signal or to panic.
	Hooks map[string]func(ctx context.Context)

	mu    sync.Mutex
	calls []Call
}

// Call is one recorded call of an [Ops] method.
type Call struct {
	// Step is the crud.Step* name of the method.
	Step string
	// Change is the change an Apply method received; nil for other steps.
	Change any
}

var _ crud.Ops = (*Ops)(nil)

// Calls returns the calls so far, in order.
func (o *Ops) Calls() []Call {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Call(nil), o.calls...)
}

// Steps returns the step names of the calls so far, in order.
func (o *Ops) Steps() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	steps := make([]string, len(o.calls))
	for i, c := range o.calls {
		steps[i] = c.Step
	}
	return steps
}

// Count returns how often step was called.
func (o *Ops) Count(step string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.calls {
		if c.Step == step {
			n++
		}
	}
	return n
}

// Name returns o.Resource.
func (o *Ops) Name() string { return o.Resource }

// GetCurrentState returns o.Current.
func (o *Ops) GetCurrentState(ctx context.Context, _ any) (any, error) {
	return o.Current, o.call(ctx, crud.StepGetCurrentState, nil)
}

// GetDesiredState returns o.Desired.
func (o *Ops) GetDesiredState(ctx context.Context, _ any) (any, error) {
	return o.Desired, o.call(ctx, crud.StepGetDesiredState, nil)
}

// NewUpdatePatch returns o.Patch.
func (o *Ops) NewUpdatePatch(ctx context.Context, _, _, _ any) (*crud.Patch, error) {
	return o.Patch, o.call(ctx, crud.StepNewUpdatePatch, nil)
}

// NewDeletePatch returns o.Patch.
func (o *Ops) NewDeletePatch(ctx context.Context, _, _, _ any) (*crud.Patch, error) {
	return o.Patch, o.call(ctx, crud.StepNewDeletePatch, nil)
}

// ApplyCreateChange records createChange.
func (o *Ops) ApplyCreateChange(ctx context.Context, _, createChange any) error {
	return o.call(ctx, crud.StepApplyCreateChange, createChange)
}

// ApplyDeleteChange records deleteChange.
func (o *Ops) ApplyDeleteChange(ctx context.Context, _, deleteChange any) error {
	return o.call(ctx, crud.StepApplyDeleteChange, deleteChange)
}

// ApplyUpdateChange records updateChange.
func (o *Ops) ApplyUpdateChange(ctx context.Context, _, updateChange any) error {
	return o.call(ctx, crud.StepApplyUpdateChange, updateChange)
}

func (o *Ops) call(ctx context.Context, step string, change any) error {
	o.mu.Lock()
	o.calls = append(o.calls, Call{Step: step, Change: change})
	n := 0
	for _, c := range o.calls {
		if c.Step == step {
			n++
		}
	}
	var err error
	if errs := o.Errors[step]; len(errs) > 0 {
		err = errs[min(n, len(errs))-1]
	}
	hook := o.Hooks[step]
	o.mu.Unlock()

	if hook != nil {
		hook(ctx)
	}
	return err
}

// Nop returns a crud.Ops named name whose every method does nothing: the
// states are nil and the patches are nil, so a crud.Resource running it calls
// no Apply method. It allocates nothing, which makes it the baseline of
// benchmarks.
func Nop(name string) crud.Ops { return nop(name) }

type nop string

func (n nop) Name() string                                                     { return string(n) }
func (nop) GetCurrentState(context.Context, any) (any, error)                  { return nil, nil }
func (nop) GetDesiredState(context.Context, any) (any, error)                  { return nil, nil }
func (nop) NewUpdatePatch(context.Context, any, any, any) (*crud.Patch, error) { return nil, nil }
func (nop) NewDeletePatch(context.Context, any, any, any) (*crud.Patch, error) { return nil, nil }
func (nop) ApplyCreateChange(context.Context, any, any) error                  { return nil }
func (nop) ApplyDeleteChange(context.Context, any, any) error                  { return nil }
func (nop) ApplyUpdateChange(context.Context, any, any) error                  { return nil }
