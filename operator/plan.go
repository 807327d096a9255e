package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/go-kit/log/level"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/framework"
)

// ErrNotFound is returned by Plan for a key that the Framework's informer
// does not hold.
var ErrNotFound = errors.New("not found")

// PlanConfig configures Operator.Plan.
type PlanConfig struct {
	// Framework plans the objects, read from its informer
	// (framework.Config.Informer, normally one of the Operator's shared
	// informers). Required.
	Framework *framework.Framework
	// Keys names the objects to plan by their cache keys, "namespace/name"
	// ("name" for cluster-scoped objects), in the order given. Empty: every object of the Framework's informer, sorted by
	// key (the informer needs a List method, as SharedInformer has).
	Keys []string
	// ResourceSet, when set, plans every object under the resource set of
	// this name instead of the one the Framework's router picks.
	ResourceSet string
}

// Plan is a one-off dry run, for the "plan" command of an operator binary:
// it starts the Operator's shared informers and the Framework's own (and
// nothing else: no HTTP server, no leader election, no Framework, no
// events), waits for their caches, plans each object with
// framework.Framework.Plan, stops the informers and returns the plans in
// order. The plans are computed from the same caches as the running
// operator's reconciliations, and nothing is written.
//
// An object's own error (a spec the resources cannot use, no resource set)
// is in its ObjectPlan.Err. The error returned is what prevents planning:
// a key the cache does not hold (ErrNotFound), a cache that does not sync
// within Config.CacheSyncTimeout or before ctx ends, or whose list the API
// server refuses for good (within about a second then: see Run; matching
// informer.ErrNotSynced, as in Run), a config without Framework or an
// informer given a Namespace for a cluster-scoped resource
// (ErrInvalidConfig, as in Run). Plan
// leaves no goroutine behind. Like Run it is called once: afterwards Run
// and Plan return ErrAlreadyStarted.
func (o *Operator) Plan(ctx context.Context, config PlanConfig) ([]framework.ObjectPlan, error) {
	if config.Framework == nil {
		return nil, fmt.Errorf("%w: %T.Framework must not be empty", ErrInvalidConfig, config)
	}
	o.mu.Lock()
	if o.started {
		o.mu.Unlock()
		return nil, ErrAlreadyStarted
	}
	o.started = true
	informers := append([]*sharedInformer(nil), o.order...)
	o.mu.Unlock()

	// The scope check's discovery is part of the wait CacheSyncTimeout
	// bounds, as in Run.
	syncCtx, stopSync := o.cacheSyncContext(ctx)
	defer stopSync()
	if err := o.checkScopes(syncCtx, informers); err != nil {
		return nil, fmt.Errorf("operator %s: %w", o.config.Name, err)
	}
	own := config.Framework.Informer() // a SharedInformer's Run only waits
	infCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	run := func(name string, run func(context.Context) error) {
		wg.Go(func() {
			if err := run(infCtx); err != nil {
				level.Error(o.logger).Log("msg", "informer stopped with error", "informer", name, "err", err)
			}
		})
	}
	for _, si := range informers {
		run(si.key.String(), si.inf.Run)
	}
	run("framework", own.Run)
	// Bounded as in Run: a cache that never syncs (the CRD not installed,
	// no permission to list) is an error, not a wait for ever.
	waits := append(cacheWaits(informers), cacheWait{name: "the Framework's informer", wait: own.WaitForCacheSync})
	if err := waitForCaches(syncCtx, waits); err != nil {
		return nil, fmt.Errorf("operator %s: %w", o.config.Name, err)
	}
	stopSync()

	keys := config.Keys
	if len(keys) == 0 {
		lister, ok := own.(interface{ List() []any })
		if !ok {
			return nil, fmt.Errorf("%w: the Framework's informer (%T) cannot list: set %T.Keys", ErrInvalidConfig, own, config)
		}
		for _, obj := range lister.List() {
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				keys = append(keys, key)
			}
		}
		slices.Sort(keys)
	}
	plans := make([]framework.ObjectPlan, 0, len(keys))
	for _, key := range keys {
		obj, ok, err := own.Get(key)
		switch {
		case err != nil:
			return plans, fmt.Errorf("read %s from the cache: %w", key, err)
		case !ok:
			return plans, fmt.Errorf("%s: %w", key, ErrNotFound)
		}
		p, _ := config.Framework.Plan(ctx, obj, config.ResourceSet) // its error is in p.Err
		plans = append(plans, p)
	}
	return plans, nil
}
