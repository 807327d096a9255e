package crud

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/operatorkit/operatorkit/internal/nilptr"
	"github.com/operatorkit/operatorkit/internal/signal"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/trace"
)

// Config is the configuration of a [Resource].
type Config struct {
	// Ops are the resource's operations. Required; Ops.Name() must not be
	// empty.
	Ops Ops
	// Logger receives a debug message when the resource stops because of a
	// cancel signal. Optional; defaults to a nop logger. It must not hold a
	// nil pointer.
	Logger log.Logger
}

// Resource is a resource.Interface that runs the steps of an [Ops]; see the
// package documentation for the order, errors and cancellation. It is safe
// for concurrent use when its Ops is.
type Resource struct {
	ops    Ops
	name   string
	logger log.Logger
}

var (
	_ resource.Interface = (*Resource)(nil)
	_ OpsWrapper         = (*Resource)(nil)
)

// New returns a Resource running config.Ops. It returns an error matching
// [ErrInvalidConfig] when config.Ops is nil (or a nil pointer) or its Name
// is empty, or when config.Logger holds a nil pointer.
func New(config Config) (*Resource, error) {
	if nilptr.Is(config.Ops) { // a nil pointer's Name would panic
		return nil, fmt.Errorf("%w: %T.Ops must not be empty", ErrInvalidConfig, config)
	}
	name := config.Ops.Name()
	if name == "" {
		return nil, fmt.Errorf("%w: %T.Ops.Name() must not be empty", ErrInvalidConfig, config)
	}
	if config.Logger != nil && nilptr.Is(config.Logger) { // its first log line would panic
		return nil, fmt.Errorf("%w: %T.Logger is a nil %T", ErrInvalidConfig, config, config.Logger)
	}
	logger := config.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	return &Resource{ops: config.Ops, name: name, logger: log.With(logger, "resource", name)}, nil
}

// Name returns the name of the resource's Ops, as read by New.
func (r *Resource) Name() string { return r.name }

// Ops returns the Ops the resource runs.
func (r *Resource) Ops() Ops { return r.ops }

// Claim returns the claim of the resource's Ops when they implement
// [resource.Claimer], else "": router.NewResourceSet rejects two resources
// of a set with the same claim.
func (r *Resource) Claim() string {
	if c, ok := r.ops.(resource.Claimer); ok {
		return c.Claim()
	}
	return ""
}

// EnsureCreated runs GetCurrentState, GetDesiredState and NewUpdatePatch, then
// applies the patch's create, update and delete parts in that order. It
// returns the first step's error, wrapped with the resource and step name, or
// nil when all steps succeeded or a cancel signal stopped the resource.
func (r *Resource) EnsureCreated(ctx context.Context, obj any) error {
	return r.ensure(ctx, obj, false)
}

// EnsureDeleted runs GetCurrentState, GetDesiredState and NewDeletePatch, then
// applies the patch's create, update and delete parts in that order. Errors
// and cancellation are as for [Resource.EnsureCreated].
func (r *Resource) EnsureDeleted(ctx context.Context, obj any) error {
	return r.ensure(ctx, obj, true)
}

// Plan is a dry run: it runs GetCurrentState, GetDesiredState and
// NewDeletePatch (when deleting) or NewUpdatePatch, and returns the patch
// without applying it: the patch EnsureCreated or EnsureDeleted would apply.
// It returns a nil patch and nil error when a cancel signal
// (resourcecanceledcontext, reconciliationcanceledcontext) stopped it or is
// set once the patch step has run, the patch step's own included: they
// would then apply none of the patch. Plan changes nothing as long as those
// three Ops methods change nothing, as their contract requires; an Ops that
// writes in them is the author's bug.
func (r *Resource) Plan(ctx context.Context, obj any, deleting bool) (*Patch, error) {
	var at time.Time
	sig := cancelSignalsOf(ctx)
	patch, err := r.plan(ctx, trace.FromContext(ctx), sig, &at, obj, deleting)
	if err == errStopped || err == nil && sig.reason() != "" {
		return nil, nil
	}
	return patch, err
}

// WrapOps returns a copy of r that runs wrap(r.Ops()), and true. It
// implements [OpsWrapper].
func (r *Resource) WrapOps(wrap func(Ops) Ops) (resource.Interface, bool) {
	c := *r
	c.ops = wrap(r.ops)
	return &c, true
}

// errStopped ends a resource early because of a cancel signal; it never
// leaves the package.
var errStopped = errors.New("stopped by a cancel signal")

