package framework

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/operatorkit/operatorkit/resource"
)

// DefaultBackOffFactory returns a factory of bounded exponential backoffs for
// retrying the reconciliation of one object: intervals start at 500ms, grow
// by 1.5 with ±50% jitter up to 30s, and the backoff stops after 10 retries or
// 5 minutes, whichever comes first. Each call of the factory returns a new,
// independent backoff (backoffs are not safe for concurrent use).
//
// It is kept from the seed API and is not the default of anything:
// Config.BackOffFactory defaults to [DefaultRequeueBackOff]. Given as
// Config.BackOffFactory, its stop does not drop the object: the Framework
// holds a stopped backoff at its last interval, so a failing object is then
// retried for good at the tenth interval it drew: about 19s (9.6s to 28.8s
// by its jitter; the 5 minutes are not reached first).
func DefaultBackOffFactory() func() backoff.BackOff {
	return func() backoff.BackOff {
		return backoff.WithMaxRetries(backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(500*time.Millisecond),
			backoff.WithMaxInterval(30*time.Second),
			backoff.WithMaxElapsedTime(5*time.Minute),
		), 10)
	}
}

// DefaultResourceSetResourceFunc returns a function that ignores its context
// and object and always returns rs, for operators with one fixed chain of
// resources. The returned function never fails.
func DefaultResourceSetResourceFunc(rs []resource.Interface) func(ctx context.Context, obj any) ([]resource.Interface, error) {
	return func(context.Context, any) ([]resource.Interface, error) { return rs, nil }
}
