package testenv

import (
	"context"
	"time"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/util/wait"
)

// LeakReporter is the part of testing.TB that LeakCheck uses.
type LeakReporter interface {
	// Helper marks the check as a test helper, as testing.TB's does.
	Helper()
	// Errorf is called once, by the func LeakCheck returns, when
	// goroutines started since the check outlive it; it should fail the
	// test without ending it, as testing.TB's does.
	Errorf(format string, args ...any)
}

// idleConnections are the functions of idle pooled HTTP connections, which
// a client's transport keeps for a while after its last request: not leaks
// of the code under test.
var idleConnections = []goleak.Option{
	goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
	goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
}

// LeakCheck records the goroutines running now and returns a func that
// fails t when goroutines started since are still running after a
// generous deadline (20 s), ignoring idle pooled HTTP connections. Use it
// around code that must stop everything it starts (a Framework's Boot, an
// operator's Run):
//
//	check := testenv.LeakCheck(t)
//	... start and stop the code under test ...
//	check()
//
// It is goleak with goleak.IgnoreCurrent: goroutines started before the call
// (a package's shared clients and informers, started in TestMain or by
// other tests) do not count. The API server runs in its own process, so
// none of its goroutines are here.
func LeakCheck(t LeakReporter) func() {
	opts := append([]goleak.Option{goleak.IgnoreCurrent()}, idleConnections...)
	return func() {
		t.Helper()
		var leaked error
		_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			leaked = goleak.Find(opts...)
			return leaked == nil, nil
		})
		if leaked != nil {
			t.Errorf("goroutines leaked: %v", leaked)
		}
	}
}
