package reliability

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/framework"
)

// TestLeastPrivilegeForbiddenVerb: the operator runs in-process as a user
// bound to the shipped ClusterRole only (example/config/rbac/role.yaml) and
// converges 50 WebApps without a single 403. Then "patch" on Deployments is
// taken out of the role and ten WebApps change their image: each shows the
// API server's error, naming the verb and resource, in its Ready and
// Reconciling conditions and the operator's error log; the failures are retried with
// backoff, not in a hot loop (failed reconciliations per WebApp within the
// window are bounded by the framework's backoff, requests per failed
// reconciliation by the retry wrapper's attempts). Putting the verb back
// lets them converge.
func TestLeastPrivilegeForbiddenVerb(t *testing.T) {
	c := admin(t)
	ns := newNamespace(t)
	user, cfg, roleName := operatorIdentity(t, ns, nil)
	createSites(t, c, ns, "hello")
	op := startInProcess(t, cfg, ns, 2)
	waitReady(t, c, ns, sites(0, n), 90*time.Second)
	if s := op.requests.Snapshot(); s.ByCode[403] != 0 {
		t.Fatalf("under the shipped role: %d forbidden requests (%s)", s.ByCode[403], s)
	}

	setDeploymentPatch(t, roleName, false)
	waitAllowed(t, user, ns, false)
	before, failed0 := op.requests.Snapshot(), op.reconciles(t, framework.ResultError)
	start := time.Now()
	changed := sites(0, 10)
	for _, name := range changed {
		patchWebApp(t, c, ns, name, `{"spec":{"image":"nginx:1.28"}}`)
	}
	const want = `cannot patch resource "deployments" in API group "apps"`
	for _, name := range changed {
		poll(t, name+" Reconciling and not Ready with the forbidden error", func(ctx context.Context) (bool, error) {
			u, err := c.webapps(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			w, err := v1alpha1.FromUnstructured(u)
			if err != nil {
				return false, err
			}
			rc := meta.FindStatusCondition(w.Status.Conditions, v1alpha1.ConditionReconciling)
			r := meta.FindStatusCondition(w.Status.Conditions, v1alpha1.ConditionReady)
			return rc != nil && rc.Status == metav1.ConditionTrue && strings.Contains(rc.Message, want) &&
				r != nil && r.Status == metav1.ConditionFalse && strings.HasPrefix(r.Reason, "Deployment") && strings.Contains(r.Message, want), nil
		})
	}
	// A fixed window from the fault on.
	const window = 8 * time.Second
	poll(t, "the end of the observation window", func(context.Context) (bool, error) { return time.Since(start) >= window, nil })
	failed := op.reconciles(t, framework.ResultError) - failed0
	reqs := op.requests.Snapshot().Sub(before)
	// One more per WebApp for slack (a second event, such as the status
	// write's echo, that runs it before its backoff ends).
	bound := (attemptsWithin(time.Since(start), 40*time.Millisecond) + 1) * len(changed)
	if failed == 0 || failed > bound {
		t.Errorf("%d failed reconciliations of %d WebApps in %s, want 1..%d (the framework's backoff)", failed, len(changed), time.Since(start).Round(time.Millisecond), bound)
	}
	// Per failed reconciliation: the retry wrapper's 4 patch attempts, the
	// status patch, the event, plus reads; a hot loop inside a
	// reconciliation would show here.
	if perReconcile := float64(reqs.Total) / float64(max(failed, 1)); perReconcile > 10 {
		t.Errorf("%.1f requests per failed reconciliation (%s), want at most 10", perReconcile, reqs)
	}
	if reqs.ByCode[403] == 0 {
		t.Errorf("no forbidden request in the window: %s", reqs)
	}
	logs := op.logs.String()
	if !strings.Contains(logs, "level=error") || !strings.Contains(logs, strings.ReplaceAll(want, `"`, `\"`)) {
		t.Errorf("the operator's error log does not name the forbidden verb and resource")
	}
	t.Logf("forbidden: %d failed reconciliations of %d WebApps in %s; requests %s", failed, len(changed), window, reqs)

	setDeploymentPatch(t, roleName, true)
	waitAllowed(t, user, ns, true)
	got := waitReady(t, c, ns, sites(0, n), 90*time.Second)
	for _, name := range changed {
		if got[name].Spec.Image != "nginx:1.28" {
			t.Errorf("%s: image %s", name, got[name].Spec.Image)
		}
	}
}

// attemptsWithin is how many attempts an object can make in d when failed
// attempts are spaced by a backoff starting at initial and doubling (the
// framework's DefaultRequeueBackOff is 50ms doubling with 20% jitter, so
// its intervals are at least 40ms, 80ms, ...), even if every attempt took
// no time.
func attemptsWithin(d, initial time.Duration) int {
	k, sum, next := 1, time.Duration(0), initial
	for sum+next <= d {
		sum += next
		k++
		next *= 2
	}
	return k
}

// setDeploymentPatch grants or takes away "patch" on Deployments in the
// ClusterRole name.
func setDeploymentPatch(t *testing.T, name string, allowed bool) {
	t.Helper()
	kc := admin(t).kube
	role, err := kc.RbacV1().ClusterRoles().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i, r := range role.Rules {
		if !slices.Contains(r.APIGroups, "apps") || !slices.Contains(r.Resources, "deployments") {
			continue
		}
		found = true
		verbs := slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "patch" })
		if allowed {
			verbs = append(verbs, "patch")
		}
		role.Rules[i] = rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: verbs}
	}
	if !found {
		t.Fatalf("role %s has no rule for deployments", name)
	}
	if _, err := kc.RbacV1().ClusterRoles().Update(t.Context(), role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAllowed waits until the authorizer answers allowed for user patching
// Deployments in ns.
func waitAllowed(t *testing.T, user, ns string, allowed bool) {
	t.Helper()
	kc := admin(t).kube
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar, err := kc.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Group: "apps", Resource: "deployments"},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return sar.Status.Allowed == allowed, nil
	})
	if err != nil {
		t.Fatalf("waiting for patch deployments allowed=%v for %s: %v", allowed, user, err)
	}
}
