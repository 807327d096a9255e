package framework

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/internal/signal"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/trace"
)

// The Prometheus namespace and subsystem of the framework's metrics, which
// are named operatorkit_framework_<name>.
const (
	PrometheusNamespace = "operatorkit"
	PrometheusSubsystem = "framework"
)

// ProcessUpdate runs EnsureCreated of each resource in order for obj, an
// object that exists and is not being deleted. It returns nil when every
// resource succeeded or the reconciliation was canceled, and otherwise the
// first resource's error (or recovered panic) as an [*ExecutionError]. A
// panic in a resource's Name is recovered too: the resource does not run,
// and is named "resources[<i>] (<its type>)". See the package
// documentation for signals, cancellation and tracing. A nil entry in
// resources, or a nil pointer (see resource.IsNil), is an error matching
// [ErrInvalidConfig], and no resource runs.
//
// ProcessUpdate is a drop-in for an informer's UpdateFunc in simple setups;
// the framework's runtime calls it with the latest cached object.
func ProcessUpdate(ctx context.Context, obj any, resources []resource.Interface) error {
	return process(ctx, obj, resources, resource.OperationEnsureCreated)
}

// ProcessDelete runs EnsureDeleted of each resource in order for obj, an
// object being deleted. Results are as for [ProcessUpdate]. A nil return means
// every resource finished its cleanup, unless a resource set
// finalizerskeptcontext or the reconciliation was canceled; the caller decides
// about the finalizer.
func ProcessDelete(ctx context.Context, obj any, resources []resource.Interface) error {
	return process(ctx, obj, resources, resource.OperationEnsureDeleted)
}

func process(ctx context.Context, obj any, resources []resource.Interface, op string) error {
	for i, r := range resources {
		if resource.IsNil(r) { // a nil pointer's methods would panic, its Name in ensure's recover too
			return fmt.Errorf("%w: resources[%d] must not be nil", ErrInvalidConfig, i)
		}
	}
	ctx = signal.WithMissing(ctx)
	t := trace.FromContext(ctx)
	// A resource's step starts where the one before ended (one clock read
	// per resource; the checks between two resources count in the second).
	start := t.Now()
	for i, r := range resources {
		name, err := resourceName(r, i)
		if err != nil {
			t.Record(name, op, start, trace.OutcomeError, err)
			return &ExecutionError{Resource: name, Operation: op, Err: err}
		}
		if reconciliationcanceledcontext.IsCanceled(ctx) || supersededBy(ctx) {
			t.RecordNotRun(name, op, trace.OutcomeCanceled)
			return nil
		}
		err = ensure(signal.WithFlag(ctx, signal.ResourceCanceled), obj, r, name, op)
		if err != nil {
			t.Record(name, op, start, trace.OutcomeError, err)
			return &ExecutionError{Resource: name, Operation: op, Err: err}
		}
		start = t.RecordNext(name, op, start, trace.OutcomeDone, nil)
	}
	return nil
}

// resourceName returns r.Name(), or, when that panics, a *PanicError and
// the name the panic is reported under: resources[i] and r's type.
func resourceName(r resource.Interface, i int) (name string, err error) {
	defer func() {
		if v := recover(); v != nil {
			name = fmt.Sprintf("resources[%d] (%T)", i, r)
			err = &PanicError{Resource: name, Value: v, Stack: debug.Stack()}
		}
	}()
	return r.Name(), nil
}

// ensure runs op of r, named name, and turns a panic into a *PanicError.
func ensure(ctx context.Context, obj any, r resource.Interface, name, op string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Resource: name, Value: v, Stack: debug.Stack()}
		}
	}()
	if op == resource.OperationEnsureDeleted {
		return r.EnsureDeleted(ctx, obj)
	}
	return r.EnsureCreated(ctx, obj)
}
