package conditioncontext

import "errors"

// reasonError is an error that names the condition reason of the failure it
// causes.
type reasonError struct {
	err    error
	reason string
}

func (e *reasonError) Error() string { return e.err.Error() }
func (e *reasonError) Unwrap() error { return e.err }

// WithReason returns err annotated with reason, a CamelCase condition reason
// such as "InvalidSpec". When a reconciliation fails with an error that
// wraps it, the Framework (Config.Conditions) writes reason as the reason of
// Ready and of Reconciling or Stalled, instead of the default
// "<Resource><Step>Failed". errors.Is and errors.As reach err, and wrapping
// the result (retry.Permanent, fmt.Errorf with %w) keeps the reason. It
// returns nil when err is nil; an invalid reason is ignored by the
// Framework (see Validate).
func WithReason(err error, reason string) error {
	if err == nil {
		return nil
	}
	return &reasonError{err: err, reason: reason}
}

// ReasonOf returns the reason of the outermost WithReason in err's chain,
// and false when there is none.
func ReasonOf(err error) (string, bool) {
	var r *reasonError
	if errors.As(err, &r) {
		return r.reason, true
	}
	return "", false
}
