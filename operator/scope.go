package operator

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// checkScopes refuses an informer given a Namespace (informer.Config) for
// a resource that the API server's discovery shows cluster-scoped: the
// server answers the list of it in a namespace with NotFound, as it does
// for a resource it does not serve, so the cache would never sync and the
// wait would end only after CacheSyncTimeout. Discovery tells the scope
// for certain (a resource's scope cannot change while it is served); a
// resource it does not show (a CRD not installed yet) or a discovery that
// fails is not refused: the wait for the cache names its list error then.
// One discovery request per group version of the informers with a
// Namespace, under ctx: Run and Plan bound it with CacheSyncTimeout, and
// one that does not answer by then is a discovery that fails.
func (o *Operator) checkScopes(ctx context.Context, informers []*sharedInformer) error {
	d, ok := o.kube.Discovery().(interface {
		ServerResourcesForGroupVersionWithContext(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)
	})
	if !ok {
		return nil
	}
	lists := map[schema.GroupVersion]*metav1.APIResourceList{}
	for _, si := range informers {
		if si.key.namespace == "" {
			continue
		}
		gv := si.key.gvr.GroupVersion()
		list, seen := lists[gv]
		if !seen {
			list, _ = d.ServerResourcesForGroupVersionWithContext(ctx, gv.String()) // an error: cannot tell
			lists[gv] = list
		}
		if list == nil {
			continue
		}
		for _, r := range list.APIResources {
			if r.Name == si.key.gvr.Resource && !r.Namespaced {
				return fmt.Errorf("%w: informer for %s: informer.Config.Namespace is %q, but the API server's discovery shows %s cluster-scoped: its objects are in no namespace, the list in one is answered NotFound and the cache would never sync; leave Namespace empty",
					ErrInvalidConfig, si.key, si.key.namespace, si.key.gvr.GroupResource())
			}
		}
	}
	return nil
}
