package operator

import (
	"os"
	"testing"

	"github.com/go-kit/log"
)

// TestMain installs RedirectKlog's sink before any test starts a client:
// the first RedirectKlog of a process writes klog's unguarded logger, which
// the watch goroutines an earlier test left behind would read at the same
// time (RedirectKlog's doc: make the first call at start). Later calls only
// swap the sink's destination.
func TestMain(m *testing.M) {
	RedirectKlog(log.NewNopLogger())()
	os.Exit(m.Run())
}
