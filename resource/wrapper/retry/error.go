package retry

import (
	"errors"

	"github.com/cenkalti/backoff/v4"

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
