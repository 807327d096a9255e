package operator

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/internal/scope"
)

// checkScopes refuses an informer given a Namespace (informer.Config) for
// a resource that the API server's discovery shows cluster-scoped: the
// server answers the list of it in a namespace with NotFound, as it does
// for a resource it does not serve, so the cache would never sync. The
// informer finds it out too, from discovery, once its list is answered
// NotFound, and ends the wait for its cache then (the same reading of
// discovery, internal/scope); this check fails before any informer
// starts. Discovery tells the scope for certain (a resource's scope cannot
// change while it is served); a resource it does not show (a CRD not
// installed yet) or a discovery that fails is not refused: the wait for
// the cache names its list error then. One discovery request per group
// version of the informers with a Namespace, under ctx: Run and Plan bound
// it with CacheSyncTimeout, and one that does not answer by then is a
// discovery that fails.
func (o *Operator) checkScopes(ctx context.Context, informers []*sharedInformer) error {
	d, ok := o.kube.Discovery().(scope.Discovery)
	if !ok {
		return nil
	}
	type answer struct {
		list *metav1.APIResourceList
		err  error
	}
	answers := map[schema.GroupVersion]answer{}
	for _, si := range informers {
		if si.key.namespace == "" {
			continue
		}
		gv := si.key.gvr.GroupVersion()
		a, seen := answers[gv]
		if !seen {
			a.list, a.err = d.ServerResourcesForGroupVersionWithContext(ctx, gv.String())
			answers[gv] = a
		}
		if scope.Of(a.list, a.err, si.key.gvr.Resource) == scope.ClusterScoped {
			return fmt.Errorf("%w: informer for %s: %s", ErrInvalidConfig, si.key, scope.NamespaceOfClusterScoped(si.key.gvr, si.key.namespace, true))
		}
	}
	return nil
}
