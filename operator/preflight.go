package operator

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// leaseGroup is the API group of the leader election Lease.
const leaseGroup = "coordination.k8s.io"

// Permission is one verb on one resource (and subresource) in one
// namespace ("" means every namespace, or a cluster-scoped resource), on
// the objects of any name or on one object.
type Permission struct {
	// Verb is the API verb, such as "list" or "patch".
	Verb string
	// Group is the resource's API group; "" for the core group.
	Group string
	// Resource is the resource's plural name, such as "deployments".
	Resource string
	// Subresource is the subresource, such as "status"; "" for the
	// resource itself.
	Subresource string
	// Namespace is where the verb must be allowed; "" for every
	// namespace, or a cluster-scoped resource.
	Namespace string
	// Name, when set, is the one object the verb must be allowed on, as a
	// rule's resourceNames allow it; "" for objects of any name.
	Name string
}

// String reads like `create events in namespace "demo"`, or `update
// leases.coordination.k8s.io "op" in namespace "demo"` with a Name.
func (p Permission) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	if p.Name != "" {
		r += " " + strconv.Quote(p.Name)
	}
	where := "in all namespaces"
	if p.Namespace != "" {
		where = fmt.Sprintf("in namespace %q", p.Namespace)
	}
	return p.Verb + " " + r + " " + where
}

// PermissionsOf lists the permissions that rules grant, in namespace, for
// the verbs that keep(verb, group, resource) accepts (nil keeps all), in
// the order of the rules. resource may be "resource/subresource". A rule
// with resourceNames grants its verbs on each of those objects (Name).
func PermissionsOf(rules []rbacv1.PolicyRule, namespace string, keep func(verb, group, resource string) bool) []Permission {
	var out []Permission
	for _, rule := range rules {
		names := rule.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, v := range rule.Verbs {
					if keep != nil && !keep(v, g, res) {
						continue
					}
					for _, name := range names {
						out = append(out, Permission{Verb: v, Group: g, Resource: resource, Subresource: sub, Namespace: namespace, Name: name})
					}
				}
			}
		}
	}
	return out
}

// Permissions lists what an operator binary run with opts and fopts needs
// of the rules of its ClusterRole: every rule's verbs in fopts.Namespace
// (Preflight checks those on cluster-scoped resources at the cluster scope,
// all but get, update, patch and delete of the namespace itself),
// only get, list and watch with fopts.DryRun (a rule's verb "*", every
// verb, stands for the three then; get too: besides its
// informers, the Framework reads its object from the API server where its
// cache cannot tell, such as a deleted object's tombstone, and so does
// Sharding's hand-over); and, in opts.LeaderElectionNamespaceOrDefault(),
// what the mode needs of Leases (coordination.k8s.io) whatever the rules
// say, so that a role that lacks it fails Preflight: with opts.LeaderElect
// (leader election) create, and get and update of the Lease
// opts.LeaderElectionID alone (when set), which a role may grant by its
// name (resourceNames); with opts.Shard get, list, watch, create, update
// and delete of any Lease (the member Leases: see Sharding).
func Permissions(rules []rbacv1.PolicyRule, opts Options, fopts FrameworkOptions) []Permission {
	if fopts.DryRun {
		rules = readRules(rules)
	}
	perms := PermissionsOf(rules, fopts.Namespace, func(_, group, _ string) bool { return group != leaseGroup })
	var verbs []string
	name := ""
	switch {
	case opts.Shard:
		verbs = []string{"get", "list", "watch", "create", "update", "delete"}
	case opts.LeaderElect:
		verbs = []string{"get", "create", "update"}
		name = opts.LeaderElectionID
	}
	for _, v := range verbs {
		p := Permission{Verb: v, Group: leaseGroup, Resource: "leases", Namespace: opts.LeaderElectionNamespaceOrDefault()}
		if v != "create" { // the name of a create is in its body: RBAC cannot allow it by name
			p.Name = name
		}
		perms = append(perms, p)
	}
	return perms
}

// readRules returns rules with only their verbs get, list and watch, a
// verb "*" (every verb, as RBAC reads it) standing for the three, and
// without the rules left with none: what a dry run reads of what rules
// grant.
func readRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	for _, rule := range rules {
		var verbs []string
		add := func(vs ...string) {
			for _, v := range vs {
				if !slices.Contains(verbs, v) { // "*" beside "list": once
					verbs = append(verbs, v)
				}
			}
		}
		for _, v := range rule.Verbs {
			switch v {
			case rbacv1.VerbAll:
				add("get", "list", "watch")
			case "get", "list", "watch":
				add(v)
			}
		}
		if len(verbs) == 0 {
			continue
		}
		rule.Verbs = verbs
		out = append(out, rule)
	}
	return out
}

// PreflightConfig configures Preflight.
type PreflightConfig struct {
	// Permissions are what the identity must hold (see Permissions).
	Permissions []Permission
	// Served, when not empty, is a resource the API server must serve: the
	// operator's custom resource, whose CRD must be installed. Leave it
	// empty when the operator installs the CRD itself.
	Served schema.GroupVersionResource
}

