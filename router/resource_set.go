package router

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/operatorkit/operatorkit/internal/nilptr"
	"github.com/operatorkit/operatorkit/resource"
)

// ResourceSetConfig is the configuration of a [ResourceSet].
type ResourceSetConfig struct {
	// Handles reports whether the set reconciles obj. Required. It must be
	// cheap and free of side effects: the router calls the Handles of every
	// set for every reconciliation.
	Handles func(obj any) bool
	// InitCtx prepares the context of one reconciliation of obj, for example
	// by adding context/<x>context signals or values the resources share. It
	// runs before the set's resources; an error fails the reconciliation.
	// It must not make a new conditioncontext or resourceversioncontext
	// (their NewContext): the Framework reads the conditions and the
	// resourceVersion that the resources set from the ones it made, and
	// would not see theirs. Optional; the identity when nil.
	InitCtx func(ctx context.Context, obj any) (context.Context, error)
	// Logger receives a debug message when InitCtx fails. Optional; defaults
	// to a nop logger. It must not hold a nil pointer.
	Logger log.Logger
	// Resources are the set's resources, in the order they run. Required;
	// entries must not be nil, their names must be non-empty, valid UTF-8
	// and unique, and no two may make the same claim (see NewResourceSet).
	Resources []resource.Interface
	// Name identifies the set in errors, logs, traces and metrics, for
	// example the version "v1" it handles. Optional; valid UTF-8.
	Name string
}

// ResourceSet is an ordered list of resources with the predicate that says
// which objects they reconcile. It is immutable and safe for concurrent use
// when its Handles and InitCtx functions are.
type ResourceSet struct {
	handles   func(obj any) bool
	initCtx   func(ctx context.Context, obj any) (context.Context, error)
	logger    log.Logger
	resources []resource.Interface
	name      string
}

// NewResourceSet returns a ResourceSet. It returns an error matching
// [ErrInvalidConfig], naming the field, when Handles or Resources is empty,
// when Logger holds a nil pointer, when Name is not valid UTF-8, when an entry of Resources is nil or its
// name is empty or not valid UTF-8, when two resources have the same name, or when
// two resources make the same claim ([resource.Claimer], looked for through
// wrappers that have an Unwrap method): each would delete the objects the
// other keeps, as not desired.
func NewResourceSet(config ResourceSetConfig) (*ResourceSet, error) {
	if config.Handles == nil {
		return nil, fmt.Errorf("%w: %T.Handles must not be empty", ErrInvalidConfig, config)
	}
	if len(config.Resources) == 0 {
		return nil, fmt.Errorf("%w: %T.Resources must not be empty", ErrInvalidConfig, config)
	}
	if config.Logger != nil && nilptr.Is(config.Logger) { // its first log line would panic
		return nil, fmt.Errorf("%w: %T.Logger is a nil %T", ErrInvalidConfig, config, config.Logger)
	}
	if !utf8.ValidString(config.Name) {
		// The resource_set label of the Framework's objects gauge:
		// prometheus would panic at the first scrape.
		return nil, fmt.Errorf("%w: %T.Name is not valid UTF-8: %q", ErrInvalidConfig, config, config.Name)
	}
	seen := make(map[string]int, len(config.Resources))
	var claims map[string]int
	for i, r := range config.Resources {
		if resource.IsNil(r) {
			return nil, fmt.Errorf("%w: %T.Resources[%d] must not be nil", ErrInvalidConfig, config, i)
		}
		name := r.Name()
		if name == "" {
			// The errors, traces and metrics of the resource would name
			// nothing ("ensure created : <err>").
			return nil, fmt.Errorf("%w: %T.Resources[%d] (%T) has an empty name", ErrInvalidConfig, config, i, r)
		}
		if !utf8.ValidString(name) {
			// The Framework's error metric is labelled with it: prometheus
			// would panic at the resource's first error.
			return nil, fmt.Errorf("%w: %T.Resources[%d] has a name that is not valid UTF-8: %q", ErrInvalidConfig, config, i, name)
		}
		if j, ok := seen[name]; ok {
			return nil, fmt.Errorf("%w: %T.Resources[%d] and Resources[%d] have the same name %q", ErrInvalidConfig, config, j, i, name)
		}
		seen[name] = i
		if claim := claimOf(r); claim != "" {
			if j, ok := claims[claim]; ok {
				return nil, fmt.Errorf("%w: %T.Resources[%d] (%s) and Resources[%d] (%s) both keep %s: each would delete the other's as not desired; keep them with one resource (a DesiredSet), or give each a label of its own (ManagedBy)",
					ErrInvalidConfig, config, j, config.Resources[j].Name(), i, name, claim)
			}
			if claims == nil {
				claims = map[string]int{}
			}
			claims[claim] = i
		}
	}
	logger := config.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	if config.Name != "" {
		logger = log.With(logger, "resourceSet", config.Name)
	}
	return &ResourceSet{
		handles:   config.Handles,
		initCtx:   config.InitCtx,
		logger:    logger,
		resources: append([]resource.Interface(nil), config.Resources...),
		name:      config.Name,
	}, nil
}

// claimOf returns the claim of r ([resource.Claimer]) or of the resource it
// wraps, "" when none makes one.
func claimOf(r resource.Interface) string {
	for r != nil {
		if c, ok := r.(resource.Claimer); ok {
			return c.Claim()
		}
		u, ok := r.(interface{ Unwrap() resource.Interface })
		if !ok {
			return ""
		}
		r = u.Unwrap()
	}
	return ""
}

// Handles reports whether the set reconciles obj, by calling
// ResourceSetConfig.Handles.
func (s *ResourceSet) Handles(obj any) bool { return s.handles(obj) }

// InitCtx returns the context for one reconciliation of obj, from
// ResourceSetConfig.InitCtx, or ctx itself when that is nil. Its error is
// returned wrapped with the set's name; a nil context without an error is
// an error too.
func (s *ResourceSet) InitCtx(ctx context.Context, obj any) (context.Context, error) {
	if s.initCtx == nil {
		return ctx, nil
	}
	ctx, err := s.initCtx(ctx, obj)
	if err != nil {
		level.Debug(s.logger).Log("msg", "init ctx failed", "err", err)
		return nil, fmt.Errorf("resource set %s: init ctx: %w", s.displayName(-1), err)
	}
	if ctx == nil {
		return nil, fmt.Errorf("resource set %s: init ctx returned a nil context and no error", s.displayName(-1))
	}
	return ctx, nil
}

// Resources returns the set's resources in the order they run. The caller
// must not modify the returned slice.
func (s *ResourceSet) Resources() []resource.Interface { return s.resources }

// Name returns ResourceSetConfig.Name; it may be empty.
func (s *ResourceSet) Name() string { return s.name }

// resourceNames returns the quoted names of the set's resources, comma
// separated, to tell an unnamed set in an error.
func (s *ResourceSet) resourceNames() string {
	names := make([]string, len(s.resources))
	for i, r := range s.resources {
		names[i] = strconv.Quote(r.Name())
	}
	return strings.Join(names, ", ")
}

// displayName returns the set's name quoted, or its position in the router
// when it has none (i < 0: unknown).
func (s *ResourceSet) displayName(i int) string {
	switch {
	case s.name != "":
		return fmt.Sprintf("%q", s.name)
	case i >= 0:
		return fmt.Sprintf("#%d", i)
	default:
		return "(unnamed)"
	}
}
