// Package scope tells, from the API server's discovery, whether the server
// serves a resource and whether the resource is namespaced. The informer
// package asks when a list of a Namespace is answered NotFound (its wait for
// the cache ends on a Namespace given for a cluster-scoped resource, and
// names a resource not served), and the operator package before any
// informer starts (it refuses such a Namespace): one reading of discovery,
// one message.
package scope

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Discovery is the part of client-go's discovery client that lists the
// resources of one group version (discovery.DiscoveryClient has it).
type Discovery interface {
	// ServerResourcesForGroupVersionWithContext returns the resources the
	// server serves in groupVersion ("v1", "apps/v1"); an error that
	// matches apierrors.IsNotFound when it serves no such group version.
	ServerResourcesForGroupVersionWithContext(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)
}

// Scope is what discovery says of a resource.
type Scope int

const (
	// Unknown: discovery did not answer (an error other than NotFound).
	Unknown Scope = iota
	// NotServed: the server serves no such resource (its group version
	// unknown, a CRD not installed yet).
	NotServed
	// Namespaced: the server serves it, and its objects are in namespaces.
	Namespaced
	// ClusterScoped: the server serves it, and its objects are in no
	// namespace (nodes, namespaces, a cluster-scoped custom resource).
	ClusterScoped
)

// Of returns the scope of resource that list and err, the answer of a
// discovery of its group version, show: NotServed for a NotFound error or
// a list without resource, Unknown for another error.
func Of(list *metav1.APIResourceList, err error, resource string) Scope {
	switch {
	case apierrors.IsNotFound(err):
		return NotServed
	case err != nil || list == nil:
		return Unknown
	}
	r, ok := Find(list, resource)
	switch {
	case !ok:
		return NotServed
	case r.Namespaced:
		return Namespaced
	}
	return ClusterScoped
}

// Discover asks d for the scope of gvr: one discovery request of gvr's
// group version, under ctx.
func Discover(ctx context.Context, d Discovery, gvr schema.GroupVersionResource) Scope {
	list, err := d.ServerResourcesForGroupVersionWithContext(ctx, gvr.GroupVersion().String())
	return Of(list, err, gvr.Resource)
}

// Find returns the entry of resource (a resource's plural name, not a
// subresource's) in list, a discovery's answer; false when it has none.
func Find(list *metav1.APIResourceList, resource string) (metav1.APIResource, bool) {
	if list != nil {
		for _, r := range list.APIResources {
			if r.Name == resource {
				return r, true
			}
		}
	}
	return metav1.APIResource{}, false
}

// NamespaceOfClusterScoped says why an informer given namespace
// (informer.Config.Namespace) for gvr, which is cluster-scoped, cannot
// sync, and what to do: the words of both packages' errors, after their
// own context. discovered is true when discovery showed the scope, false
// when lists did (the resource listed in all namespaces, NotFound in
// namespace).
func NamespaceOfClusterScoped(gvr schema.GroupVersionResource, namespace string, discovered bool) string {
	if discovered {
		return fmt.Sprintf("informer.Config.Namespace is %q, but the API server's discovery shows %s cluster-scoped: its objects are in no namespace, the list in one is answered NotFound and the cache would never sync; leave Namespace empty",
			namespace, gvr.GroupResource())
	}
	return fmt.Sprintf("informer.Config.Namespace is %q, but the API server lists %s in all namespaces and answers NotFound in this one: it is cluster-scoped, its objects are in no namespace and the cache would never sync; leave Namespace empty",
		namespace, gvr.GroupResource())
}
