package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/resource/child"
)

// TestMigrationOperator runs the DatabaseMigration operator
// (migration_operator_test.go), a multi-step workflow: each step's Job is
// created only once the one before it succeeded, none early; a running
// step costs a bounded number of reconciliations (no hot loop); an edit of
// the steps while one runs leaves the running Job alone and applies to the
// steps after it; a failed Job makes the migration Stalled (no retry, no
// new Job) until the spec changes, which runs the failed step again; and a
// delete, while a step runs, takes the Jobs with it. The test plays the Job
// controller, which testenv's API server does not run.
func TestMigrationOperator(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	crd := migrationCRD(uniqueCRDGroup(t))
	deleteCRDOnCleanup(t, newCRDClient(t), crd)
	reconciles := runMigrationOperator(t, ns, crd)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	kube := kubeClient(t)
	jobs := kube.BatchV1().Jobs(ns)
	migrations := dynamicClientset(t).Resource(gvr).Namespace(ns)
	eventually := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	condition := func(name, typ string, status metav1.ConditionStatus, reason string) {
		t.Helper()
		if _, err := env.WaitCondition(t.Context(), gvr, ns, name, typ, status, reason); err != nil {
			t.Fatal(err)
		}
	}
	count := func(name string) int64 {
		n, _ := reconciles.LoadOrStore(name, new(atomic.Int64))
		return n.(*atomic.Int64).Load()
	}
	jobNames := func(ctx context.Context) ([]string, error) {
		list, err := jobs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, j := range list.Items {
			names = append(names, j.Name)
		}
		slices.Sort(names)
		return names, nil
	}
	jobsAre := func(want ...string) wait.ConditionWithContextFunc {
		slices.Sort(want)
		return func(ctx context.Context) (bool, error) {
			got, err := jobNames(ctx)
			return slices.Equal(got, want), err
		}
	}
	// steady checks, over a window of 4 s, that the Jobs stay want, that
	// name is reconciled at most maxReconciles times (the child resource's
	// WaitDelay is 2 s), and that neither the Jobs nor name are written.
	steady := func(name string, maxReconciles int64, want ...string) {
		t.Helper()
		slices.Sort(want)
		before := count(name)
		versions := map[string]string{}
		list, err := jobs.List(t.Context(), metav1.ListOptions{})
		must(t, err)
		for _, j := range list.Items {
			versions[j.Name] = j.ResourceVersion
		}
		m, err := migrations.Get(t.Context(), name, metav1.GetOptions{})
		must(t, err)
		err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 4*time.Second, true, func(ctx context.Context) (bool, error) {
			list, err := jobs.List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil // the window's end, or a transient error
			}
			if now, err := migrations.Get(ctx, name, metav1.GetOptions{}); err == nil && now.GetResourceVersion() != m.GetResourceVersion() {
				return false, fmt.Errorf("%s written: status %v", name, now.Object["status"])
			}
			var got []string
			for _, j := range list.Items {
				got = append(got, j.Name)
				if versions[j.Name] != j.ResourceVersion {
					return false, fmt.Errorf("job %s written", j.Name)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return false, fmt.Errorf("jobs %v, want %v", got, want)
			}
			return false, nil
		})
		if !wait.Interrupted(err) {
			t.Fatalf("%s: %v", name, err)
		}
		if n := count(name) - before; n > maxReconciles {
			t.Fatalf("%s reconciled %d times in 4 s, want at most %d", name, n, maxReconciles)
		}
	}
	// finish plays the Job controller: the Job ends as Complete or Failed,
	// with the conditions the API server asks for before those.
	finish := func(name string, complete bool) {
		t.Helper()
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			j, err := jobs.Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			now := metav1.Now()
			j.Status.StartTime = &now
			cond := func(typ batchv1.JobConditionType) batchv1.JobCondition {
				return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: "Test", Message: "the test says so", LastProbeTime: now, LastTransitionTime: now}
			}
			if complete {
				j.Status.Succeeded, j.Status.CompletionTime = 1, &now
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)}
			} else {
				j.Status.Failed = 1
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)}
			}
			_, err = jobs.UpdateStatus(t.Context(), j, metav1.UpdateOptions{})
			return err
		}))
	}
	status := func(name string) (current string, done []string) {
		t.Helper()
		u, err := migrations.Get(t.Context(), name, metav1.GetOptions{})
		must(t, err)
		current, _, _ = unstructured.NestedString(u.Object, "status", "currentStep")
		done, _, _ = unstructured.NestedStringSlice(u.Object, "status", "completedSteps")
		return current, done
	}
	statusIs := func(name, current string, done ...string) {
		t.Helper()
		eventually(fmt.Sprintf("%s at step %q after %v", name, current, done), func(ctx context.Context) (bool, error) {
			c, d := status(name)
			return c == current && slices.Equal(d, done), nil
		})
	}
	// waitingFor waits until name says, for its current generation, that
	// it waits for job.
	waitingFor := func(name, job string) {
		t.Helper()
		want := fmt.Sprintf("job %s/%s not ready: not complete (0 active, 0 succeeded)", ns, job)
		eventually(name+" waiting for "+job, func(ctx context.Context) (bool, error) {
			u, err := env.WaitCondition(ctx, gvr, ns, name, conditioncontext.Reconciling, metav1.ConditionTrue, child.ReasonWaitingForChild)
			if err != nil {
				return false, err
			}
			conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			return slices.ContainsFunc(conditions, func(c any) bool {
				m := c.(map[string]any)
				return m["type"] == conditioncontext.Reconciling && m["message"] == want
			}), nil
		})
	}
	image := func(name string) string {
		t.Helper()
		j, err := jobs.Get(t.Context(), name, metav1.GetOptions{})
		must(t, err)
		return j.Spec.Template.Spec.Containers[0].Image
	}
	create := func(name string, steps ...string) {
		t.Helper()
		var list []any
		for _, s := range steps {
			list = append(list, map[string]any{"name": s, "image": "migrate:1", "command": []any{"migrate", s}})
		}
		eventually("the DatabaseMigration CRD", func(ctx context.Context) (bool, error) {
			_, err := migrations.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": gvr.GroupVersion().String(), "kind": "DatabaseMigration", "metadata": map[string]any{"name": name},
				"spec": map[string]any{"steps": list}}}, metav1.CreateOptions{})
			return err == nil, nil
		})
	}
	setImages := func(name, image string, steps ...string) {
		t.Helper()
		var list []any
		for _, s := range steps {
			list = append(list, map[string]any{"name": s, "image": image, "command": []any{"migrate", s}})
		}
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"steps": list}})
		must(t, err)
		_, err = migrations.Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{})
		must(t, err)
	}

	// One step at a time: schema, then data, then index.
	create("orders", "schema", "data", "index")
	eventually("the first Job", jobsAre("orders-schema"))
	waitingFor("orders", "orders-schema")
	condition("orders", conditioncontext.Ready, metav1.ConditionFalse, child.ReasonWaitingForChild)
	statusIs("orders", "schema")
	steady("orders", 4, "orders-schema")
	finish("orders-schema", true)
	eventually("the second Job", jobsAre("orders-schema", "orders-data"))
	statusIs("orders", "data", "schema")
	waitingFor("orders", "orders-data")
	steady("orders", 4, "orders-schema", "orders-data")

	// An edit while data runs, which drops data and changes index's image:
	// data's Job runs on to its end as it started; index gets the new image.
	setImages("orders", "migrate:2", "schema", "index")
	waitingFor("orders", "orders-data")
	steady("orders", 4, "orders-schema", "orders-data")
	statusIs("orders", "data", "schema")
	if got := image("orders-data"); got != "migrate:1" {
		t.Fatalf("running Job orders-data has image %s, want migrate:1", got)
	}
	finish("orders-data", true)
	eventually("the third Job", jobsAre("orders-schema", "orders-data", "orders-index"))
	if got := image("orders-index"); got != "migrate:2" {
		t.Fatalf("Job orders-index has image %s, want migrate:2", got)
	}
	statusIs("orders", "index", "schema", "data")
	finish("orders-index", true)
	if _, err := env.WaitReady(t.Context(), gvr, ns, "orders"); err != nil {
		t.Fatal(err)
	}
	statusIs("orders", "", "schema", "data", "index")
	condition("orders", conditioncontext.Ready, metav1.ConditionTrue, framework.ReasonSucceeded)
	steady("orders", 1, "orders-schema", "orders-data", "orders-index") // the last wait's requeue may still come

	// A failed step: Stalled, no retry and no new Job, until the spec
	// changes; then the failed step runs again, with the new spec.
	create("users", "add-column", "backfill")
	eventually("the first Job", jobsAre("orders-schema", "orders-data", "orders-index", "users-add-column"))
	finish("users-add-column", false)
	condition("users", conditioncontext.Stalled, metav1.ConditionTrue, reasonStepFailed)
	condition("users", conditioncontext.Ready, metav1.ConditionFalse, reasonStepFailed)
	steady("users", 1, "orders-schema", "orders-data", "orders-index", "users-add-column")
	statusIs("users", "add-column")
	failed, err := jobs.Get(t.Context(), "users-add-column", metav1.GetOptions{})
	must(t, err)
	setImages("users", "migrate:2", "add-column", "backfill")
	eventually("the failed step's Job again", func(ctx context.Context) (bool, error) {
		j, err := jobs.Get(ctx, "users-add-column", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && j.UID != failed.UID && j.Spec.Template.Spec.Containers[0].Image == "migrate:2", err
	})
	condition("users", conditioncontext.Reconciling, metav1.ConditionTrue, child.ReasonWaitingForChild)
	if u, err := migrations.Get(t.Context(), "users", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); slices.ContainsFunc(conditions, func(c any) bool {
		return c.(map[string]any)["type"] == conditioncontext.Stalled
	}) {
		t.Fatalf("users still Stalled after the spec changed: %v", conditions)
	}
	finish("users-add-column", true)
	eventually("the second Job", jobsAre("orders-schema", "orders-data", "orders-index", "users-add-column", "users-backfill"))
	statusIs("users", "backfill", "add-column")

	// A delete while backfill runs: the Jobs go (deleted with propagation
	// Background: one deleted as the API server defaults a Job's delete,
	// orphaning its pods, would keep the finalizer orphan here, where no
	// garbage collector removes it), and so does the DatabaseMigration.
	must(t, migrations.Delete(t.Context(), "users", metav1.DeleteOptions{}))
	eventually("users and its Jobs deleted", func(ctx context.Context) (bool, error) {
		_, err := migrations.Get(ctx, "users", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		return jobsAre("orders-schema", "orders-data", "orders-index")(ctx)
	})
	must(t, migrations.Delete(t.Context(), "orders", metav1.DeleteOptions{}))
	eventually("orders and its Jobs deleted", jobsAre())
}
