package conditioncontext

import (
	"context"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/operatorkit/operatorkit/internal/conditions"
)

// LockMessage is the message of a condition locked by [Guard] while its task
// runs.
const LockMessage = "locked before a change outside Kubernetes; if this stays, the change's outcome was not recorded"

// Task is the change a [Guard] protects. It returns the condition's outcome:
// its status, reason and message, and an error when the change failed. An
// empty status stands for Unknown when err is not nil (the change may or may
// not have happened) and True otherwise; an empty reason for the lock's
// reason with "Failed" appended when err is not nil, and the lock's reason
// otherwise; an empty message for err's text.
type Task func(ctx context.Context) (status metav1.ConditionStatus, reason, message string, err error)

// Guard runs task, a change outside Kubernetes that must not run twice for
// one state of the object, under the condition conditionType:
//
//  1. it writes the condition with status Unknown, the given reason (such as
//     "Creating") and [LockMessage], under a resourceVersion precondition
//     (see [LockFunc]). When another writer changed the object since the
//     reconciliation read it (or since its own last write of it; before
//     that write, a change of the conditions or the generation counts),
//     the lock fails with a conflict, task does not run, and Guard
//     returns an error matching apierrors.IsConflict, which the Framework
//     retries with the latest object;
//  2. it runs task;
//  3. it records task's outcome with [Set], for the end-of-chain write, and
//     returns task's error (wrapped, so errors.Is and errors.As reach it;
//     when the outcome is Unknown the error matches [ErrOutcomeUnknown]:
//     do not run the task again in this reconciliation, the retry
//     wrapper does not).
//     A task that panics records Unknown, the "Failed" reason and the
//     panic, and the panic goes on (the Framework recovers it and retries
//     the object, whose next Guard locks again).
//
// conditionType and reason must be valid for metav1.Condition; when they
// are not, or ctx has no conditions ([ErrNoConditions]), Guard runs nothing
// and returns an error marked permanent. On a context from [NewContext]
// there is no lock: step 1 is skipped. Guard calls in one reconciliation
// lock one after another; each is one status write. Guards of one
// condition called at once (from goroutines of a resource) run one after
// the other: each waits for its turn (or ctx's end, its error) before it
// locks; so a task must not call Guard for its own condition (that Guard
// would wait until ctx ends).
func Guard(ctx context.Context, conditionType, reason string, task Task) error {
	s := conditions.From(ctx)
	if s == nil {
		return backoff.Permanent(fmt.Errorf("%w: guard of condition %q needs a Framework with Config.Conditions", ErrNoConditions, conditionType))
	}
	lock := metav1.Condition{Type: conditionType, Status: metav1.ConditionUnknown, Reason: reason, Message: LockMessage}
	if err := Validate(lock); err != nil {
		return backoff.Permanent(fmt.Errorf("guard: %w", err))
	}
	done, err := s.Turn(ctx, conditionType)
	if err != nil {
		return fmt.Errorf("guard of condition %s: %w", conditionType, err)
	}
	defer done()
	if locker := s.Lock(); locker != nil {
		if err := locker.LockCondition(ctx, lock); err != nil {
			return fmt.Errorf("lock condition %s: %w", conditionType, err)
		}
		s.Locked(lock)
	}
	status, outReason, message, err := runTask(ctx, conditionType, reason, task)
	if status == "" {
		status = metav1.ConditionTrue
		if err != nil {
			status = metav1.ConditionUnknown
		}
	}
	if outReason == "" {
		outReason = reason
		if err != nil {
			outReason = failedReason(reason)
		}
	}
	if message == "" && err != nil {
		// An error of any length: the condition takes what fits (an
		// outcome the API server would refuse is an outcome lost).
		message = conditions.Fit(err.Error(), conditions.MaxMessage)
	}
	Set(ctx, conditionType, status, outReason, message)
	if err != nil {
		if status == metav1.ConditionUnknown {
			err = &unknownOutcomeError{err: err}
		}
		return fmt.Errorf("guarded change of condition %s: %w", conditionType, err)
	}
	return nil
}

// unknownOutcomeError is a task's error whose outcome Guard recorded as
// Unknown: it matches [ErrOutcomeUnknown], and says what err says.
type unknownOutcomeError struct{ err error }

func (e *unknownOutcomeError) Error() string        { return e.err.Error() }
func (e *unknownOutcomeError) Unwrap() error        { return e.err }
func (e *unknownOutcomeError) Is(target error) bool { return target == ErrOutcomeUnknown }

// runTask runs task. When it panics, the outcome is recorded before the
// panic goes on (to the Framework, which recovers it and retries the
// object): Unknown, for the change may or may not have happened, with the
// panic in the message. Without it the lock would stay in the end-of-chain
// write, and stop every Guard of the condition (the retries' included)
// until it expires.
func runTask(ctx context.Context, conditionType, reason string, task Task) (metav1.ConditionStatus, string, string, error) {
	defer func() {
		if v := recover(); v != nil {
			Set(ctx, conditionType, metav1.ConditionUnknown, failedReason(reason), conditions.Fit(fmt.Sprintf("panic: %v", v), conditions.MaxMessage))
			panic(v)
		}
	}()
	return task(ctx)
}

// failedReason is the reason of a failed task that gave none: the lock's
// reason with "Failed" appended, when that fits.
func failedReason(reason string) string {
	if len(reason)+len("Failed") > conditions.MaxReason {
		return reason
	}
	return reason + "Failed"
}

// Validate returns an error matching [ErrInvalidCondition] when c breaks a
// rule of metav1.Condition, naming the field as
// status.conditions[<type>].<field>. A zero lastTransitionTime is allowed
// (the Framework sets it when it writes).
func Validate(c metav1.Condition) error {
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.NewTime(time.Unix(1, 0))
	}
	errs := metav1validation.ValidateCondition(c, field.NewPath("status", "conditions").Key(c.Type))
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidCondition, errs.ToAggregate())
}
