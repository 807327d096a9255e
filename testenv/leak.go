package testenv

import (
	"context"
	"runtime"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// LeakReporter is the part of testing.TB that LeakCheck uses.
type LeakReporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// serverFrames mark goroutines of the in-process API server and etcd, and
// idle pooled HTTP connections: not leaks of the code under test.
var serverFrames = []string{
	"k8s.io/apiserver/", "k8s.io/apiextensions-apiserver/pkg/", "k8s.io/kubernetes/",
	"k8s.io/kube-aggregator/", "go.etcd.io/", "google.golang.org/grpc",
	"net/http.(*conn).serve", "net/http.(*persistConn)", "golang.org/x/net/http2.(*serverConn)",
	"golang.org/x/net/http2.(*ClientConn).readLoop", "net/http.(*http2ClientConn).readLoop",
}

// goroutines returns the stacks of all goroutines keyed by their header
// line's id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		id := strings.Fields(header)
		if len(id) >= 2 {
			out[id[1]] = g
		}
	}
	return out
}

func isServerGoroutine(stack string) bool {
	for _, f := range serverFrames {
		if strings.Contains(stack, f) {
			return true
		}
	}
	return false
}

// LeakCheck records the goroutines running now and returns a func that
// fails t when goroutines started since are still running after a
// generous deadline (20 s), ignoring the in-process API server's own
// goroutines and idle pooled HTTP connections. Use it around code that must
// stop everything it starts (a Framework's Boot, an operator's Run):
//
//	check := testenv.LeakCheck(t)
//	... start and stop the code under test ...
//	check()
//
// goleak's whole-process view does not work next to an in-process API
// server, whose goroutines come and go with every request. Warm the server
// first (install CRDs, make one request per resource type) so that storage
// it starts lazily is running before LeakCheck is called.
func LeakCheck(t LeakReporter) func() {
	before := goroutines()
	return func() {
		t.Helper()
		var leaked []string
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			leaked = leaked[:0]
			for id, stack := range goroutines() {
				if _, ok := before[id]; ok || isServerGoroutine(stack) || strings.Contains(stack, "testenv.LeakCheck") {
					continue
				}
				leaked = append(leaked, stack)
			}
			return len(leaked) == 0, nil
		})
		if err != nil {
			t.Errorf("%d goroutine(s) leaked:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	}
}
