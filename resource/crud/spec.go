package crud

import (
	"context"

	"github.com/operatorkit/operatorkit/resource"
)

// The names of the steps of a [Resource]. They appear in errors, trace
// steps, the "operation" label of metrics and retry logs.
const (
	// StepGetCurrentState names [Ops.GetCurrentState].
	StepGetCurrentState = "get current state"
	// StepGetDesiredState names [Ops.GetDesiredState].
	StepGetDesiredState = "get desired state"
	// StepNewUpdatePatch names [Ops.NewUpdatePatch].
	StepNewUpdatePatch = "new update patch"
	// StepNewDeletePatch names [Ops.NewDeletePatch].
	StepNewDeletePatch = "new delete patch"
	// StepApplyCreateChange names [Ops.ApplyCreateChange].
	StepApplyCreateChange = "apply create change"
	// StepApplyUpdateChange names [Ops.ApplyUpdateChange].
	StepApplyUpdateChange = "apply update change"
	// StepApplyDeleteChange names [Ops.ApplyDeleteChange].
	StepApplyDeleteChange = "apply delete change"
)

// Ops are the building blocks of a [Resource]. The Resource calls them in
// the order described in the package documentation, one at a time for one
// object; for different objects it may call them concurrently, so an Ops must
// be safe for concurrent use. obj is always the object being reconciled (the
// latest version known to the informer). Every method's error ends the
// operation and is returned wrapped with the resource and step name. Methods
// may set the signals of the context/<x>context packages in ctx.
type Ops interface {
	// Name returns the resource's name; see resource.Interface.Name. The
	// Resource reads it once, in New.
	Name() string

	// GetCurrentState returns the current state of what this resource
	// manages for obj, as it is in the API server or external system (for
	// example the ConfigMap that exists, or nil when there is none). It is
	// called first by EnsureCreated, EnsureDeleted and Plan, and must not
	// change anything. The Resource passes both states on to NewUpdatePatch
	// or NewDeletePatch as returned: a nil pointer stays a non-nil interface
	// holding one (a typed nil, which is not == nil), unlike a [Patch] part,
	// which a nil pointer leaves unset. Return a plain nil for "none", or
	// compare the pointer after a type assertion.
	GetCurrentState(ctx context.Context, obj any) (any, error)

	// GetDesiredState returns the state this resource should manage for obj,
	// computed from obj alone (for example the ConfigMap that should exist).
	// It is called after GetCurrentState and must not change anything.
	GetDesiredState(ctx context.Context, obj any) (any, error)

	// NewUpdatePatch compares currentState and desiredState, as returned by
	// GetCurrentState and GetDesiredState, and returns the changes that make
	// the current state the desired one while obj exists. It is called by
	// EnsureCreated and by Plan (not deleting) and must not change anything.
	// A nil patch, or one with no part set, applies nothing.
	NewUpdatePatch(ctx context.Context, obj, currentState, desiredState any) (*Patch, error)

	// NewDeletePatch compares currentState and desiredState and returns the
	// changes that remove what this resource manages for obj, which is being
	// deleted (usually a delete change holding the current state). It is
	// called by EnsureDeleted and by Plan (deleting) and must not change
	// anything. A nil patch, or one with no part set, applies nothing.
	NewDeletePatch(ctx context.Context, obj, currentState, desiredState any) (*Patch, error)

	// ApplyCreateChange creates createChange, the create part of the patch.
	// It is called only when that part is set, before ApplyUpdateChange and
	// ApplyDeleteChange, and must tolerate that the state already exists (an
	// earlier, interrupted reconciliation may have created it). A create
	// outside Kubernetes that is not idempotent (a record at a provider's
	// API, which gets a new ID each time) runs as the task of a
	// conditioncontext.Guard, which a stale cache or a second replica
	// cannot run twice; GetCurrentState then finds, at the external system,
	// what a create whose outcome is unknown may have made
	// (docs/getting-started.md, "Later: a resource outside the cluster").
	ApplyCreateChange(ctx context.Context, obj, createChange any) error

	// ApplyDeleteChange deletes deleteChange, the delete part of the patch.
	// It is called only when that part is set, last, and must tolerate that
	// the state is already gone.
	ApplyDeleteChange(ctx context.Context, obj, deleteChange any) error

	// ApplyUpdateChange updates the state to updateChange, the update part
	// of the patch. It is called only when that part is set, after
	// ApplyCreateChange and before ApplyDeleteChange.
	ApplyUpdateChange(ctx context.Context, obj, updateChange any) error
}

// OpsWrapper is implemented by resources that run a [Resource] underneath:
// *Resource itself and the wrappers in resource/wrapper. A wrapper uses it to
// put its behaviour (a retry, a timer) around each step of the Ops instead of
// around a whole EnsureCreated or EnsureDeleted, while every other layer keeps
// its own behaviour.
type OpsWrapper interface {
	// WrapOps returns a copy of the resource that runs wrap(ops) in place of
	// the Ops it runs now, and true; or nil and false when the resource does
	// not run a Resource underneath (a wrapper around some other
	// resource.Interface). The receiver is left unchanged.
	WrapOps(wrap func(Ops) Ops) (resource.Interface, bool)
}
