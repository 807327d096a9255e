// Package crud builds a resource.Interface from an [Ops]: its Name and its
// seven CRUD steps, which read the current state, compute the desired state,
// compare them in a [Patch], and apply the patch's create, update and delete
// changes.
//
// # Flow
//
// [Resource.EnsureCreated] runs, in this order:
//
//	GetCurrentState, GetDesiredState, NewUpdatePatch,
//	ApplyCreateChange, ApplyUpdateChange, ApplyDeleteChange
//
// [Resource.EnsureDeleted] runs the same with NewDeletePatch instead of
// NewUpdatePatch. Each Apply step runs only when its part of the patch is set
// (see [Patch]); a nil patch applies nothing. The step names are the Step*
// constants, used alike in errors, traces, metric labels and retry logs.
//
// # Errors
//
// The first failing step ends the operation; no later step runs. Its error is
// returned wrapped with the resource and step name, as in
// "configmap: apply update change: <cause>", and the cause stays reachable
// with errors.Is and errors.As (so retry.Permanent survives the wrap).
//
// # Cancellation
//
// Before every step the resource checks the context signals: when
// resourcecanceledcontext or reconciliationcanceledcontext is set (by an
// earlier step of this resource, or by anyone else in the reconciliation) it
// runs no further step and returns nil. The framework then goes on with the
// next resource or stops the chain, respectively.
//
// # Dry run
//
// [Resource.Plan] runs only the read-only half (current state, desired state,
// and the update or delete patch) and returns the patch without applying it,
// or no patch when a cancel signal stops the resource before it would apply
// (set by the patch step too): Plan returns what a reconciliation would
// apply. It relies on GetCurrentState, GetDesiredState, NewUpdatePatch and
// NewDeletePatch not changing anything; an Ops that writes in one of them is
// the author's bug, and Plan cannot prevent it.
//
// # Tracing
//
// When the context carries a trace.Trace, every step is recorded in it:
// done or error for steps that ran, skipped for absent patch parts, canceled
// for the step that did not run because of a cancel signal. Without a trace
// this costs nothing.
//
// # Wrappers
//
// A *Resource implements [OpsWrapper], which the wrappers in
// resource/wrapper use to add their behaviour (retries, metrics) around each
// step rather than around the whole operation.
package crud
