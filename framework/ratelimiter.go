package framework

import (
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"k8s.io/client-go/util/workqueue"
)

// Requeue backoff defaults (DefaultRequeueBackOff).
const (
	// DefaultRequeueInitialInterval is the first retry delay of a failed object.
	DefaultRequeueInitialInterval = 50 * time.Millisecond
	// DefaultRequeueMaxInterval caps the retry delay of a failed object.
	DefaultRequeueMaxInterval = 5 * time.Minute
)

// DefaultRequeueBackOff is the per-object backoff of failed reconciliations:
// exponential from DefaultRequeueInitialInterval, doubling with 20% jitter,
// capped at DefaultRequeueMaxInterval, never stopping (a failing object is
// retried until it succeeds or changes). It is reset by a success.
func DefaultRequeueBackOff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = DefaultRequeueInitialInterval
	b.MaxInterval = DefaultRequeueMaxInterval
	b.Multiplier = 2
	b.RandomizationFactor = 0.2
	b.MaxElapsedTime = 0
	b.Reset()
	return b
}

// backOffRateLimiter adapts a backoff factory to client-go's rate limiter:
// one backoff per object, created at its first failure, dropped by Forget.
// A backoff that stops is held at its last interval; an interval under
// MinRequeueInterval is taken as MinRequeueInterval.
type backOffRateLimiter struct {
	factory func() backoff.BackOff
	mu      sync.Mutex
	items   map[string]*itemBackOff
}

type itemBackOff struct {
	b     backoff.BackOff
	last  time.Duration
	tries int
}

func newBackOffRateLimiter(factory func() backoff.BackOff) *backOffRateLimiter {
	return &backOffRateLimiter{factory: factory, items: map[string]*itemBackOff{}}
}

// When returns how long key waits before its next try.
func (r *backOffRateLimiter) When(key string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	it, ok := r.items[key]
	if !ok {
		it = &itemBackOff{b: r.factory(), last: DefaultRequeueInitialInterval}
		r.items[key] = it
	}
	it.tries++
	if d := it.b.NextBackOff(); d != backoff.Stop {
		it.last = max(d, MinRequeueInterval)
	}
	return it.last
}

// Forget drops key's backoff, after a success.
func (r *backOffRateLimiter) Forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.items, key)
}

// NumRequeues returns how often key failed since its last success.
func (r *backOffRateLimiter) NumRequeues(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if it, ok := r.items[key]; ok {
		return it.tries
	}
	return 0
}

// floorLimiter is Config.RateLimiter with its waits under
// MinRequeueInterval taken as MinRequeueInterval: a limiter of no delay
// (workqueue's bucket limiter of an infinite rate, a test's) would have a
// failing object reconciled again at once, for ever.
type floorLimiter struct {
	workqueue.TypedRateLimiter[string]
}

// When returns the wrapped limiter's wait for key, at least
// MinRequeueInterval.
func (l floorLimiter) When(key string) time.Duration {
	return max(l.TypedRateLimiter.When(key), MinRequeueInterval)
}
