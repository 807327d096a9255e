package framework

import (
	"errors"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"

	"github.com/operatorkit/operatorkit/informer/informertest"
)

// TestBackOffNearTheFloorIsAcceptedEveryTime: a jittered backoff whose
// intervals are near MinRequeueInterval is accepted by every New, not at
// random (a check of its last interval against the floor refused one start
// in about six of WithMaxRetries of a 1ms exponential backoff); one that
// waits nothing is refused every time.
func TestBackOffNearTheFloorIsAcceptedEveryTime(t *testing.T) {
	near := func() backoff.BackOff {
		return backoff.WithMaxRetries(backoff.NewExponentialBackOff(backoff.WithInitialInterval(time.Millisecond)), 2)
	}
	config := Config{Name: "op", Informer: informertest.New(), ResourceRouter: testRouter(t, nil, &funcResource{name: "r"}), DisableFinalizers: true}
	config.BackOffFactory = near
	for i := range 200 {
		if _, err := New(config); err != nil {
			t.Fatalf("New #%d with a 1ms exponential backoff: %v", i+1, err)
		}
	}
	config.BackOffFactory = func() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, 3) }
	if _, err := New(config); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New with a backoff that waits nothing = %v, want ErrInvalidConfig", err)
	}
}

// TestRequeueIntervalFloor: an interval under MinRequeueInterval, and the
// held interval of a backoff that stopped under it, are MinRequeueInterval.
func TestRequeueIntervalFloor(t *testing.T) {
	r := newBackOffRateLimiter(func() backoff.BackOff {
		return backoff.WithMaxRetries(backoff.NewConstantBackOff(time.Microsecond), 2)
	})
	for i := range 5 {
		if d := r.When("ns/a"); d != MinRequeueInterval {
			t.Errorf("When #%d = %s, want MinRequeueInterval %s", i+1, d, MinRequeueInterval)
		}
	}
	long := newBackOffRateLimiter(func() backoff.BackOff { return backoff.NewConstantBackOff(time.Second) })
	if d := long.When("ns/a"); d != time.Second {
		t.Errorf("When of a 1s backoff = %s, want 1s", d)
	}
}

// TestRateLimiterFloor: a Config.RateLimiter of no delay (a bucket of an
// infinite rate) waits MinRequeueInterval between the retries of a failing
// object, not 0 (a hot loop); a longer wait is its own.
func TestRateLimiterFloor(t *testing.T) {
	config := Config{Name: "op", Informer: informertest.New(), ResourceRouter: testRouter(t, nil, &funcResource{name: "r"}), DisableFinalizers: true}
	config.RateLimiter = &workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Inf, 1)}
	f, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if d := f.limiter.When("ns/a"); d != MinRequeueInterval {
			t.Errorf("When #%d = %s, want MinRequeueInterval %s", i+1, d, MinRequeueInterval)
		}
	}
	config.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute)
	if f, err = New(config); err != nil {
		t.Fatal(err)
	}
	if d := f.limiter.When("ns/a"); d != time.Second {
		t.Errorf("When of a 1s limiter = %s, want 1s", d)
	}
}
