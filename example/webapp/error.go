package webapp

import "github.com/operatorkit/operatorkit/router"

// ErrInvalidConfig is returned by New and NewResourceSets when their Config
// is incomplete; the message names the field. It is the library's
// ErrInvalidConfig (router.ErrInvalidConfig, framework.ErrInvalidConfig),
// so errors.Is matches either.
var ErrInvalidConfig = router.ErrInvalidConfig
