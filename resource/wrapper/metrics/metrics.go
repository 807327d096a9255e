package metrics

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/operatorkit/operatorkit/internal/opswrap"
	"github.com/operatorkit/operatorkit/internal/promutil"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
)

// Config is the configuration of a [Resource].
type Config struct {
	// Resource is the resource to measure. Required.
	Resource resource.Interface
	// Registerer receives the collectors. Optional; when nil (or a nil
	// *prometheus.Registry) nothing is registered, and the metrics are
	// still collected.
	Registerer prometheus.Registerer
}

// Resource is a resource.Interface that measures the wrapped resource; see
// the package documentation. It is safe for concurrent use when the wrapped
// resource is.
type Resource struct {
	wrapped resource.Interface // as given in Config
	inner   resource.Interface // what runs: wrapped, or its copy with measured steps
	perStep bool
	series  map[string]series // by operation; read-only after New
}

// series are the metrics of one operation of one resource.
type series struct {
	duration prometheus.Observer
	errors   prometheus.Counter
}

var (
	_ resource.Interface = (*Resource)(nil)
	_ crud.OpsWrapper    = (*Resource)(nil)
)

// New returns a Resource measuring config.Resource and registers its
// collectors. It returns an error matching [ErrInvalidConfig], naming the
// field, when config.Resource is nil or its name is not valid UTF-8, and
// when config.Registerer holds a different collector under one of the
// metric names (the registry's error is wrapped too).
func New(config Config) (*Resource, error) {
	if resource.IsNil(config.Resource) {
		return nil, fmt.Errorf("%w: %T.Resource must not be empty", ErrInvalidConfig, config)
	}
	name := config.Resource.Name()
	if !utf8.ValidString(name) { // the "resource" label: prometheus would panic
		return nil, fmt.Errorf("%w: %T.Resource has a name that is not valid UTF-8: %q", ErrInvalidConfig, config, name)
	}
	duration, err := promutil.Register(config.Registerer, newDurationVec())
	if err != nil {
		// Another collector under one of the wrapper's metric names.
		return nil, fmt.Errorf("%w: %T.Registerer: %w", ErrInvalidConfig, config, err)
	}
	errs, err := promutil.Register(config.Registerer, newErrorsVec())
	if err != nil {
		return nil, fmt.Errorf("%w: %T.Registerer: %w", ErrInvalidConfig, config, err)
	}

	r := &Resource{wrapped: config.Resource}
	r.inner, r.perStep = opswrap.Resource(config.Resource, r.observe)

	operations := []string{resource.OperationEnsureCreated, resource.OperationEnsureDeleted}
	if r.perStep {
		operations = append(operations,
			crud.StepGetCurrentState, crud.StepGetDesiredState, crud.StepNewUpdatePatch, crud.StepNewDeletePatch,
			crud.StepApplyCreateChange, crud.StepApplyUpdateChange, crud.StepApplyDeleteChange)
	}
	r.series = make(map[string]series, len(operations))
	for _, op := range operations {
		r.series[op] = series{
			duration: duration.WithLabelValues(name, op),
			errors:   errs.WithLabelValues(name, op),
		}
	}
	return r, nil
}

// Name returns the wrapped resource's name.
func (r *Resource) Name() string { return r.wrapped.Name() }

// EnsureCreated runs and measures the wrapped resource's EnsureCreated (and
// each of its CRUD steps, if any).
func (r *Resource) EnsureCreated(ctx context.Context, obj any) error {
	return r.observe(ctx, resource.OperationEnsureCreated, func(ctx context.Context) error {
		return r.inner.EnsureCreated(ctx, obj)
	})
}

// EnsureDeleted runs and measures the wrapped resource's EnsureDeleted (and
// each of its CRUD steps, if any).
func (r *Resource) EnsureDeleted(ctx context.Context, obj any) error {
	return r.observe(ctx, resource.OperationEnsureDeleted, func(ctx context.Context) error {
		return r.inner.EnsureDeleted(ctx, obj)
	})
}

// Unwrap returns the wrapped resource, as given in Config.
func (r *Resource) Unwrap() resource.Interface { return r.wrapped }

// WrapOps implements crud.OpsWrapper: when r measures the steps of a
// crud.Resource, it returns a copy of r whose underlying Ops is wrap of the
// measured Ops, and true; otherwise nil and false.
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

// observe runs call and records its duration and error under operation.
// A call that panics is measured and counted as an error too, and its
// panic goes on (the Framework recovers it).
func (r *Resource) observe(ctx context.Context, operation string, call func(ctx context.Context) error) (err error) {
	s := r.series[operation]
	start := time.Now()
	returned := false
	defer func() {
		s.duration.Observe(time.Since(start).Seconds())
		if err != nil || !returned {
			s.errors.Inc()
		}
	}()
	err = call(ctx)
	returned = true
	return err
}
