package crud

import "github.com/operatorkit/operatorkit/internal/okerr"

// ErrInvalidConfig is returned by [New] when its Config is incomplete; the
// message names the field. It is the same value as framework.ErrInvalidConfig
// and the ErrInvalidConfig of every other operatorkit package.
var ErrInvalidConfig = okerr.ErrInvalidConfig
