package retry

import (
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/operatorkit/operatorkit/internal/okerr"
)

// ErrInvalidConfig is returned by [New] when its Config is incomplete; the
// message names the field. It is the same value as framework.ErrInvalidConfig.
var ErrInvalidConfig = okerr.ErrInvalidConfig

// Permanent marks err as not worth retrying: the retry wrapper returns it at
// once, and the framework's backoff honours the mark too. It wraps err in a
// *backoff.PermanentError, the mark backoff.Retry itself uses, whose message
// is err's; errors.Is and errors.As still reach err. Permanent(nil) is nil.
func Permanent(err error) error { return backoff.Permanent(err) }

// IsPermanent reports whether err, or an error it wraps, was marked with
// [Permanent] (or backoff.Permanent).
func IsPermanent(err error) bool {
	var p *backoff.PermanentError
	return errors.As(err, &p)
}

// After marks err as one that must not be retried before d has passed: the
// answer of an API that asked the caller to wait (an HTTP 429 or 503 with
// Retry-After, a provider's quota window). Its message and its chain are
// err's (errors.Is and errors.As still reach err, and a
// conditioncontext.WithReason inside or around it still gives Ready its
// reason). It is still an error, and is reported as one.
//
// Who honours it:
//   - The retry wrapper ([New]) returns it at once, without retrying in
//     place, whatever Config.Retryable says: its retries are short (100ms
//     to a second), an API that asks for a wait asks for seconds or more,
//     and waiting inside a reconciliation would hold a worker and eat the
//     reconcile timeout.
//   - The Framework counts the reconciliation as failed (its result
//     "error", Ready False with the error and its reason, Reconciling
//     True, the error metric, the error log line, a Warning event, the
//     object's backoff grows) and requeues the object after the longer of
//     d and the interval its backoff gives: never sooner than the API
//     asked, never sooner than its backoff. Neither the informer's
//     periodic resync nor a requeue the Framework asked for before (an
//     earlier failure's) runs it before d has passed; a change of the
//     object or an event that wakes it does. In a delete chain the
//     finalizer stays, and the delete runs again then.
//
// An error marked with [Permanent] too is permanent: it is not retried at
// all, so d does not matter. When err holds several After marks, the
// outermost one's d counts, and of errors joined side by side the longest
// (see [DelayOf]).
//
// After(nil, d) is nil, so that After(call(), d) is nil when the call
// succeeded. A d of 0 or less asks for no wait (a Retry-After of 0, or of
// a date in the past): After returns err as it is, retried like any other
// error.
func After(err error, d time.Duration) error {
	if err == nil || d <= 0 {
		return err
	}
	return &afterError{err: err, d: d}
}

// afterError is the mark of After.
type afterError struct {
	err error
	d   time.Duration
}

func (e *afterError) Error() string { return e.err.Error() }
func (e *afterError) Unwrap() error { return e.err }

// DelayOf returns how long the caller must wait before it retries what
// failed with err, and whether err asks for a wait at all: the d of the
// outermost [After] mark in err's chain or, without one, the delay a
// Kubernetes API server asked for in its answer (apierrors.SuggestsClientDelay:
// a 429 of its API Priority and Fairness, a server timeout, with a
// Retry-After of 1 second or more). client-go's REST client retried such
// an answer itself, up to 10 times, each after the server's Retry-After,
// before it returned the error: another try at once would only add to the
// load the server is shedding. An answer that suggests a delay of 0 asks
// for none. An error that joins several (errors.Join, fmt.Errorf with
// several %w: calls made side by side) asks for the longest wait that any
// of them asks for, so that no API is called sooner than it asked.
// DelayOf(nil) is 0, false.
func DelayOf(err error) (time.Duration, bool) {
	for err != nil {
		switch e := err.(type) {
		case *afterError:
			return e.d, true
		case interface{ Unwrap() []error }:
			var longest time.Duration
			wait := false
			for _, one := range e.Unwrap() {
				if d, ok := DelayOf(one); ok {
					longest, wait = max(longest, d), true
				}
			}
			return longest, wait
		case apierrors.APIStatus:
			if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
				return time.Duration(s) * time.Second, true
			}
		}
		err = errors.Unwrap(err)
	}
	return 0, false
}
