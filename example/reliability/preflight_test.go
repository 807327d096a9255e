package reliability

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/config"
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
