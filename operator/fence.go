package operator

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
)

// fence refuses the writes of the Operator's clients once this replica
// lost its Lease (leader election, or its member Lease with Sharding).
//
// Losing the Lease ends the context of every reconciliation in flight
// (framework.Framework.Abort), but a resource that ignores its context (a
// client call made with context.Background(), a loop that does not check
// ctx) would go on writing while another replica already reconciles the
// same objects, until Run returns and the process exits: up to
// ShutdownTimeout later. The fence closes that window for every client
// built from the Operator's rest.Config (Kubernetes, Dynamic, Metadata,
// RESTConfig, the Frameworks' clients, the event recorder): from the
// moment the Lease is lost, their POST, PUT, PATCH and DELETE requests
// fail before they are sent, with an error matching ErrLeaseLost. Reads
// (GET, and so lists and watches) go on, so that caches and probes keep
// working while the Frameworks stop. The Leases themselves are written
// with clients of their own, which the fence does not cover. A fence does
// not open again: a replica that lost its Lease is done (Run returns
// ErrLeaseLost, and the process should exit).
type fence struct {
	// lost is the error writes fail with, nil while the fence is open.
	lost    atomic.Pointer[error]
	refused prometheus.Counter
	logger  log.Logger
	once    sync.Once // logs the first refused write
}

func newFence(operator string, logger log.Logger) *fence {
	return &fence{
		logger: logger,
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "operatorkit_operator_refused_writes_total",
			Help:        "Writes (POST, PUT, PATCH, DELETE) of the operator's clients refused, unsent, because this replica lost its Lease.",
			ConstLabels: prometheus.Labels{"operator": operator},
		}),
	}
}

// close makes every later write fail with err, which must match
// ErrLeaseLost. Only the first call counts.
func (f *fence) close(err error) {
	f.lost.CompareAndSwap(nil, &err)
}

// err returns the error writes fail with, nil while the fence is open.
func (f *fence) err() error {
	if p := f.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// wrap is a rest.Config.WrapTransport: rt behind the fence.
func (f *fence) wrap(rt http.RoundTripper) http.RoundTripper {
	return &fencedTransport{fence: f, next: rt}
}

// fencedTransport refuses writes once its fence is closed.
type fencedTransport struct {
	fence *fence
	next  http.RoundTripper
}

// RoundTrip sends req unless it is a write and the fence is closed; then
// it closes req's body, as a RoundTripper must, and returns the fence's
// error naming the request.
func (t *fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWrite(req.Method) {
		if err := t.fence.err(); err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			t.fence.refused.Inc()
			t.fence.once.Do(func() {
				level.Warn(t.fence.logger).Log("msg", "refusing the writes of this replica's clients: its Lease is lost", "method", req.Method, "path", req.URL.Path, "err", err)
			})
			return nil, fmt.Errorf("%w (%s %s not sent)", err, req.Method, req.URL.Path)
		}
	}
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper returns the transport behind the fence, for
// client-go's transport debugging helpers.
func (t *fencedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// errFenced is the fence's error for the Lease named lease.
func errFenced(operator, lease string) error {
	return fmt.Errorf("operator %s: %w: %s; this replica's writes are refused", operator, ErrLeaseLost, lease)
}
