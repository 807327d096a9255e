package okerr_test

import (
	"testing"

	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/internal/okerr"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/wrapper/metrics"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
)

// TestOneErrInvalidConfig: the ErrInvalidConfig of every package is one
// value, as their docs say, so errors.Is matches whichever a caller names.
func TestOneErrInvalidConfig(t *testing.T) {
	for name, err := range map[string]error{
		"crdclient": crdclient.ErrInvalidConfig, "framework": framework.ErrInvalidConfig,
		"informer": informer.ErrInvalidConfig, "operator": operator.ErrInvalidConfig,
		"child": child.ErrInvalidConfig, "crud": crud.ErrInvalidConfig,
		"metrics": metrics.ErrInvalidConfig, "retry": retry.ErrInvalidConfig, "router": router.ErrInvalidConfig,
	} {
		if err != okerr.ErrInvalidConfig {
			t.Errorf("%s.ErrInvalidConfig is a value of its own", name)
		}
	}
}
