// Package okerr holds the error values that several operatorkit packages
// share, so that errors.Is matches across packages: the ErrInvalidConfig of
// every operatorkit package (framework, operator, router, informer,
// crdclient, crud, child and the wrappers) is this one value.
package okerr

import "errors"

// ErrInvalidConfig is returned by every New when its Config is incomplete or
// inconsistent; the message names the field.
var ErrInvalidConfig = errors.New("invalid config")
