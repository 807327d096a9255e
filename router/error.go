package router

import (
	"errors"

	"github.com/operatorkit/operatorkit/internal/okerr"
)

// ErrInvalidConfig is returned by [New] and [NewResourceSet] when their
// Config is incomplete or inconsistent; the message names the field. It is the
// same value as framework.ErrInvalidConfig.
var ErrInvalidConfig = okerr.ErrInvalidConfig

// ErrNoResourceSet is returned by [Router.ResourceSet] when no resource set
// handles the object. framework.ErrNoResourceSet is the same value.
var ErrNoResourceSet = errors.New("no resource set")

// ErrMultipleResourceSets is returned by [Router.ResourceSet] when more than
// one resource set handles the object.
var ErrMultipleResourceSets = errors.New("multiple resource sets")

// IsNoResourceSet reports whether err matches [ErrNoResourceSet].
func IsNoResourceSet(err error) bool { return errors.Is(err, ErrNoResourceSet) }
