package webapp

import (
	"fmt"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/wrapper/metrics"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
)

// ResourceSetsConfig configures NewResourceSets.
type ResourceSetsConfig struct {
	// Client writes the child objects. Required.
	Client kubernetes.Interface
	// Children reads the child objects. Required: NewCachedChildren in an
	// operator, NewLiveChildren for a one-off plan.
	Children Children
	// OwnWrites is told of every apply of a child, so that its watch event
	// does not wake the WebApp again. Optional (nil for a one-off plan).
	OwnWrites *operator.OwnWrites
	// Logger receives the resources' logs. Optional; nil means no logs.
	Logger log.Logger
	// Registerer receives the resource metrics of the metrics wrapper.
	// Optional; nil registers nothing.
	Registerer prometheus.Registerer
	// BackOffFactory paces the retry wrapper's retries of each step.
	// Optional; defaults to retry.DefaultBackOffFactory().
	BackOffFactory func() backoff.BackOff
}

// NewResourceSets returns the resource sets of the two operator releases,
// in the order of Releases. Each set's Handles routes by LabelRelease (see
// ReleaseOf); its resources run in this order:
//
//	release 1: configmap, deployment, service (absent)
//	release 2: configmap, deployment (+ release label and annotation), service
//
// In release 1 the service resource only deletes a Service that release 2
// left behind (a WebApp moved back). Every resource is a crud.Resource
// wrapped by retry (each step retried briefly) and metrics (each step timed,
// retries included). The status is the Framework's (see New).
//
// The error matches ErrInvalidConfig and names the field when a required
// field is missing.
func NewResourceSets(config ResourceSetsConfig) ([]*router.ResourceSet, error) {
	switch {
	case config.Client == nil:
		return nil, fmt.Errorf("%w: %T.Client must not be empty", ErrInvalidConfig, config)
	case config.Children == nil:
		return nil, fmt.Errorf("%w: %T.Children must not be empty", ErrInvalidConfig, config)
	}
	if config.Logger == nil {
		config.Logger = log.NewNopLogger()
	}
	if config.BackOffFactory == nil {
		config.BackOffFactory = retry.DefaultBackOffFactory()
	}

	var sets []*router.ResourceSet
	for _, release := range Releases {
		ops := []crud.Ops{
			&configMapOps{childWriter: configMapWriter(config.Client, config.OwnWrites), children: config.Children, logger: config.Logger},
			&deploymentOps{childWriter: deploymentWriter(config.Client, config.OwnWrites), children: config.Children, release: release, logger: config.Logger},
			&serviceOps{childWriter: serviceWriter(config.Client, config.OwnWrites), children: config.Children, enabled: release == Release2, logger: config.Logger},
		}
		resources := make([]resource.Interface, 0, len(ops))
		for _, o := range ops {
			r, err := wrap(config, o)
			if err != nil {
				return nil, err
			}
			resources = append(resources, r)
		}
		set, err := router.NewResourceSet(router.ResourceSetConfig{
			Name:      "release-" + release,
			Handles:   Handles(release),
			Logger:    config.Logger,
			Resources: resources,
		})
		if err != nil {
			return nil, fmt.Errorf("resource set of release %s: %w", release, err)
		}
		sets = append(sets, set)
	}
	return sets, nil
}

// wrap builds the crud.Resource of ops wrapped by retry and metrics.
func wrap(config ResourceSetsConfig, ops crud.Ops) (resource.Interface, error) {
	c, err := crud.New(crud.Config{Ops: ops, Logger: config.Logger})
	if err != nil {
		return nil, err
	}
	r, err := retry.New(retry.Config{Resource: c, BackOffFactory: config.BackOffFactory, Logger: config.Logger})
	if err != nil {
		return nil, err
	}
	return metrics.New(metrics.Config{Resource: r, Registerer: config.Registerer})
}

// SetFor returns the set of sets (as returned by NewResourceSets) that
// handles release, or nil.
func SetFor(sets []*router.ResourceSet, release string) *router.ResourceSet {
	for _, s := range sets {
		if s.Name() == "release-"+release {
			return s
		}
	}
	return nil
}
