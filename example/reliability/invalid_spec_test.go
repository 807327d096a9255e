package reliability

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/webapp"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/trace"
)

// TestInvalidSpecStalled: one WebApp in five has a spec the operator cannot
// use (an image that is not an image reference, or a name that cannot name
// a Service), among 50. The operator, under its shipped ClusterRole, sets
// their Stalled condition (reason InvalidSpec) and records a Warning event,
// both saying why; it does not crash, the others converge, and it does not
// retry the invalid ones until they change (reconciliations counted: at most
// two each, none during a quiet window). Fixing one recovers it.
func TestInvalidSpecStalled(t *testing.T) {
	c := admin(t)
	ns := newNamespace(t)
	_, cfg, _ := operatorIdentity(t, ns, nil)

	var valid []string
	invalid := map[string]string{} // name -> what the condition and event must say
	for i := range n {
		name, image := siteName(i), "nginx:1.27"
		switch i % 10 {
		case 0:
			image = fmt.Sprintf("Not A Valid Image %d", i)
			invalid[name] = "is not a valid image reference"
		case 5:
			name = fmt.Sprintf("%d-site", i)
			invalid[name] = "cannot name a Service"
		default:
			valid = append(valid, name)
		}
		createWebApp(t, c, newWebApp(ns, name, image, "hello"))
	}
	op := startInProcess(t, cfg, ns, 2)
	waitReady(t, c, ns, valid, 90*time.Second)

	for name, why := range invalid {
		poll(t, name+" Stalled with reason InvalidSpec", func(ctx context.Context) (bool, error) {
			u, err := c.webapps(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			w, err := v1alpha1.FromUnstructured(u)
			if err != nil {
				return false, err
			}
			s := meta.FindStatusCondition(w.Status.Conditions, v1alpha1.ConditionStalled)
			r := meta.FindStatusCondition(w.Status.Conditions, v1alpha1.ConditionReady)
			return s != nil && s.Status == metav1.ConditionTrue && s.Reason == webapp.ReasonInvalidSpec && strings.Contains(s.Message, why) &&
				r != nil && r.Status == metav1.ConditionFalse && r.Reason == webapp.ReasonInvalidSpec, nil
		})
		poll(t, "a Warning event saying why "+name+" is invalid", func(ctx context.Context) (bool, error) {
			evs, err := c.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, why) {
					return true, nil
				}
			}
			return false, nil
		})
	}

	// Not retried until it changes: a quiet window with no reconciliation,
	// and at most two per invalid WebApp in all (its creation, and the
	// status write's echo at most).
	quiet(t, op, 2*time.Second)
	for name := range invalid {
		trs := op.Framework().Traces(ns + "/" + name)
		if n := trace.Reconciliations(trs); n == 0 || n > 2 {
			t.Errorf("%s: %d reconciliations, want 1 or 2 (not retried with backoff)", name, n)
			continue
		}
		if last := trs[len(trs)-1]; last.Result != framework.ResultPermanent {
			t.Errorf("%s: last result %q, want %q", name, last.Result, framework.ResultPermanent)
		}
	}
	if got := op.reconciles(t, framework.ResultPermanent); got > 2*len(invalid) {
		t.Errorf("reconciliations_total{result=permanent_error} = %d, want at most %d", got, 2*len(invalid))
	}
	if s := op.requests.Snapshot(); s.ByCode[403] != 0 {
		t.Errorf("%d forbidden requests under the shipped role", s.ByCode[403])
	}

	// Fixing the spec recovers the WebApp.
	fixed := siteName(0)
	patchWebApp(t, c, ns, fixed, `{"spec":{"image":"nginx:1.27"}}`)
	waitReady(t, c, ns, []string{fixed}, 60*time.Second)
	t.Logf("%d reconciliations in all (%d permanent errors), requests %s", op.reconciles(t, ""), op.reconciles(t, framework.ResultPermanent), op.requests.Snapshot())
}

// quiet fails when the operator reconciles anything during window.
func quiet(t *testing.T, op *inProcess, window time.Duration) {
	t.Helper()
	// Let the operator finish the echoes of its last writes first (no
	// reconciliation for half a second); one that spins never settles.
	last, since := op.reconciles(t, ""), time.Now()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if n := op.reconciles(t, ""); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 500*time.Millisecond, nil
	}); err != nil {
		t.Errorf("operator did not settle within 30s (%d reconciliations so far): it spins", last)
		return
	}
	before := op.reconciles(t, "")
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, window, false, func(context.Context) (bool, error) {
		if now := op.reconciles(t, ""); now != before {
			return false, fmt.Errorf("%d reconciliations", now-before)
		}
		return false, nil
	})
	if err != nil && !strings.Contains(err.Error(), context.DeadlineExceeded.Error()) {
		t.Errorf("operator not quiet for %s: %v", window, err)
	}
}
