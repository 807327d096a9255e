package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/requestcount"
)

// TestNamespaceDefaultsOperator runs the namespace-defaults operator
// (nsdefaults_operator_test.go) against the real API server: labelled
// Namespaces get their quota, limits, network policy and (with the
// annotation) RoleBinding, sized by their profile; a new profile value, a
// change of the profiles ConfigMap, an annotation added or removed, manual
// edits (a quota raised, the network policy opened to every Namespace) and
// manual deletes are followed; a profile the ConfigMap lacks fails, and
// is applied once the ConfigMap has it; an unlabelled Namespace
// gets nothing and one whose label is removed loses everything; a steady
// operator neither loops nor writes; and a Namespace deleted as the
// namespace controller deletes one goes, without the operator holding it
// or logging an error for it.
func TestNamespaceDefaultsOperator(t *testing.T) {
	t.Parallel()
	opNS := newNamespace(t)
	kube := kubeClient(t)
	profiles := func(largePods string) map[string]string {
		return map[string]string{
			"small": `{"pods":"10","cpu":"2","memory":"4Gi","defaultCPU":"100m","defaultMemory":"128Mi"}`,
			"large": `{"pods":"` + largePods + `","cpu":"16","memory":"64Gi","defaultCPU":"500m","defaultMemory":"512Mi"}`,
		}
	}
	_, err := kube.CoreV1().ConfigMaps(opNS).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: nsProfiles}, Data: profiles("50")}, metav1.CreateOptions{})
	must(t, err)
	logs := &syncBuffer{}
	reg, counter := prometheus.NewRegistry(), requestcount.New()
	runNSDefaultsOperator(t, operatorpkg.Config{Name: nsDefaultsOperator, RESTConfig: counter.Wrap(env.Config()), Logger: log.NewLogfmtLogger(logs), Registry: reg}, opNS, time.Second)

	eventually := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	n := nsCounter.Add(1)
	a, b, c := fmt.Sprintf("nsdefaults-%d-a", n), fmt.Sprintf("nsdefaults-%d-b", n), fmt.Sprintf("nsdefaults-%d-c", n)
	t.Cleanup(func() {
		if t.Failed() {
			for _, line := range strings.Split(logs.String(), "\n") {
				if !strings.Contains(line, "msg=reconciled") || strings.Contains(line, "nsdefaults-") {
					t.Log(line)
				}
			}
		}
	})
	createNS := func(name string, labels, annotations map[string]string) {
		t.Helper()
		_, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}, metav1.CreateOptions{})
		must(t, err)
	}
	patchNS := func(name, patch string) {
		t.Helper()
		_, err := kube.CoreV1().Namespaces().Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		must(t, err)
	}
	// sized waits until ns has the quota and limits of pods pods and
	// defaultCPU, and its network policy.
	sized := func(ns, pods, defaultCPU string) {
		t.Helper()
		eventually(ns+"'s defaults sized for "+pods+" pods", func(ctx context.Context) (bool, error) {
			q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, nsDefaults, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			} else if err != nil {
				return false, err
			}
			lr, err := kube.CoreV1().LimitRanges(ns).Get(ctx, nsDefaults, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			} else if err != nil {
				return false, err
			}
			if _, err := kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, nsDefaults, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return false, nil
			} else if err != nil {
				return false, err
			}
			qp, want := q.Spec.Hard[corev1.ResourcePods], resource.MustParse(pods)
			cpu, wantCPU := lr.Spec.Limits[0].Default[corev1.ResourceCPU], resource.MustParse(defaultCPU)
			return qp.Cmp(want) == 0 && cpu.Cmp(wantCPU) == 0, nil
		})
	}
	// admins waits until ns's RoleBinding names group ("": no RoleBinding).
	admins := func(ns, group string) {
		t.Helper()
		eventually(ns+"'s RoleBinding of "+group, func(ctx context.Context) (bool, error) {
			rb, err := kube.RbacV1().RoleBindings(ns).Get(ctx, nsDefaults, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return group == "", nil
			} else if err != nil {
				return false, err
			}
			return group != "" && len(rb.Subjects) == 1 && rb.Subjects[0].Name == group && rb.RoleRef.Name == "admin", nil
		})
	}
	// none waits until ns has no child of the operator.
	none := func(ns string) {
		t.Helper()
		eventually(ns+" without defaults", func(ctx context.Context) (bool, error) {
			opts := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=" + nsDefaultsOperator}
			q, err1 := kube.CoreV1().ResourceQuotas(ns).List(ctx, opts)
			lr, err2 := kube.CoreV1().LimitRanges(ns).List(ctx, opts)
			np, err3 := kube.NetworkingV1().NetworkPolicies(ns).List(ctx, opts)
			rb, err4 := kube.RbacV1().RoleBindings(ns).List(ctx, opts)
			if err := errors.Join(err1, err2, err3, err4); err != nil {
				return false, err
			}
			return len(q.Items)+len(lr.Items)+len(np.Items)+len(rb.Items) == 0, nil
		})
	}

	createNS(a, map[string]string{nsProfileLabel: "small"}, map[string]string{nsAdminsAnnotation: "team-a"})
	createNS(b, map[string]string{nsProfileLabel: "large"}, nil)
	createNS(c, nil, nil)
	sized(a, "10", "100m")
	admins(a, "team-a")
	sized(b, "50", "500m")
	admins(b, "")
	none(c)

	// The annotation: removed, added, changed.
	patchNS(a, `{"metadata":{"annotations":{"`+nsAdminsAnnotation+`":null}}}`)
	admins(a, "")
	patchNS(b, `{"metadata":{"annotations":{"`+nsAdminsAnnotation+`":"team-b"}}}`)
	admins(b, "team-b")
	patchNS(b, `{"metadata":{"annotations":{"`+nsAdminsAnnotation+`":"team-b2"}}}`)
	admins(b, "team-b2")

	// A new profile value re-sizes; a change of the profiles re-applies
	// to every Namespace of the profile.
	patchNS(a, `{"metadata":{"labels":{"`+nsProfileLabel+`":"large"}}}`)
	sized(a, "50", "500m")
	// A profile the ConfigMap does not have: a permanent error, logged,
	// and nothing made, until the ConfigMap has it.
	d := fmt.Sprintf("nsdefaults-%d-d", n)
	createNS(d, map[string]string{nsProfileLabel: "medium"}, nil)
	eventually(d+"'s error", func(context.Context) (bool, error) {
		return strings.Contains(logs.String(), "object="+d+` msg="reconciliation failed" result=permanent_error`), nil
	})
	none(d)
	cm, err := kube.CoreV1().ConfigMaps(opNS).Get(t.Context(), nsProfiles, metav1.GetOptions{})
	must(t, err)
	cm.Data = profiles("60")
	cm.Data["medium"] = `{"pods":"20","cpu":"4","memory":"8Gi","defaultCPU":"200m","defaultMemory":"256Mi"}`
	_, err = kube.CoreV1().ConfigMaps(opNS).Update(t.Context(), cm, metav1.UpdateOptions{})
	must(t, err)
	sized(a, "60", "500m")
	sized(b, "60", "500m")
	sized(d, "20", "200m")

	// A manual edit is reverted; a child deleted by hand comes back.
	_, err = kube.CoreV1().ResourceQuotas(b).Patch(t.Context(), nsDefaults, types.MergePatchType, []byte(`{"spec":{"hard":{"pods":"1000"}}}`), metav1.PatchOptions{})
	must(t, err)
	sized(b, "60", "500m")
	// A peer of every Namespace instead of the Namespace's own pods.
	_, err = kube.NetworkingV1().NetworkPolicies(b).Patch(t.Context(), nsDefaults, types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/ingress/0/from/0","value":{"namespaceSelector":{}}}]`), metav1.PatchOptions{})
	must(t, err)
	eventually(b+"'s NetworkPolicy reverted", func(ctx context.Context) (bool, error) {
		np, err := kube.NetworkingV1().NetworkPolicies(b).Get(ctx, nsDefaults, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		from := np.Spec.Ingress[0].From[0]
		return from.PodSelector != nil && from.NamespaceSelector == nil, nil
	})
	must(t, kube.NetworkingV1().NetworkPolicies(b).Delete(t.Context(), nsDefaults, metav1.DeleteOptions{}))
	must(t, kube.RbacV1().RoleBindings(b).Delete(t.Context(), nsDefaults, metav1.DeleteOptions{}))
	sized(b, "60", "500m")
	admins(b, "team-b2")

	// Steady: over 4 s, every Namespace resynced each second, a handful of
	// reconciliations of these Namespaces (their resyncs, and the echo of
	// the last writes that may be in flight) and no write (other tests'
	// Namespaces wake the operator too, and need none).
	reconcilesOf := func(ns string) int { return strings.Count(logs.String(), "object="+ns+" msg=reconciled") }
	reconciles := func() int { return reconcilesOf(a) + reconcilesOf(b) + reconcilesOf(c) }
	// Once each has been reconciled again (resynced), the writes of the
	// reconciliations before have been answered and counted.
	ra, rb, rc := reconcilesOf(a), reconcilesOf(b), reconcilesOf(c)
	eventually("a resync of each Namespace", func(context.Context) (bool, error) {
		return reconcilesOf(a) > ra && reconcilesOf(b) > rb && reconcilesOf(c) > rc, nil
	})
	// resyncs bounds the reconciliations of count Namespaces since start:
	// one resync a second each, and a few more.
	resyncs := func(count int, start time.Time) int { return count * (int(time.Since(start).Seconds()) + 3) }
	before, requests, start := reconciles(), counter.Snapshot(), time.Now()
	window := start.Add(4 * time.Second)
	eventually("a steady window", func(context.Context) (bool, error) {
		if n := reconciles() - before; n > resyncs(3, start) {
			return false, fmt.Errorf("%v reconciliations of steady Namespaces in %s", n, time.Since(start))
		}
		if w := counter.Snapshot().Sub(requests); w.Writes > 0 {
			return false, fmt.Errorf("a steady operator wrote: %v", w)
		}
		if time.Now().Before(window) {
			return false, nil
		}
		// Resynced (each of them at least once): a steady resync writes nothing.
		return reconciles()-before >= 3, nil
	})

	// The label removed: everything the operator made goes.
	patchNS(a, `{"metadata":{"labels":{"`+nsProfileLabel+`":null}}}`)
	none(a)

	// Deleted as the namespace controller deletes a Namespace: Terminating,
	// its content deleted, then the finalizer "kubernetes" removed through
	// the finalize subresource. It goes; the operator neither holds it nor
	// logs an error for it.
	before, start = reconcilesOf(b), time.Now()
	must(t, kube.CoreV1().Namespaces().Delete(t.Context(), b, metav1.DeleteOptions{}))
	eventually(b+" Terminating", func(ctx context.Context) (bool, error) {
		ns, err := kube.CoreV1().Namespaces().Get(ctx, b, metav1.GetOptions{})
		return err == nil && ns.DeletionTimestamp != nil && ns.Status.Phase == corev1.NamespaceTerminating, err
	})
	for _, del := range []func(context.Context, string, metav1.DeleteOptions) error{
		kube.CoreV1().ResourceQuotas(b).Delete, kube.CoreV1().LimitRanges(b).Delete,
		kube.NetworkingV1().NetworkPolicies(b).Delete, kube.RbacV1().RoleBindings(b).Delete,
	} {
		if err := del(t.Context(), nsDefaults, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	none(b)
	ns, err := kube.CoreV1().Namespaces().Get(t.Context(), b, metav1.GetOptions{})
	must(t, err)
	ns.Spec.Finalizers = nil
	_, err = kube.CoreV1().Namespaces().Finalize(t.Context(), ns, metav1.UpdateOptions{})
	must(t, err)
	eventually(b+" gone", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Namespaces().Get(ctx, b, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	for _, line := range strings.Split(logs.String(), "\n") {
		if (strings.Contains(line, "level=error") || strings.Contains(line, "level=warn")) && (strings.Contains(line, a) || strings.Contains(line, b) || strings.Contains(line, c)) {
			t.Errorf("the operator logged: %s", line)
		}
	}
	if n := reconcilesOf(b) - before; n > resyncs(1, start)+5 {
		t.Errorf("%d reconciliations of %s while it was deleted, in %s", n, b, time.Since(start))
	}
}