func (r *Resource) ensure(ctx context.Context, obj any, deleting bool) error {
	t := trace.FromContext(ctx)
	sig := cancelSignalsOf(ctx)
	var at time.Time
	patch, err := r.plan(ctx, t, sig, &at, obj, deleting)
	if err == nil {
		err = r.apply(ctx, t, sig, &at, obj, patch)
	}
	if err == errStopped {
		return nil
	}
	return err
}

// plan runs the three planning steps; sig are ctx's cancel signals, at is
// the start of the next step (see step).
func (r *Resource) plan(ctx context.Context, t *trace.Trace, sig cancelSignals, at *time.Time, obj any, deleting bool) (*Patch, error) {
	var current, desired any
	err := r.step(t, sig, at, StepGetCurrentState, func() (err error) {
		current, err = r.ops.GetCurrentState(ctx, obj)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = r.step(t, sig, at, StepGetDesiredState, func() (err error) {
		desired, err = r.ops.GetDesiredState(ctx, obj)
		return err
	})
	if err != nil {
		return nil, err
	}
	var patch *Patch
	if deleting {
		err = r.step(t, sig, at, StepNewDeletePatch, func() (err error) {
			patch, err = r.ops.NewDeletePatch(ctx, obj, current, desired)
			return err
		})
	} else {
		err = r.step(t, sig, at, StepNewUpdatePatch, func() (err error) {
			patch, err = r.ops.NewUpdatePatch(ctx, obj, current, desired)
			return err
		})
	}
	return patch, err
}

func (r *Resource) apply(ctx context.Context, t *trace.Trace, sig cancelSignals, at *time.Time, obj any, patch *Patch) error {
	create, ok := patch.CreateChange()
	if err := r.applyPart(ctx, t, sig, at, obj, StepApplyCreateChange, create, ok, r.ops.ApplyCreateChange); err != nil {
		return err
	}
	update, ok := patch.UpdateChange()
	if err := r.applyPart(ctx, t, sig, at, obj, StepApplyUpdateChange, update, ok, r.ops.ApplyUpdateChange); err != nil {
		return err
	}
	del, ok := patch.DeleteChange()
	return r.applyPart(ctx, t, sig, at, obj, StepApplyDeleteChange, del, ok, r.ops.ApplyDeleteChange)
}

func (r *Resource) applyPart(ctx context.Context, t *trace.Trace, sig cancelSignals, at *time.Time, obj any, step string, change any, set bool, apply func(ctx context.Context, obj, change any) error) error {
	if !set {
		t.RecordNotRun(r.name, step, trace.OutcomeSkipped)
		return nil
	}
	return r.step(t, sig, at, step, func() error { return apply(ctx, obj, change) })
}

// step runs f as the named step unless a cancel signal of sig is set,
// records it in t, and wraps its error with the resource and step name. It
// returns errStopped when a signal stopped it. *at is the step's start when
// set (the end of the resource's step before, trace.Trace.RecordNext), else
// now; step sets it to the step's end, so that a resource's steps read the
// clock once each.
func (r *Resource) step(t *trace.Trace, sig cancelSignals, at *time.Time, step string, f func() error) error {
	reason := sig.reason()
	if reason == "" {
		if at.IsZero() {
			*at = t.Now()
		}
		if err := f(); err != nil {
			*at = t.RecordNext(r.name, step, *at, trace.OutcomeError, err)
			return fmt.Errorf("%s: %s: %w", r.name, step, err)
		}
		*at = t.RecordNext(r.name, step, *at, trace.OutcomeDone, nil)
		return nil
	}
	level.Debug(r.logger).Log("msg", "stopping before step", "step", step, "reason", reason)
	t.RecordNotRun(r.name, step, trace.OutcomeCanceled)
	return errStopped
}

// cancelSignals are the signals of a context that stop a resource before
// its next step (resourcecanceledcontext, reconciliationcanceledcontext),
// looked up once per operation rather than before each step: a context's
// values do not change. A nil one is a signal the context does not carry.
type cancelSignals struct {
	resource, reconciliation *signal.Flag
}

func cancelSignalsOf(ctx context.Context) cancelSignals {
	return cancelSignals{
		resource:       signal.FlagFrom(ctx, signal.ResourceCanceled),
		reconciliation: signal.FlagFrom(ctx, signal.ReconciliationCanceled),
	}
}

// reason returns the cancel signal that stops the resource before its next
// step, or "" when none is set.
func (s cancelSignals) reason() string {
	switch {
	case s.resource.IsSet():
		return "resource canceled"
	case s.reconciliation.IsSet():
		return "reconciliation canceled"
	}
	return ""
}
