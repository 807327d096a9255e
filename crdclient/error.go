package crdclient

import (
	"errors"

	"github.com/operatorkit/operatorkit/internal/okerr"
)

// ErrInvalidConfig is returned by New when Config is incomplete, and by
// MigrateStorage when Config.Dynamic was not set; the message names the
// missing field. It is the same value as the ErrInvalidConfig of every
// other operatorkit package.
var ErrInvalidConfig = okerr.ErrInvalidConfig

// ErrInvalidArgument is returned when EnsureCreated, EnsureDeleted or
// MigrateStorage is called with a nil CRD, one without a name, or a backoff.BackOff that
// holds a nil pointer. Nothing is sent to the API server then.
var ErrInvalidArgument = errors.New("invalid argument")

// ErrInvalidCRD is returned by EnsureCreated when the API server rejects the
// CRD as invalid (HTTP 422, reason Invalid). The error also wraps the API
// server's *errors.StatusError, whose message lists every field error, so
// k8s.io/apimachinery/pkg/api/errors.IsInvalid is true for it as well. It is
// never retried.
var ErrInvalidCRD = errors.New("CRD rejected as invalid")

// ErrCRDNotAccepted is returned by EnsureCreated when the API server accepted
// the object but not its names: the NamesAccepted condition is False, for
// instance because another CRD of the same group already uses the plural,
// kind or a short name. The message carries the condition's reason (such as
// KindConflict) and message, and names the CRD that holds each requested
// name (when the CRDs can be listed). It is never retried.
var ErrCRDNotAccepted = errors.New("CRD names not accepted")

// ErrStorageVersionChanged is returned by MigrateStorage when the CRD's
// storage version changed, or its status.storedVersions gained a version
// other than the storage version, while MigrateStorage rewrote the
// objects: objects may have been written in another version since, so
// status.storedVersions is left as it was. Call MigrateStorage again once
// the CRD no longer changes. It is never retried.
var ErrStorageVersionChanged = errors.New("CRD storage version changed during the migration")

// ErrTimeout is returned when the backoff gave up before the CRD reached the
// wanted state (established, or gone), or before a step of MigrateStorage
// succeeded. The message says what was last observed. When the context
// ends first, the error wraps context.Cause instead.
var ErrTimeout = errors.New("timed out")

// IsInvalidConfig reports whether err is or wraps ErrInvalidConfig.
func IsInvalidConfig(err error) bool { return errors.Is(err, ErrInvalidConfig) }
