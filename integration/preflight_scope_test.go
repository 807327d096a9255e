package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/testenv"
)

// TestPreflightClusterScopedRuleUnderARoleBinding: an operator run in one
// namespace (FrameworkOptions.Namespace) whose ClusterRole has a rule on a
// cluster-scoped resource (here: list nodes) needs that rule bound at the
// cluster scope: under a RoleBinding in the namespace, its list of nodes
// is refused. Preflight checked the rule in the namespace, which the
// RoleBinding grants, and passed; it checks it at the cluster scope now,
// which discovery tells, and fails naming it, and passes under a
// ClusterRoleBinding.
func TestPreflightClusterScopedRuleUnderARoleBinding(t *testing.T) {
	t.Parallel()
	const ns = "scoped"
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}},
	}
	cfg, uc, bindCluster := boundInNamespace(t, ns, "scoped-operator", rules)
	poll(t, "the role binding to take effect", func(ctx context.Context) (bool, error) {
		_, err := uc.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	// What the operator would meet: its list of nodes is refused.
	if _, err := uc.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{Limit: 1}); !apierrors.IsForbidden(err) {
		t.Fatalf("list nodes under a RoleBinding = %v, want Forbidden", err)
	}
	perms := operatorpkg.Permissions(rules, operatorpkg.Options{}, operatorpkg.FrameworkOptions{Namespace: ns})
	err := operatorpkg.Preflight(t.Context(), cfg, operatorpkg.PreflightConfig{Permissions: perms})
	if err == nil || !strings.Contains(err.Error(), "list nodes (cluster-scoped)") || strings.Contains(err.Error(), "configmaps") {
		t.Fatalf("Preflight() under a RoleBinding = %v, want the one missing permission list nodes (cluster-scoped)", err)
	}

	bindCluster()
	poll(t, "the cluster role binding to take effect", func(ctx context.Context) (bool, error) {
		_, err := uc.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err := operatorpkg.Preflight(t.Context(), cfg, operatorpkg.PreflightConfig{Permissions: perms}); err != nil {
		t.Fatalf("Preflight() under a ClusterRoleBinding = %v, want nil", err)
	}
}

// TestPreflightOwnNamespaceUnderARoleBinding: the namespaces resource is
// cluster-scoped, but a request about one namespace by name (get, update,
// patch, delete of namespace ns) is made in that namespace, so a
// RoleBinding in ns grants it: an operator run in ns that reads its own
// namespace needs no ClusterRoleBinding. Preflight checked the rule at the
// cluster scope and failed with "get namespaces (cluster-scoped)"; it
// checks it in the namespace now, as its request is made, and still fails
// on a list of namespaces, which no RoleBinding grants.
func TestPreflightOwnNamespaceUnderARoleBinding(t *testing.T) {
	t.Parallel()
	const ns = "own-namespace"
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
	}
	cfg, uc, _ := boundInNamespace(t, ns, "own-namespace-operator", rules)
	// What the operator does, allowed by the RoleBinding alone.
	poll(t, "the role binding to take effect", func(ctx context.Context) (bool, error) {
		_, err := uc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil, nil
	})
	perms := operatorpkg.Permissions(rules, operatorpkg.Options{}, operatorpkg.FrameworkOptions{Namespace: ns})
	if err := operatorpkg.Preflight(t.Context(), cfg, operatorpkg.PreflightConfig{Permissions: perms}); err != nil {
		t.Fatalf("Preflight() of get namespaces under a RoleBinding = %v, want nil: the operator can get its namespace", err)
	}

	// A list of namespaces is made at the cluster scope: refused, and named.
	if _, err := uc.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{Limit: 1}); !apierrors.IsForbidden(err) {
		t.Fatalf("list namespaces under a RoleBinding = %v, want Forbidden", err)
	}
	list := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list"}}}
	perms = operatorpkg.Permissions(list, operatorpkg.Options{}, operatorpkg.FrameworkOptions{Namespace: ns})
	err := operatorpkg.Preflight(t.Context(), cfg, operatorpkg.PreflightConfig{Permissions: perms})
	if err == nil || err.Error() != "missing permission: list namespaces (cluster-scoped)" {
		t.Fatalf("Preflight() of get and list namespaces under a RoleBinding = %v, want the one missing permission list namespaces (cluster-scoped)", err)
	}
}

