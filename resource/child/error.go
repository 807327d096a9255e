package child

import (
	"errors"

	"github.com/operatorkit/operatorkit/internal/okerr"
)

// ErrInvalidConfig is returned by [New] when its Config is incomplete or
// inconsistent; the message names the field. It is the same value as
// framework.ErrInvalidConfig.
var ErrInvalidConfig = okerr.ErrInvalidConfig

// ErrInvalidChild is matched by the errors about a desired child that can
// never be written as it is: an empty name, a namespace other than a
// namespaced owner's, two children of one name, a kind the client does not write, a
// child another controller owns (not a previous owner of the owner's kind
// and name, deleted since: that error is retried, and a child of it being
// deleted is waited for; nor one being deleted, whoever its controller:
// it is waited for), a cluster-scoped child
// of a namespaced owner, a child whose labels as written (applied, or
// relabelled: Config.Matches) the Cache's selector does not select, or an
// object the API server rejects as invalid.
// Such errors are marked retry.Permanent (not retried with backoff: run
// again when the owner changes, or at the informer's resync) and name the
// owner and the child.
var ErrInvalidChild = errors.New("invalid child")

// ErrWrongType is matched by the error returned when the reconciled object
// is not of the resource's Owner type (nor an *unstructured.Unstructured
// convertible to it), and by the error of [Checksum] for an object it does
// not digest. It is marked retry.Permanent.
var ErrWrongType = errors.New("wrong object type")

// IsInvalidChild reports whether err matches [ErrInvalidChild].
func IsInvalidChild(err error) bool { return errors.Is(err, ErrInvalidChild) }
