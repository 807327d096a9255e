package reliability

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/config"
	"github.com/operatorkit/operatorkit/example/webapp"
	"github.com/operatorkit/operatorkit/operator"
)

// forbiddenRequests records the requests that the API server answered with
// 403 Forbidden.
type forbiddenRequests struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []string
}

func (f *forbiddenRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := f.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusForbidden {
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
	}
	return resp, err
}

func (f *forbiddenRequests) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// TestPreflightGetOfReconciledObjects: the operator reads a WebApp with a
// GET (deleted before its first reconciliation, it is a tombstone, read
// to tell a deletion from an object that left the informer's selection),
// so an identity whose role lacks get on WebApps must fail Preflight
// (operator.Permissions of the shipped role) naming it, rather than pass
// it and then be refused, retried with backoff for ever.
func TestPreflightGetOfReconciledObjects(t *testing.T) {
	c := admin(t)
	ns := newNamespace(t)
	_, cfg, _ := operatorIdentity(t, ns, func(r *rbacv1.ClusterRole) {
		for i, rule := range r.Rules {
			if slices.Contains(rule.Resources, "webapps") {
				r.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == "get" })
			}
		}
	})
	role, err := config.ClusterRole()
	if err != nil {
		t.Fatal(err)
	}
	perms := operator.Permissions(role.Rules, operator.Options{}, operator.FrameworkOptions{Namespace: ns})
	err = operator.Preflight(t.Context(), cfg, operator.PreflightConfig{Permissions: perms, Served: v1alpha1.GroupVersionResource})
	if err != nil {
		if want := `get webapps.example.operatorkit.io in namespace "` + ns + `"`; !strings.Contains(err.Error(), want) {
			t.Fatalf("Preflight() = %v, want it to name %s", err, want)
		}
		return
	}

	// Preflight passed: the operator must then never be refused. A WebApp
	// held by a finalizer of someone else's and deleted before the
	// operator starts gets no finalizer of the operator's: when it goes,
	// the operator sees a tombstone.
	held := newWebApp(ns, "held", "nginx:1.27", "hello")
	held.Finalizers = []string{"example.com/hold"}
	createWebApp(t, c, held)
	if err := c.webapps(ns).Delete(t.Context(), "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createWebApp(t, c, newWebApp(ns, siteName(0), "nginx:1.27", "hello"))
	forbidden := &forbiddenRequests{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { forbidden.next = rt; return forbidden })
	op := startInProcess(t, cfg, ns, 2)
	waitReady(t, c, ns, sites(0, 1), 90*time.Second)
	if _, err := c.webapps(ns).Patch(t.Context(), "held", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The tombstone's reconciliation, and its retries, if refused.
	before := op.reconciles(t, "")
	poll(t, "the tombstone's reconciliation", func(context.Context) (bool, error) {
		return op.reconciles(t, "") > before, nil
	})
	if reqs := forbidden.list(); len(reqs) > 0 {
		t.Fatalf("Preflight passed, then the operator was refused %d requests: %v", len(reqs), reqs)
	}
}

// TestPreflightLeaseByName: a role that grants get and update on the
// leader election Lease by its name alone (resourceNames, the least
// privilege that leader election needs: it reads and renews that one
// Lease, and create cannot be restricted by name) must pass Preflight, as
// the operator runs under it without a single 403.
func TestPreflightLeaseByName(t *testing.T) {
	c := admin(t)
	ns := newNamespace(t)
	const id = "webapp-lease"
	user, cfg, _ := operatorIdentity(t, ns, func(r *rbacv1.ClusterRole) {
		r.Rules = slices.DeleteFunc(r.Rules, func(rule rbacv1.PolicyRule) bool { return slices.Contains(rule.Resources, "leases") })
	})
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "leader-election", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{id}, Verbs: []string{"get", "update"}},
	}}
	if _, err := c.kube.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "leader-election", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if _, err := c.kube.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	shipped, err := config.ClusterRole()
	if err != nil {
		t.Fatal(err)
	}
	opts := operator.Options{LeaderElect: true, LeaderElectionNamespace: ns, LeaderElectionID: id}
	fopts := operator.FrameworkOptions{Namespace: ns, Workers: 2}
	perms := operator.Permissions(shipped.Rules, opts, fopts)
	// Until the authorizer's cache knows the Role's binding: then a get of
	// the Lease (not created yet) is not found rather than forbidden.
	uc := kubernetes.NewForConfigOrDie(cfg)
	poll(t, "the Lease's role binding to take effect", func(ctx context.Context) (bool, error) {
		_, err := uc.CoordinationV1().Leases(ns).Get(ctx, id, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err := operator.Preflight(t.Context(), cfg, operator.PreflightConfig{Permissions: perms, Served: v1alpha1.GroupVersionResource}); err != nil {
		t.Fatalf("Preflight() = %v, want nil: the identity may do all that the operator does", err)
	}

	forbidden := &forbiddenRequests{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { forbidden.next = rt; return forbidden })
	rt, err := operator.New(opts.Config(webapp.DefaultName, cfg, log.NewNopLogger()))
	if err != nil {
		t.Fatal(err)
	}
	op, err := webapp.New(webapp.Config{Operator: rt, Options: fopts})
	if err != nil {
		t.Fatal(err)
	}
	createWebApp(t, c, newWebApp(ns, siteName(0), "nginx:1.27", "hello"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	select {
	case <-op.Booted():
	case err := <-done:
		cancel()
		t.Fatalf("Run returned before booting: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("the operator did not lead and boot within 60s")
	}
	waitReady(t, c, ns, sites(0, 1), 90*time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run() = %v, want nil", err)
	}
	if reqs := forbidden.list(); len(reqs) > 0 {
		t.Fatalf("the operator was refused %d requests: %v", len(reqs), reqs)
	}
}
