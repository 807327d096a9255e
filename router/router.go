package router

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/operatorkit/operatorkit/internal/nilptr"
	"github.com/operatorkit/operatorkit/resource"
)

// Config is the configuration of a [Router].
type Config struct {
	// Logger receives a debug message when no set handles an object.
	// Optional; defaults to a nop logger. It must not hold a nil pointer.
	Logger log.Logger
	// ResourceSets are the sets to choose from. Required; entries must not be
	// nil, their names, when not empty, must be unique, and no set may be
	// given twice.
	ResourceSets []*ResourceSet
}

// Router returns, for an object, the one resource set that handles it (the
// seed's ResourceRouter). It is immutable and safe for concurrent use when
// the sets' Handles functions are.
type Router struct {
	logger log.Logger
	sets   []*ResourceSet
}

// New returns a Router. It returns an error matching [ErrInvalidConfig],
// naming the field, when Logger holds a nil pointer, or ResourceSets is
// empty, holds a nil entry, two sets with the same non-empty name or one
// unnamed set twice (every object it handles would match it twice, and
// [Router.ResourceSet] return [ErrMultipleResourceSets]).
func New(config Config) (*Router, error) {
	if config.Logger != nil && nilptr.Is(config.Logger) { // its first log line would panic
		return nil, fmt.Errorf("%w: %T.Logger is a nil %T", ErrInvalidConfig, config, config.Logger)
	}
	if len(config.ResourceSets) == 0 {
		return nil, fmt.Errorf("%w: %T.ResourceSets must not be empty", ErrInvalidConfig, config)
	}
	seen := make(map[string]int, len(config.ResourceSets))
	var unnamed map[*ResourceSet]int
	for i, s := range config.ResourceSets {
		if s == nil {
			return nil, fmt.Errorf("%w: %T.ResourceSets[%d] must not be nil", ErrInvalidConfig, config, i)
		}
		if s.name == "" {
			if j, ok := unnamed[s]; ok {
				return nil, fmt.Errorf("%w: %T.ResourceSets[%d] and ResourceSets[%d] are the same unnamed set (of resources %s): each object it handles would match it twice", ErrInvalidConfig, config, j, i, s.resourceNames())
			}
			if unnamed == nil {
				unnamed = map[*ResourceSet]int{}
			}
			unnamed[s] = i
			continue
		}
		if j, ok := seen[s.name]; ok {
			return nil, fmt.Errorf("%w: %T.ResourceSets[%d] and ResourceSets[%d] have the same name %q", ErrInvalidConfig, config, j, i, s.name)
		}
		seen[s.name] = i
	}
	logger := config.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	return &Router{logger: logger, sets: append([]*ResourceSet(nil), config.ResourceSets...)}, nil
}

// Single returns a Router with one ResourceSet, named name, that handles
// every object and runs resources in order: the router of an operator with
// one release (several releases, chosen by a label, need NewResourceSet
// and New). name identifies the set in logs, traces, metrics and the Ready
// condition's message, for example the version "v1"; it may be empty. It
// returns the error NewResourceSet returns for a name that is not valid
// UTF-8 and for resources (empty, a nil entry, a name that is empty or not
// valid UTF-8, two with one name or one claim).
func Single(name string, resources ...resource.Interface) (*Router, error) {
	set, err := NewResourceSet(ResourceSetConfig{Name: name, Handles: handlesAll, Resources: resources})
	if err != nil {
		return nil, err
	}
	return New(Config{ResourceSets: []*ResourceSet{set}})
}

func handlesAll(any) bool { return true }

// ResourceSet returns the one resource set whose Handles returns true for
// obj. It returns an error matching [ErrNoResourceSet] when there is none and
// one matching [ErrMultipleResourceSets], naming how many and which, when
// there are several. Both errors name the object. A panic in a set's
// Handles is recovered and returned as a [*PanicError] naming the set; the
// sets after it are not asked.
func (r *Router) ResourceSet(obj any) (_ *ResourceSet, err error) {
	asking := -1 // the set whose Handles runs
	defer func() {
		if asking < 0 {
			return
		}
		if v := recover(); v != nil {
			err = &PanicError{ResourceSet: r.sets[asking], Index: asking, Value: v, Stack: debug.Stack()}
		}
	}()
	first := -1
	var matches []int // indexes of all matches, built only once there are two
	for i, s := range r.sets {
		asking = i
		if !s.Handles(obj) {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if matches == nil {
			matches = []int{first}
		}
		matches = append(matches, i)
	}
	asking = -1
	switch {
	case first < 0:
		level.Debug(r.logger).Log("msg", "no resource set handles the object", "object", objectName(obj))
		return nil, fmt.Errorf("%w handles %s", ErrNoResourceSet, objectName(obj))
	case matches != nil:
		names := make([]string, len(matches))
		for k, i := range matches {
			names[k] = r.sets[i].displayName(i)
		}
		return nil, fmt.Errorf("%w: %d resource sets handle %s: %s", ErrMultipleResourceSets, len(matches), objectName(obj), strings.Join(names, ", "))
	}
	return r.sets[first], nil
}

// ResourceSets returns the router's sets in the order given. The caller must
// not modify the returned slice.
func (r *Router) ResourceSets() []*ResourceSet { return r.sets }

// objectName names obj in errors and logs: "namespace/name" (or "name") of
// the given type when obj has Kubernetes object metadata, else its type.
func objectName(obj any) string {
	m, ok := accessor(obj)
	if !ok {
		return fmt.Sprintf("object of type %T", obj)
	}
	name := m.GetName()
	if ns := m.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%T %s", obj, name)
}
