package conditioncontext

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/internal/conditions"
	"github.com/operatorkit/operatorkit/internal/ctxkey"
)

// The condition types the Framework maintains, following the kstatus
// conventions of sigs.k8s.io/cli-utils: Ready is a normal-true condition
// (True when all is well); Reconciling and Stalled are abnormal-true
// conditions, present, with status True, only while they hold.
const (
	// Ready is True after a successful reconciliation of the object's
	// latest generation, and False with the failure's reason otherwise.
	Ready = "Ready"
	// Reconciling is True while work is pending: a failed reconciliation
	// will be retried, or a resource reported that a child is not ready.
	Reconciling = "Reconciling"
	// Stalled is True when the Framework gave up: a permanent error, which
	// is not retried with backoff (it runs again when the object changes,
	// or at the informer's periodic resync).
	Stalled = "Stalled"
)

// ErrNoConditions is returned by [Guard] on a context without conditions:
// the reconciliation does not run under a Framework with Config.Conditions,
// or it is the delete chain of an object already gone (no status to lock).
var ErrNoConditions = errors.New("no conditions in context")

// ErrLocked is matched by the error of a [Guard] whose condition another
// reconciliation locked and has not released yet (another replica of the
// operator runs the same task now). The error matches
// apierrors.IsConflict too: the Framework retries with the latest object.
var ErrLocked = errors.New("condition locked")

// ErrOutcomeUnknown is matched by the error of a [Guard] whose task failed
// with its outcome recorded as Unknown: the change may or may not have
// happened (a timeout, a 5xx answer, a connection that broke). The task must
// not run again before the resource has found out from the external system
// whether it did, which takes a new reconciliation: the retry wrapper
// (resource/wrapper/retry) never retries such an error in place, and the
// Framework retries the object with backoff. The error is not marked
// permanent.
var ErrOutcomeUnknown = errors.New("outcome of the guarded change unknown")

// ErrInvalidCondition is matched by the errors about a condition that
// metav1.Condition does not allow: a type that is not a qualified name, a
// reason that is not CamelCase, a status other than True, False and
// Unknown, a message that is too long.
var ErrInvalidCondition = errors.New("invalid condition")

// LockFunc writes condition c of the reconciled object under a
// resourceVersion precondition: the latest version of the object the
// reconciliation knows (the one it read, its own last lock's, or its own
// last write's, reported with resourceversioncontext). It returns an error
// matching apierrors.IsConflict when the object changed since, or when the
// condition is locked by another reconciliation (see [ErrLocked]). The
// Framework provides it through [NewGuardedContext]; c carries Type,
// Status, Reason and Message, and the lock fills in the rest.
type LockFunc func(ctx context.Context, c metav1.Condition) error

// NewContext returns a child of ctx holding a new, empty set of conditions
// without a lock (see the package documentation).
func NewContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, ctxkey.Conditions{}, &conditions.Store{})
}

// NewGuardedContext returns a child of ctx holding a new, empty set of
// conditions, the object's current conditions (read by Get; the slice is
// never modified, and must not be modified by the caller while ctx is in
// use: it is typically the cached object's) and lock, which Guard calls
// before its task. It is how the
// Framework starts a reconciliation; call it yourself only to run resources
// under a status writer of your own.
func NewGuardedContext(ctx context.Context, current []metav1.Condition, lock LockFunc) context.Context {
	var locker conditions.Locker
	if lock != nil { // a nil LockFunc is no lock, not a lock that panics
		locker = lock
	}
	s := &conditions.Store{}
	s.Init(current, locker)
	return context.WithValue(ctx, ctxkey.Conditions{}, s)
}

// LockCondition calls f. It lets a LockFunc serve as the lock of the
// conditions NewGuardedContext holds; the Framework's per-reconciliation
// state serves as one without a func value of its own.
func (f LockFunc) LockCondition(ctx context.Context, c metav1.Condition) error { return f(ctx, c) }

// Set records the condition conditionType of the reconciled object with
// status, reason and message, for the write at the end of the
// reconciliation. A later Set of the same type replaces it. The Framework
// sets the condition's observedGeneration and lastTransitionTime (unchanged
// while the status stays the same). It is a no-op on a context without
// conditions.
func Set(ctx context.Context, conditionType string, status metav1.ConditionStatus, reason, message string) {
	if s := conditions.From(ctx); s != nil {
		s.Set(metav1.Condition{Type: conditionType, Status: status, Reason: reason, Message: message})
	}
}

// Get returns the condition conditionType as it stands in this
// reconciliation: as last set with Set or by a Guard, or else as the object
// has it (as read, or as a Guard locked it). Conditions set in this
// reconciliation have no observedGeneration or lastTransitionTime yet. It
// returns false when there is none, or ctx has no conditions.
func Get(ctx context.Context, conditionType string) (metav1.Condition, bool) {
	s := conditions.From(ctx)
	if s == nil {
		return metav1.Condition{}, false
	}
	return s.Get(conditionType)
}

// List returns the conditions set in this reconciliation, with Set or by a
// Guard, in the order their types were first set; nil when there are none
// or ctx has no conditions. The slice is the caller's.
func List(ctx context.Context) []metav1.Condition {
	s := conditions.From(ctx)
	if s == nil {
		return nil
	}
	return s.List()
}
