package informer

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/internal/scope"
)

// scopeTimeout bounds the requests of one scopeCheck.ask: the reflector
// waits for them before it retries its list.
const scopeTimeout = 10 * time.Second

// scopeCheck tells whether the API server serves the informer's resource,
// and whether it is namespaced, when a list of the informer's Namespace is
// answered NotFound before the cache synced: the server answers so for a
// cluster-scoped resource, which can never sync in a namespace, as for a
// resource it does not serve (yet: a CRD not installed). See
// Informer.onWatchError.
type scopeCheck struct {
	// ask asks the API server, within scopeTimeout: through its discovery
	// (discovered) with RESTConfig or RESTClient, through lists with a
	// dynamic Client, which has no discovery.
	ask        func(ctx context.Context) scope.Scope
	discovered bool
	// known is the scope once the server answered that it serves the
	// resource (Namespaced or ClusterScoped), which cannot change while it
	// does: never asked again then. Unknown and NotServed are asked again
	// at the next NotFound list, which client-go's backoff spaces out.
	known atomic.Int32
}

// of returns the scope of the informer's resource, asking the API server
// unless it answered before.
func (c *scopeCheck) of(ctx context.Context) scope.Scope {
	if s := scope.Scope(c.known.Load()); s != scope.Unknown {
		return s
	}
	ctx, cancel := context.WithTimeout(ctx, scopeTimeout)
	defer cancel()
	s := c.ask(ctx)
	if s == scope.Namespaced || s == scope.ClusterScoped {
		c.known.Store(int32(s))
	}
	return s
}

// discoveryScope asks d, the API server's discovery, for gvr's scope: one
// request for gvr's group version.
func discoveryScope(d scope.Discovery, gvr schema.GroupVersionResource) func(context.Context) scope.Scope {
	return func(ctx context.Context) scope.Scope { return scope.Discover(ctx, d, gvr) }
}

// listScope tells gvr's scope from lists of one object through client:
// NotFound in all namespaces, the server does not serve it; answered there
// and still NotFound in namespace, it is cluster-scoped (a CRD installed
// between the lists answers in namespace too, when namespaced). A list
// that fails otherwise (Forbidden in all namespaces: a Role's rights
// only) cannot tell.
func listScope(client dynamic.Interface, gvr schema.GroupVersionResource, namespace string) func(context.Context) scope.Scope {
	return func(ctx context.Context) scope.Scope {
		one := metav1.ListOptions{Limit: 1}
		_, err := client.Resource(gvr).List(ctx, one)
		switch {
		case apierrors.IsNotFound(err):
			return scope.NotServed
		case err != nil:
			return scope.Unknown
		}
		_, err = client.Resource(gvr).Namespace(namespace).List(ctx, one)
		switch {
		case apierrors.IsNotFound(err):
			return scope.ClusterScoped
		case err != nil:
			return scope.Unknown
		}
		return scope.Namespaced
	}
}

// restDiscovery is the discovery of the API server of a REST client of any
// serializer (Config.RESTClient, whose scheme may not know the discovery
// documents): it asks for JSON and decodes it itself.
type restDiscovery struct{ client rest.Interface }

// ServerResourcesForGroupVersionWithContext implements scope.Discovery.
func (d restDiscovery) ServerResourcesForGroupVersionWithContext(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error) {
	path := "/apis/" + groupVersion
	if groupVersion == "v1" {
		path = "/api/v1"
	}
	body, err := d.client.Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	list := &metav1.APIResourceList{}
	if err := json.Unmarshal(body, list); err != nil {
		return nil, fmt.Errorf("decode the discovery of %s: %w", groupVersion, err)
	}
	return list, nil
}
