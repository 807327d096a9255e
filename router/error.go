package router

import (
	"errors"
	"fmt"

	"github.com/operatorkit/operatorkit/internal/okerr"
)

// ErrInvalidConfig is returned by [New] and [NewResourceSet] when their
// Config is incomplete or inconsistent; the message names the field. It is the
// same value as framework.ErrInvalidConfig.
var ErrInvalidConfig = okerr.ErrInvalidConfig

// ErrNoResourceSet is returned by [Router.ResourceSet] when no resource set
// handles the object. framework.ErrNoResourceSet is the same value.
var ErrNoResourceSet = errors.New("no resource set")

// ErrMultipleResourceSets is returned by [Router.ResourceSet] when more than
// one resource set handles the object.
var ErrMultipleResourceSets = errors.New("multiple resource sets")

// IsNoResourceSet reports whether err matches [ErrNoResourceSet].
func IsNoResourceSet(err error) bool { return errors.Is(err, ErrNoResourceSet) }

// PanicError is the error of [Router.ResourceSet] when the Handles of a set
// panicked: the panic, recovered, and the set. (The Framework turns it into
// its own framework.PanicError, naming the set the same way.)
type PanicError struct {
	// ResourceSet is the set whose Handles panicked.
	ResourceSet *ResourceSet
	// Index is the position of ResourceSet in Config.ResourceSets.
	Index int
	// Value is the value passed to panic.
	Value any
	// Stack is the stack of the panicking goroutine, from runtime/debug.Stack.
	Stack []byte
}

// Error returns "resource set <set>: handles: panic: <value>", the set
// named as in the router's other errors: its name quoted, or "#<Index>"
// when it has none.
func (e *PanicError) Error() string {
	return fmt.Sprintf("resource set %s: handles: panic: %v", e.ResourceSet.displayName(e.Index), e.Value)
}

// Unwrap returns the panic value when it is an error, else nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
