package integration

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The API server runs in this process, so goleak's whole-process view sees
// its goroutines come and go with every request (cachers, etcd watches, grpc
// streams). goleak checks the library's own unit tests; here a leak is a
// goroutine that did not exist before and whose stack is not the server's
// nor an idle pooled HTTP connection.
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

// leakCheck records the goroutines now; the returned func fails t when,
// within a generous deadline, goroutines started since are still running
// and are not the server's.
func leakCheck(t *testing.T) func() {
	before := goroutines()
	return func() {
		t.Helper()
		var leaked []string
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			leaked = leaked[:0]
			for id, stack := range goroutines() {
				if _, ok := before[id]; ok || isServerGoroutine(stack) || strings.Contains(stack, "integration.leakCheck") {
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