// boundInNamespace starts an API server with RBAC, creates the namespace
// ns, a ClusterRole name of rules, and binds it to the user name with a
// RoleBinding in ns: an operator run in ns under the least a cluster admin
// would grant. It returns the user's config and clientset, and bindCluster,
// which binds the role with a ClusterRoleBinding too.
func boundInNamespace(t *testing.T, ns, name string, rules []rbacv1.PolicyRule) (cfg *rest.Config, uc kubernetes.Interface, bindCluster func()) {
	t.Helper()
	own := testenv.New(t, testenv.Options{RBAC: true})
	admin := kubernetes.NewForConfigOrDie(own.Config())
	createNamespace(t, admin, ns)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := own.UserConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	bindCluster = func() {
		t.Helper()
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return cfg, kubernetes.NewForConfigOrDie(cfg), bindCluster
}

// TestPreflightWildcardRules: RBAC reads a verb (resource, API group) "*"
// as every one, and a SelfSubjectAccessReview of "*" as every one too, so
// Preflight of an operator whose ClusterRole says verbs ["*"] passes for an
// identity that holds "*" and names "* configmaps" for one that can only
// read them. A dry run (the plan command) needs only get, list and watch,
// which "*" grants: Permissions kept only the verbs spelled so, and
// Preflight of a dry run checked nothing of the rule, passing for an
// identity that cannot even list the configmaps; it checks get, list and
// watch now.
func TestPreflightWildcardRules(t *testing.T) {
	t.Parallel()
	const ns = "wildcards"
	declared := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}}
	own := testenv.New(t, testenv.Options{RBAC: true})
	admin := kubernetes.NewForConfigOrDie(own.Config())
	createNamespace(t, admin, ns)
	// user binds rules to the user name with a RoleBinding in ns and
	// returns its config once its first request of check is allowed.
	user := func(name string, rules []rbacv1.PolicyRule, check func(context.Context, kubernetes.Interface) error) *rest.Config {
		t.Helper()
		if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}},
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cfg, err := own.UserConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		uc := kubernetes.NewForConfigOrDie(cfg)
		poll(t, "the role binding of "+name+" to take effect", func(ctx context.Context) (bool, error) {
			return check(ctx, uc) == nil, nil
		})
		return cfg
	}
	listConfigMaps := func(ctx context.Context, uc kubernetes.Interface) error {
		_, err := uc.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}
	listSecrets := func(ctx context.Context, uc kubernetes.Interface) error {
		_, err := uc.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}
	read := []string{"get", "list", "watch"}
	everything := user("wildcard-all", []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}, listConfigMaps)
	reader := user("wildcard-reader", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: read}}, listConfigMaps)
	other := user("wildcard-other", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: read}}, listSecrets)
	// What a plan of other would meet: its list of configmaps is refused.
	if err := listConfigMaps(t.Context(), kubernetes.NewForConfigOrDie(other)); !apierrors.IsForbidden(err) {
		t.Fatalf("list configmaps of a reader of secrets = %v, want Forbidden", err)
	}

	run := operatorpkg.Permissions(declared, operatorpkg.Options{}, operatorpkg.FrameworkOptions{Namespace: ns})
	plan := operatorpkg.Permissions(declared, operatorpkg.Options{}, operatorpkg.FrameworkOptions{Namespace: ns, DryRun: true})
	tests := []struct {
		name  string
		cfg   *rest.Config
		perms []operatorpkg.Permission
		want  string // "" for nil
	}{
		{name: "run, * on * of *", cfg: everything, perms: run},
		{name: "run, a reader", cfg: reader, perms: run, want: `missing permission: * configmaps in namespace "wildcards"`},
		{name: "dry run, * on * of *", cfg: everything, perms: plan},
		{name: "dry run, a reader", cfg: reader, perms: plan},
		{name: "dry run, a reader of secrets", cfg: other, perms: plan,
			want: `missing permissions: get configmaps in namespace "wildcards"; list configmaps in namespace "wildcards"; watch configmaps in namespace "wildcards"`},
	}
	for _, tt := range tests {
		err := operatorpkg.Preflight(t.Context(), tt.cfg, operatorpkg.PreflightConfig{Permissions: tt.perms})
		if got := fmt.Sprint(err); tt.want == "" && err != nil || tt.want != "" && got != tt.want {
			t.Errorf("%s: Preflight() = %v, want %q (empty: nil)", tt.name, err, tt.want)
		}
	}
}

// TestPreflightEveryGroupOfAClusterScopedResource: a rule of apiGroups
// ["*"] on nodes grants the list of nodes, a cluster-scoped resource,
// which a RoleBinding in the operator's namespace cannot grant. Preflight
// looked up the group "*" in discovery, found no resource of that group
// cluster-scoped, checked the rule in the namespace, which the RoleBinding
// grants, and passed; it checks it at the cluster scope now, as it does
// for the rule of the core group. A get of the operator's own namespace
// under a rule of every group stays checked in the namespace.
func TestPreflightEveryGroupOfAClusterScopedResource(t *testing.T) {
	t.Parallel()
	const ns = "every-group"
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"*"}, Resources: []string{"configmaps", "namespaces"}, Verbs: []string{"get"}},
		{APIGroups: []string{"*"}, Resources: []string{"nodes"}, Verbs: []string{"list"}},
	}
	cfg, uc, bindCluster := boundInNamespace(t, ns, "every-group-operator", rules)
	poll(t, "the role binding to take effect", func(ctx context.Context) (bool, error) {
		_, err := uc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil, nil
	})
	// What the operator would meet: its list of nodes is refused.
	if _, err := uc.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{Limit: 1}); !apierrors.IsForbidden(err) {
		t.Fatalf("list nodes under a RoleBinding = %v, want Forbidden", err)
	}
	perms := operatorpkg.Permissions(rules, operatorpkg.Options{}, operatorpkg.FrameworkOptions{Namespace: ns})
	err := operatorpkg.Preflight(t.Context(), cfg, operatorpkg.PreflightConfig{Permissions: perms})
	if want := "missing permission: list nodes.* (cluster-scoped)"; err == nil || err.Error() != want {
		t.Fatalf("Preflight() under a RoleBinding = %v, want %q", err, want)
	}

	bindCluster()
	poll(t, "the cluster role binding to take effect", func(ctx context.Context) (bool, error) {
		_, err := uc.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err := operatorpkg.Preflight(t.Context(), cfg, operatorpkg.PreflightConfig{Permissions: perms}); err != nil {
		t.Fatalf("Preflight() under a ClusterRoleBinding = %v, want nil", err)
	}
}
