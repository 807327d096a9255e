package integration

import (
	"testing"

	"github.com/operatorkit/operatorkit/testenv"
)

// leakCheck is testenv.LeakCheck for this package's tests.
func leakCheck(t *testing.T) func() { return testenv.LeakCheck(t) }