// Preflight checks, before an operator starts, that the API server of
// restConfig answers (within 15 s), that the identity holds every
// permission of config (with SelfSubjectAccessReviews, which every
// authenticated user may create) and that the API server serves
// config.Served, so that a binary fails at once with one clear line rather
// than with Forbidden errors later. A permission given in a namespace on a
// resource that the server's discovery shows cluster-scoped (nodes, a
// cluster-scoped custom resource; with the group "*", in any group) is
// checked at the cluster scope, as its requests are: a RoleBinding in the
// namespace cannot grant it, a ClusterRoleBinding can. Get, update, patch and delete of namespaces stay
// checked in the namespace: the API server makes those requests about the
// namespace itself in it, so a RoleBinding there grants them. The error is
// one line: the server cannot be reached (or rejects the credentials),
// every missing permission at once ("missing permissions: create events in
// namespace "demo"; list nodes (cluster-scoped)"), or the resource not
// served. A nil restConfig is an error too.
func Preflight(ctx context.Context, restConfig *rest.Config, config PreflightConfig) error {
	if restConfig == nil {
		return errors.New("no rest.Config to check (nil)")
	}
	cfg := rest.CopyConfig(restConfig)
	cfg.Timeout = 15 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("cannot build a client for %s: %s", cfg.Host, oneLine(err))
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		return reachError(cfg.Host, err)
	}
	clusterScoped := clusterScopedResources(client.Discovery(), config.Permissions)
	var missing []string
	for _, p := range config.Permissions {
		scoped := p.Namespace != "" && clusterScopedIn(clusterScoped, p.Group, p.Resource) && !ownNamespace(p)
		if scoped {
			p.Namespace = "" // as its requests are: a RoleBinding cannot grant it
		}
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: p.Namespace, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Name: p.Name,
			},
		}}
		res, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return reachError(cfg.Host, err)
		}
		switch {
		case res.Status.Allowed:
		case scoped:
			missing = append(missing, strings.TrimSuffix(p.String(), " in all namespaces")+" (cluster-scoped)")
		default:
			missing = append(missing, p.String())
		}
	}
	switch {
	case len(missing) == 1:
		return fmt.Errorf("missing permission: %s", missing[0])
	case len(missing) > 1:
		return fmt.Errorf("missing permissions: %s", strings.Join(missing, "; "))
	case config.Served.Empty():
		return nil
	}
	switch r, err := servedResource(client.Discovery(), config.Served); {
	case err != nil:
		return reachError(cfg.Host, err)
	case r == nil:
		return fmt.Errorf("the API server at %s does not serve %s: install its CRD", cfg.Host, config.Served.GroupResource())
	}
	return nil
}

// clusterScopedIn reports whether scoped (clusterScopedResources) holds
// resource in group or, for the group "*" (every group, as RBAC reads
// it), in any group: a rule of every group grants the requests on the
// cluster-scoped one too.
func clusterScopedIn(scoped map[schema.GroupResource]bool, group, resource string) bool {
	if group != rbacv1.APIGroupAll {
		return scoped[schema.GroupResource{Group: group, Resource: resource}]
	}
	for gr := range scoped {
		if gr.Resource == resource {
			return true
		}
	}
	return false
}

// ownNamespace reports whether p is a request about the namespace
// p.Namespace itself (get, update, patch or delete of it, or of its
// subresources): the API server makes those in that namespace, so a
// RoleBinding there grants them, unlike the other requests on the
// cluster-scoped namespaces resource (list, watch, create).
func ownNamespace(p Permission) bool {
	switch p.Verb {
	case "get", "update", "patch", "delete":
		return (p.Group == "" || p.Group == rbacv1.APIGroupAll) && p.Resource == "namespaces" && (p.Name == "" || p.Name == p.Namespace)
	}
	return false
}

// clusterScopedResources returns the resources that the API server's
// discovery shows cluster-scoped (in any version of their group); nil when
// perms give none in a namespace. Resources it does not serve (a CRD not
// installed), and those of groups whose discovery failed (an aggregated
// API that is down), are not among them: their permissions are checked
// where they are given, and a server that cannot be reached fails the
// access reviews that follow.
func clusterScopedResources(d discovery.DiscoveryInterface, perms []Permission) map[schema.GroupResource]bool {
	if !slices.ContainsFunc(perms, func(p Permission) bool { return p.Namespace != "" }) {
		return nil
	}
	_, lists, _ := d.ServerGroupsAndResources() // what it found, even with an error
	scoped := map[schema.GroupResource]bool{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if !r.Namespaced && !strings.Contains(r.Name, "/") {
				scoped[schema.GroupResource{Group: gv.Group, Resource: r.Name}] = true
			}
		}
	}
	return scoped
}

// servedResource returns the API server's discovery entry of gvr: nil, and
// no error, when the server does not serve it (its group version unknown,
// a CRD not installed).
func servedResource(d discovery.DiscoveryInterface, gvr schema.GroupVersionResource) (*metav1.APIResource, error) {
	list, err := d.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for i := range list.APIResources {
		if list.APIResources[i].Name == gvr.Resource {
			return &list.APIResources[i], nil
		}
	}
	return nil, nil
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
