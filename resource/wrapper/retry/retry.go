package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/resourcecanceledcontext"
	"github.com/operatorkit/operatorkit/internal/nilptr"
	"github.com/operatorkit/operatorkit/internal/opswrap"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
)

// DefaultBackOffFactory returns a factory of short, bounded exponential
// backoffs for retrying within one reconciliation: at most 3 retries (4
// attempts), waiting about 100ms, 200ms and 400ms (±50% jitter), and never
// retrying once 5s have passed since the first attempt. Longer waits belong
// to the framework's per-object backoff.
func DefaultBackOffFactory() func() backoff.BackOff {
	return func() backoff.BackOff {
		return backoff.WithMaxRetries(backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(100*time.Millisecond),
			backoff.WithMultiplier(2),
			backoff.WithMaxInterval(time.Second),
			backoff.WithMaxElapsedTime(5*time.Second),
		), 3)
	}
}

// Config is the configuration of a [Resource].
type Config struct {
	// Resource is the resource to retry. Required.
	Resource resource.Interface
	// BackOffFactory returns a new backoff for each retried call, never
	// nil and never one it returned before, that stops or waits at least
	// a millisecond between retries (New calls it twice to check).
	// Optional; defaults to DefaultBackOffFactory().
	BackOffFactory func() backoff.BackOff
	// Logger receives a warning for every retry. Optional; defaults to a nop
	// logger. It must not hold a nil pointer.
	Logger log.Logger
	// Retryable decides whether an error is worth retrying with the same
	// input. Optional; defaults to DefaultRetryable. An error it rejects is
	// returned at once, unmarked: the framework still requeues the object
	// with its backoff and a fresh read of the world (what a conflict
	// needs). Errors marked with Permanent, errors that ask for a wait
	// (DelayOf: After, an API server's Retry-After), and errors of a Guard
	// whose outcome is unknown (conditioncontext.ErrOutcomeUnknown), are
	// never retried, whatever Retryable says.
	Retryable func(err error) bool
}

// DefaultRetryable reports whether err may go away when the same call is
// made again: it is false for Kubernetes API errors that a retry of the same
// request cannot fix (conflict, which needs a fresh read; forbidden,
// unauthorized, invalid, bad request, already exists, not found, method not
// supported, request entity too large, gone) and true for everything else
// (timeouts, throttling, server errors, network errors).
func DefaultRetryable(err error) bool {
	switch {
	case apierrors.IsConflict(err), apierrors.IsForbidden(err), apierrors.IsUnauthorized(err),
		apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsAlreadyExists(err),
		apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err),
		apierrors.IsRequestEntityTooLargeError(err), apierrors.IsGone(err), apierrors.IsResourceExpired(err):
		return false
	}
	return true
}

// Resource is a resource.Interface that retries the wrapped resource; see the
// package documentation. It is safe for concurrent use when the wrapped
// resource is and BackOffFactory returns a new backoff on every call.
type Resource struct {
	wrapped    resource.Interface // as given in Config
	inner      resource.Interface // what runs: wrapped, or its copy with retrying steps
	perStep    bool
	newBackOff func() backoff.BackOff
	retryable  func(error) bool
	logger     log.Logger
}

var (
	_ resource.Interface = (*Resource)(nil)
	_ crud.OpsWrapper    = (*Resource)(nil)
)

// New returns a Resource retrying config.Resource. It returns an error
// matching [ErrInvalidConfig] when config.Resource is nil, when
// config.Logger holds a nil pointer, or when config.BackOffFactory, which
// it calls twice to check, returns nil or the same backoff twice, or a
// backoff that retries without waiting and without stopping.
func New(config Config) (*Resource, error) {
	if resource.IsNil(config.Resource) {
		return nil, fmt.Errorf("%w: %T.Resource must not be empty", ErrInvalidConfig, config)
	}
	if config.Logger != nil && nilptr.Is(config.Logger) { // the first retry's warning would panic
		return nil, fmt.Errorf("%w: %T.Logger is a nil %T", ErrInvalidConfig, config, config.Logger)
	}
	if config.BackOffFactory == nil {
		config.BackOffFactory = DefaultBackOffFactory()
	} else if b := config.BackOffFactory(); nilptr.Is(b) {
		// Every retried call would panic.
		return nil, fmt.Errorf("%w: %T.BackOffFactory returned a nil backoff.BackOff", ErrInvalidConfig, config)
	} else if nilptr.Same(b, config.BackOffFactory()) {
		// Concurrent reconciliations would reset and advance one backoff
		// (a data race), each cutting the others' retries short.
		return nil, fmt.Errorf("%w: %T.BackOffFactory returned the same %T twice: it must make a new backoff on each call", ErrInvalidConfig, config, b)
	} else if spins(b) {
		// A failing call would be retried in a hot loop until the
		// reconciliation's context ends.
		return nil, fmt.Errorf("%w: %T.BackOffFactory's %T retries without waiting (under %s) and without stopping: bound it (backoff.WithMaxRetries) or let it wait", ErrInvalidConfig, config, b, minRetryInterval)
	}
	if config.Logger == nil {
		config.Logger = log.NewNopLogger()
	}
	if config.Retryable == nil {
		config.Retryable = DefaultRetryable
	}
	r := &Resource{
		wrapped:    config.Resource,
		newBackOff: config.BackOffFactory,
		retryable:  config.Retryable,
		logger:     log.With(config.Logger, "resource", config.Resource.Name()),
	}
	r.inner, r.perStep = opswrap.Resource(config.Resource, r.retry)
	return r, nil
}

