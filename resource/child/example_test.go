package child_test

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/child"
)

// ExampleNew keeps a ConfigMap per owner. An in-memory client and cache
// stand in for client-go's typed client (child.Typed(kube.CoreV1().ConfigMaps))
// and the operator's shared informer.
func ExampleNew() {
	client := newFakeClient[corev1.ConfigMap]()
	cache := informertest.New()
	content := "hello"
	r, err := child.New(child.Config[*corev1.Secret, *corev1.ConfigMap]{
		Name:         "configmap",
		Client:       client.For,
		Cache:        cache,
		FieldManager: "example-operator",
		Desired: func(_ context.Context, owner *corev1.Secret) (*corev1.ConfigMap, error) {
			return &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: owner.Name},
				Data:       map[string]string{"index.html": content},
			}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	owner := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", UID: "1"}}
	ctx := context.Background()

	_ = r.EnsureCreated(ctx, owner)
	_ = cache.Add(client.objs["demo/web"]) // the watch delivers it
	_ = r.EnsureCreated(ctx, owner)        // nothing differs: no write
	fmt.Println("applies:", len(client.applies))

	content = "bye"
	plans, _ := framework.Plan(ctx, owner, []resource.Interface{r})
	for _, p := range plans {
		for _, line := range framework.DescribeChange(p.Update) {
			fmt.Println(line)
		}
	}
	// Output:
	// applies: 1
	// configmap demo/web: data["index.html"] "hello" → "bye"
}

// ExampleConfig_readiness waits for a CronJob's last scheduled run, and
// says why in the Reconciling condition (here as framework.Plan shows it),
// which kubectl describe prints to the owner's user.
func ExampleConfig_readiness() {
	client := newFakeClient[batchv1.CronJob]()
	cache := informertest.New()
	r, err := child.New(child.Config[*corev1.Secret, *batchv1.CronJob]{
		Name:   "cronjob",
		Client: client.For,
		Cache:  cache,
		Desired: func(_ context.Context, owner *corev1.Secret) (*batchv1.CronJob, error) {
			return &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: owner.Name}, Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *"}}, nil
		},
		// Cheap and without side effects: called in every reconciliation
		// that writes nothing.
		Readiness: func(c *batchv1.CronJob) (bool, string) {
			s := c.Status
			switch {
			case s.LastScheduleTime == nil:
				return true, "" // no run yet: nothing to wait for
			case s.LastSuccessfulTime == nil:
				return false, "no successful run yet"
			case s.LastSuccessfulTime.Before(s.LastScheduleTime):
				return false, "last run, scheduled " + s.LastScheduleTime.UTC().Format(time.RFC3339) + ", has not succeeded yet"
			}
			return true, ""
		},
	})
	if err != nil {
		panic(err)
	}
	owner := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "nightly", UID: "1"}}
	ctx := context.Background()
	_ = r.EnsureCreated(ctx, owner)

	cronJob := client.objs["demo/nightly"]
	run := metav1.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	cronJob.Status.LastScheduleTime = &run // the CronJob controller ran it
	_ = cache.Add(cronJob)                 // the watch delivers it
	plans, _ := framework.Plan(ctx, owner, []resource.Interface{r})
	fmt.Println(plans[0].Waits)
	// Output:
	// cronjob demo/nightly not ready: no successful run yet (again in 5s)
}

// ExampleReadinessOf: the reasons of children just written, before their
// controllers ran (always so against an API server without controllers,
// such as testenv's), and once a Deployment's controller has seen it.
func ExampleReadinessOf() {
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	fmt.Println(child.ReadinessOf(deployment))
	deployment.Status.ObservedGeneration = 1
	fmt.Println(child.ReadinessOf(deployment))
	fmt.Println(child.ReadinessOf(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: appsv1.StatefulSetStatus{ObservedGeneration: 1}}))
	fmt.Println(child.ReadinessOf(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3}}))
	fmt.Println(child.ReadinessOf(&batchv1.Job{Status: batchv1.JobStatus{Active: 1}}))
	fmt.Println(child.ReadinessOf(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}))
	// Output:
	// false generation 1 not observed yet (observed 0)
	// false 0 of 1 replicas updated
	// false 0 of 1 replicas ready
	// false 0 of 3 pods updated
	// false not complete (1 active, 0 succeeded)
	// false phase Pending, condition Ready not True
}
