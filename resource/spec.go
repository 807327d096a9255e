package resource

import (
	"context"

	"github.com/operatorkit/operatorkit/internal/nilptr"
)

// The operations of [Interface], as used in errors, logs, traces and the
// "operation" label of metrics.
const (
	// OperationEnsureCreated names [Interface.EnsureCreated].
	OperationEnsureCreated = "ensure created"
	// OperationEnsureDeleted names [Interface.EnsureDeleted].
	OperationEnsureDeleted = "ensure deleted"
)

// Interface is one resource of an operator: it manages one piece of state
// (a ConfigMap, a cloud load balancer, a status field) for the objects the
// operator watches. See the package documentation for the guarantees the
// framework makes to every resource.
type Interface interface {
	// Name returns the resource's name. It identifies the resource in errors,
	// logs, traces and metric labels, so it must be non-empty, constant, and
	// unique within a resource set.
	Name() string

	// EnsureCreated makes the state this resource manages match obj, which is
	// the latest known version of an object that exists and is not being
	// deleted. It is called by framework.ProcessUpdate on every add, update
	// and resync of the object, in chain order. It must be idempotent: it runs
	// again on the next event or resync, and after any error in the chain.
	// Returning an error stops the chain for this reconciliation and makes
	// the framework retry the object with backoff (an error marked with
	// retry.Permanent is not retried until the object changes or the
	// informer's periodic resync runs it again); returning
	// nil lets the next resource run.
	EnsureCreated(ctx context.Context, obj any) error

	// EnsureDeleted removes the state this resource manages for obj, which is
	// the last known version of an object being deleted (it has a deletion
	// timestamp, or is already gone). It is called by framework.ProcessDelete
	// in chain order. It must be idempotent and succeed when there is nothing
	// left to delete: it runs again until every resource of the chain returned
	// nil, and only then does the framework remove its finalizer. Returning an
	// error stops the chain and makes the framework retry with backoff (an
	// error marked with retry.Permanent is not retried until the object
	// changes or the informer's periodic resync runs it again).
	EnsureDeleted(ctx context.Context, obj any) error
}

// Claimer is implemented by a resource, or by the crud.Ops of a
// crud.Resource, that deletes the objects it finds by a claim (a kind and a
// label, as resource/child does) when its desired state no longer names
// them. Two resources of one resource set with the same claim would each
// delete the other's objects in every reconciliation:
// router.NewResourceSet rejects them. Claim returns the claim, worded for
// that error ("apps/Deployment children labelled
// app.kubernetes.io/managed-by=my-operator"); "" claims nothing. It must be
// constant.
type Claimer interface {
	// Claim returns the resource's claim, as above. router.NewResourceSet
	// calls it once per resource when it builds a set; it must not fail,
	// block or change its answer.
	Claim() string
}

// IsNil reports whether r is nil, or a nil pointer (a typed nil in the
// interface, such as a *crud.Resource that was never made), whose methods
// would dereference nil. Constructors that take a resource check it to
// return an error that names the field instead of panicking later.
func IsNil(r Interface) bool { return nilptr.Is(r) }