// Name returns the wrapped resource's name.
func (r *Resource) Name() string { return r.wrapped.Name() }

// EnsureCreated runs the wrapped resource's EnsureCreated, retrying each
// CRUD step or the whole call as described in the package documentation.
func (r *Resource) EnsureCreated(ctx context.Context, obj any) error {
	if r.perStep {
		return r.inner.EnsureCreated(ctx, obj)
	}
	return r.retry(ctx, resource.OperationEnsureCreated, func(ctx context.Context) error {
		return r.inner.EnsureCreated(ctx, obj)
	})
}

// EnsureDeleted runs the wrapped resource's EnsureDeleted, retrying each
// CRUD step or the whole call as described in the package documentation.
func (r *Resource) EnsureDeleted(ctx context.Context, obj any) error {
	if r.perStep {
		return r.inner.EnsureDeleted(ctx, obj)
	}
	return r.retry(ctx, resource.OperationEnsureDeleted, func(ctx context.Context) error {
		return r.inner.EnsureDeleted(ctx, obj)
	})
}

// Unwrap returns the wrapped resource, as given in Config.
func (r *Resource) Unwrap() resource.Interface { return r.wrapped }

// WrapOps implements crud.OpsWrapper: when r retries the steps of a
// crud.Resource, it returns a copy of r whose underlying Ops is wrap of the
// retrying Ops, and true; otherwise nil and false.
func (r *Resource) WrapOps(wrap func(crud.Ops) crud.Ops) (resource.Interface, bool) {
	if !r.perStep {
		return nil, false
	}
	inner, ok := opswrap.WrapOps(r.inner, wrap)
	if !ok {
		return nil, false
	}
	c := *r
	c.inner = inner
	return &c, true
}

// retry calls op until it succeeds, fails permanently or asks for a wait
// (DelayOf), the backoff stops,
// ctx is done, or the resource or the reconciliation was canceled
// (resourcecanceledcontext, reconciliationcanceledcontext: the resource
// said it has nothing more to do this time).
func (r *Resource) retry(ctx context.Context, operation string, op func(ctx context.Context) error) error {
	b := r.newBackOff()
	b.Reset()
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil || IsPermanent(err) || errors.Is(err, conditioncontext.ErrOutcomeUnknown) || !r.retryable(err) {
			return err
		}
		if _, wait := DelayOf(err); wait {
			return err // the Framework waits, not a worker
		}
		if ctx.Err() != nil {
			return withCause(ctx, err)
		}
		if resourcecanceledcontext.IsCanceled(ctx) || reconciliationcanceledcontext.IsCanceled(ctx) {
			return err
		}
		wait := b.NextBackOff()
		if wait == backoff.Stop {
			return err
		}
		level.Warn(r.logger).Log("msg", "retrying", "operation", operation, "attempt", attempt, "backoff", wait, "err", err)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return withCause(ctx, err)
		case <-timer.C:
		}
	}
}

// withCause returns err joined with the cause of ctx's end, so that both
// match with errors.Is, or err alone when it already matches the cause (a
// resource that returned ctx.Err(): the message would say it twice).
func withCause(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if errors.Is(err, cause) {
		return err
	}
	return errors.Join(err, cause)
}

// minRetryInterval is the shortest wait between retries of a backoff that
// does not stop.
const minRetryInterval = time.Millisecond

// spins reports whether b neither stops nor waits minRetryInterval within
// its first 1000 intervals.
func spins(b backoff.BackOff) bool {
	for range 1000 {
		if d := b.NextBackOff(); d == backoff.Stop || d >= minRetryInterval {
			return false
		}
	}
	return true
}
