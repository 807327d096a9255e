package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Permission is one verb on one resource (and subresource) in one
// namespace ("" means every namespace, or a cluster-scoped resource).
type Permission struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespace   string
}

// String reads like `create events in namespace "demo"`.
func (p Permission) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	where := "in all namespaces"
	if p.Namespace != "" {
		where = fmt.Sprintf("in namespace %q", p.Namespace)
	}
	return p.Verb + " " + r + " " + where
}

// PermissionsOf lists the permissions the rules grant, in namespace, for
// the verbs that keep(verb, group, resource) accepts (nil keeps all).
func PermissionsOf(rules []rbacv1.PolicyRule, namespace string, keep func(verb, group, resource string) bool) []Permission {
	var out []Permission
	for _, rule := range rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, v := range rule.Verbs {
					if keep != nil && !keep(v, g, res) {
						continue
					}
					out = append(out, Permission{Verb: v, Group: g, Resource: resource, Subresource: sub, Namespace: namespace})
				}
			}
		}
	}
	return out
}

// Check verifies, before the operator starts, that the API server of cfg
// answers, that it serves gv's resource (the CRD is installed) unless
// crdOptional, and that the credentials hold every permission in perms (with
// SelfSubjectAccessReviews, which every authenticated user may create). Each
// problem is one line: the error names the server, the missing CRD, or every
// missing permission at once.
func Check(ctx context.Context, cfg *rest.Config, gvr schema.GroupVersionResource, crdOptional bool, perms []Permission) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 15 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("cannot build a client for %s: %s", cfg.Host, oneLine(err))
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		return reachError(cfg.Host, err)
	}
	var missing []string
	for _, p := range perms {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: p.Namespace, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource,
			},
		}}
		res, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return reachError(cfg.Host, err)
		}
		if !res.Status.Allowed {
			missing = append(missing, p.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing permission%s: %s (grant the ClusterRole in example/config/rbac)", plural(len(missing)), strings.Join(missing, "; "))
	}
	if crdOptional {
		return nil
	}
	resources, err := client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil && !apierrors.IsNotFound(err) {
		return reachError(cfg.Host, err)
	}
	if resources != nil {
		for _, r := range resources.APIResources {
			if r.Name == gvr.Resource {
				return nil
			}
		}
	}
	return fmt.Errorf("the API server at %s does not serve %s: install the CRD (kubectl apply -f example/config/crd) or run with --install-crd", cfg.Host, gvr.GroupResource())
}

// reachError explains a failed request to the API server at host.
func reachError(host string, err error) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server at %s rejected the credentials (401 Unauthorized)", host)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the API server at %s refused a start-up check: %s", host, oneLine(err))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach the API server at %s: %s", host, oneLine(err))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
