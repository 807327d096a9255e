package informer

import (
	"errors"

	"github.com/operatorkit/operatorkit/internal/okerr"
)

// ErrInvalidConfig is returned by New when Config is incomplete or
// inconsistent; the message names the offending field. It is the same value
// as the ErrInvalidConfig of every other operatorkit package.
var ErrInvalidConfig = okerr.ErrInvalidConfig

// ErrAlreadyStarted is returned by Run when the Informer has been run before.
// A client-go informer cannot be restarted: create a new Informer instead.
var ErrAlreadyStarted = errors.New("informer already started")

// ErrNotSynced is returned by WaitForCacheSync when its context ends before
// the cache has synced.
var ErrNotSynced = errors.New("informer cache not synced")

// IsInvalidConfig reports whether err is or wraps ErrInvalidConfig.
func IsInvalidConfig(err error) bool { return errors.Is(err, ErrInvalidConfig) }
