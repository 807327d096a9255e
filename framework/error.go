package framework

import (
	"errors"
	"fmt"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/statuscontext"
	"github.com/operatorkit/operatorkit/internal/okerr"
	"github.com/operatorkit/operatorkit/router"
)

// ErrInvalidConfig is returned when a Config is incomplete or inconsistent;
// the message names the field. It is the same value as the ErrInvalidConfig
// of every other operatorkit package (operator, router, informer,
// crdclient, crud, child, the wrappers), so [IsInvalidConfig] matches their
// errors too.
var ErrInvalidConfig = okerr.ErrInvalidConfig

// ErrExecutionFailed is matched by every error [ProcessUpdate] and
// [ProcessDelete] return for a failed or panicking resource.
var ErrExecutionFailed = errors.New("execution failed")

// ErrPanic is matched by a [*PanicError]: a resource panicked.
var ErrPanic = errors.New("resource panicked")

// ErrNoResourceSet is returned when no resource set handles an object. It is
// router.ErrNoResourceSet, so errors.Is works across both packages.
var ErrNoResourceSet = router.ErrNoResourceSet

// ErrInvalidCondition is matched by the permanent error of a reconciliation
// in which a resource set a condition that metav1.Condition does not allow,
// or whose object has a status.conditions that is not a list of conditions;
// the message names the object and the field. It is
// conditioncontext.ErrInvalidCondition.
var ErrInvalidCondition = conditioncontext.ErrInvalidCondition

// ErrInvalidStatusField is matched by the permanent error of a
// reconciliation in which a resource set a status field that cannot be
// written (statuscontext.Set: a name that is empty, holds a dot or is
// "conditions" or "observedGeneration", a value that does not encode to
// JSON, a field or value the API server refuses: one the CRD's status
// schema does not declare or allow); the error names the object and the
// field. It is the same value as
// statuscontext.ErrInvalidField.
var ErrInvalidStatusField = statuscontext.ErrInvalidField

// ErrNoStatusSubresource is matched by the permanent error of a status write
// (Config.Conditions) to an object whose CRD has no status subresource.
var ErrNoStatusSubresource = errors.New("no status subresource")

// IsInvalidConfig reports whether err matches [ErrInvalidConfig].
func IsInvalidConfig(err error) bool { return errors.Is(err, ErrInvalidConfig) }

// IsExecutionFailed reports whether err matches [ErrExecutionFailed].
func IsExecutionFailed(err error) bool { return errors.Is(err, ErrExecutionFailed) }

// IsNoResourceSet reports whether err matches [ErrNoResourceSet].
func IsNoResourceSet(err error) bool { return errors.Is(err, ErrNoResourceSet) }

// ExecutionError is the error of a resource that failed or panicked in
// [ProcessUpdate], [ProcessDelete] or [Plan]. It matches [ErrExecutionFailed] and
// unwraps to the resource's error (a [*PanicError] after a panic).
type ExecutionError struct {
	// Resource is the name of the resource.
	Resource string
	// Operation is resource.OperationEnsureCreated or OperationEnsureDeleted,
	// or "plan" for an error of [Plan].
	Operation string
	// Err is the resource's error.
	Err error
}

// Error returns "<operation> <resource>: <err>", for example
// "ensure created configmap: configmap: apply update change: <cause>" (a crud
// resource names itself and its step too).
func (e *ExecutionError) Error() string {
	return fmt.Sprintf("%s %s: %v", e.Operation, e.Resource, e.Err)
}

// Unwrap returns e.Err.
func (e *ExecutionError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrExecutionFailed].
func (e *ExecutionError) Is(target error) bool { return target == ErrExecutionFailed }

// PanicError is a panic recovered from a resource. ProcessUpdate and
// ProcessDelete return it wrapped in an [*ExecutionError]. It matches
// [ErrPanic], and unwraps to the panic value when that is an error.
type PanicError struct {
	// Resource is the name of the resource that panicked.
	Resource string
	// Value is the value passed to panic.
	Value any
	// Stack is the stack of the panicking goroutine, from runtime/debug.Stack.
	Stack []byte
}

// Error returns "panic: <value>".
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error, else nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Is reports whether target is [ErrPanic].
func (e *PanicError) Is(target error) bool { return target == ErrPanic }
