package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"

	operatorpkg "github.com/operatorkit/operatorkit/operator"
)

// hangingEvents holds every request for Events until the request's context
// ends or release is closed, and tells held of the first one.
type hangingEvents struct {
	next    http.RoundTripper
	held    chan struct{}
	release chan struct{}
}

func (h *hangingEvents) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/events") && r.Method != http.MethodGet {
		select {
		case h.held <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-h.release:
		}
	}
	return h.next.RoundTrip(r)
}

// TestEventWriteDoesNotOutliveRun: an Event whose write the API server does
// not answer (it hangs, as one behind a broken connection does) must not
// keep the event broadcaster's goroutine running after Run returned: the
// recorder's doc says no goroutine runs for it outside Run.
func TestEventWriteDoesNotOutliveRun(t *testing.T) {
	// Not parallel: it looks at every goroutine of the process.
	ns := newNamespace(t)
	hang := &hangingEvents{held: make(chan struct{}, 1), release: make(chan struct{})}
	t.Cleanup(func() { close(hang.release) })
	events, stop := startEventsOperator(t, ns, "op-events-hang", func(rt http.RoundTripper) http.RoundTripper { hang.next = rt; return hang })
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subject", Namespace: ns, UID: "0b7c5a2e-0000-4000-8000-000000000001"}}
	events.Event(cm, corev1.EventTypeWarning, "Checked", "an Event the API server does not answer")
	select {
	case <-hang.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the Event was not written within 30 s")
	}
	if err := stop(); err != nil {
		t.Fatalf("Run() = %v, want nil", err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return eventGoroutines() == "", nil
	})
	if err != nil {
		t.Fatalf("20 s after Run returned, the event broadcaster still runs:\n%s", eventGoroutines())
	}
}

// slowEvents delays every write of an Event by delay, as an API server
// under load answers late, or holds it (until the request's context ends)
// while hold is set.
type slowEvents struct {
	next  http.RoundTripper
	delay time.Duration
	hold  atomic.Bool
}

func (s *slowEvents) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/events") && r.Method != http.MethodGet {
		wait := s.delay
		if s.hold.Load() {
			wait = time.Hour
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-t.C:
		}
	}
	return s.next.RoundTrip(r)
}

// TestEventsQueuedAtShutdownAreWritten: the Events recorded just before
// Run's context ends, queued behind a write in flight, reach an API server
// that answers within the recorder's 2 s allowance; client-go's Shutdown of
// the broadcaster dropped those not yet in flight. An API server that does
// not answer holds Run no longer than the allowance.
func TestEventsQueuedAtShutdownAreWritten(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		hold bool
	}{{name: "answered"}, {name: "not answered", hold: true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			// Long enough for the Events after the first to be queued when
			// Run's context ends (it ends microseconds after they are
			// recorded), short enough that a busy API server's answers
			// stay well within the 2 s allowance (8 writes of 100 ms did
			// not, once, in a cold CI run).
			slow := &slowEvents{delay: 20 * time.Millisecond}
			events, stop := startEventsOperator(t, ns, "op-events-"+dnsName(tt.name), func(rt http.RoundTripper) http.RoundTripper { slow.next = rt; return slow })
			slow.hold.Store(tt.hold)
			const n = 3 // one in flight, two queued behind it
			for i := range n {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("subject-%d", i), Namespace: ns, UID: types.UID(fmt.Sprintf("0b7c5a2e-0000-4000-8000-00000000001%d", i))}}
				events.Event(cm, corev1.EventTypeWarning, "Deleted", "an Event recorded just before shutdown")
			}
			start := time.Now()
			if err := stop(); err != nil {
				t.Fatalf("Run() = %v, want nil", err)
			}
			// 2 s for the Events, and as much again for the Frameworks' and
			// the informers' own shutdown on a busy machine.
			if took := time.Since(start); took > 4*time.Second {
				t.Errorf("Run returned %v after its context ended, want within the 2 s allowance for Events", took)
			}
			if tt.hold {
				return
			}
			list, err := kubeClient(t).CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=Deleted"})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != n {
				t.Errorf("%d of the %d Events recorded before shutdown reached the API server, want all", len(list.Items), n)
			}
		})
	}
}

// startEventsOperator runs an operator named name, with one Framework of
// widgets in ns, whose requests go through wrap, until the test ends or
// stop is called; it returns once the Framework booted, with the
// Operator's event recorder.
func startEventsOperator(t *testing.T, ns, name string, wrap func(http.RoundTripper) http.RoundTripper) (events record.EventRecorder, stop func() error) {
	t.Helper()
	cfg := env.Config()
	cfg.Wrap(wrap)
	op, err := operatorpkg.New(operatorpkg.Config{RESTConfig: cfg, Name: name, Logger: log.NewNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	f := operatorFramework(t, op, ns, "widgets", newOwnedConfigMapOps("a", op.OwnWrites()))
	if err := op.Add(f); err != nil {
		t.Fatal(err)
	}
	events = op.EventRecorder(clientgoscheme.Scheme)
	stop, done := runOperator(op)
	t.Cleanup(func() { _ = stop() })
	awaitBoot(t, f, done, func() {}) // on failure, the cleanup stops Run
	return events, stop
}
