package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

const childManager = "child-test"

// childInformer runs a typed informer of gvr in ns (label-filtered on the
// child package's managed-by label when filtered) until the test ends.
func childInformer(t *testing.T, rc rest.Interface, gvr schema.GroupVersionResource, obj runtime.Object, ns string, filtered bool) *informer.Informer {
	t.Helper()
	cfg := informer.Config{RESTClient: rc, ObjectType: obj, GVR: gvr, Namespace: ns, ResyncPeriod: -1}
	if filtered {
		cfg.LabelSelector = child.LabelManagedBy + "=" + childManager
	}
	inf, err := informer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := inf.WaitForCacheSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	return inf
}

// childOwner creates the owner of the tests: a Secret (its kind is in
// client-go's scheme, so the owner reference needs no configuration).
func childOwner(t *testing.T, kc kubernetes.Interface, ns string) *corev1.Secret {
	t.Helper()
	s, err := kc.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func childDeployment(replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: image,
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				}}},
			},
		},
	}
}

// waitCached waits until the informer holds key at least at the
// resourceVersion of obj (or holds nothing, when obj is nil).
func waitCached(t *testing.T, inf *informer.Informer, key string, obj metav1.Object) {
	t.Helper()
	poll(t, "cache of "+key, func(context.Context) (bool, error) {
		x, ok, _ := inf.Get(key)
		if obj == nil {
			return !ok, nil
		}
		return ok && x.(metav1.Object).GetResourceVersion() == obj.GetResourceVersion(), nil
	})
}

func deploymentResource(t *testing.T, kc kubernetes.Interface, inf *informer.Informer, desired func() *appsv1.Deployment, mod func(*child.Config[*corev1.Secret, *appsv1.Deployment])) *crud.Resource {
	t.Helper()
	cfg := child.Config[*corev1.Secret, *appsv1.Deployment]{
		Name:         "deployment",
		Client:       child.Typed(kc.AppsV1().Deployments),
		Cache:        inf,
		FieldManager: childManager,
		Desired: func(context.Context, *corev1.Secret) (*appsv1.Deployment, error) {
			return desired(), nil
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	r, err := child.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func countedClient(t *testing.T) (kubernetes.Interface, *requestcount.Counter) {
	t.Helper()
	counter := requestcount.New()
	kc, err := kubernetes.NewForConfig(counter.Wrap(env.Config()))
	if err != nil {
		t.Fatal(err)
	}
	return kc, counter
}

// TestChildDeployment: create, steady resyncs without requests, foreign
// and defaulted fields are no drift, drift of an owned field is reverted,
// and the owner's deletion deletes the child.
func TestChildDeployment(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	admin := kubeClient(t)
	kc, counter := countedClient(t)
	inf := childInformer(t, admin.AppsV1().RESTClient(), appsv1.SchemeGroupVersion.WithResource("deployments"), &appsv1.Deployment{}, ns, true)
	owner := childOwner(t, admin, ns)
	replicas, image := int32(2), "nginx:1"
	r := deploymentResource(t, kc, inf, func() *appsv1.Deployment { return childDeployment(replicas, image) }, nil)
	ctx := t.Context()
	key := ns + "/web"

	// Create.
	if err := r.EnsureCreated(ctx, owner); err != nil {
		t.Fatal(err)
	}
	d, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != owner.UID || ref.Kind != "Secret" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("owner references = %+v", d.OwnerReferences)
	}
	if d.Labels[child.LabelManagedBy] != childManager || *d.Spec.Replicas != 2 {
		t.Errorf("created deployment = %+v", d)
	}
	waitCached(t, inf, key, d)

	t.Run("steady resync makes no request", func(t *testing.T) {
		before := counter.Snapshot()
		for range 5 {
			if err := r.EnsureCreated(ctx, owner); err != nil {
				t.Fatal(err)
			}
		}
		if got := counter.Snapshot().Sub(before); got.Total != 0 {
			t.Errorf("5 steady reconciliations sent %d requests (%v), want 0", got.Total, got.ByVerb)
		}
	})

	t.Run("foreign and defaulted fields are not drift", func(t *testing.T) {
		// The server defaulted strategy, protocol, pull policy, ...; another
		// manager sets fields and labels the resource does not own.
		patch := `{"metadata":{"labels":{"team":"a"},"annotations":{"note":"x"}},"spec":{"minReadySeconds":5,"template":{"spec":{"containers":[{"name":"web","env":[{"name":"A","value":"1"}]}]}}}}`
		d, err := admin.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone-else"})
		if err != nil {
			t.Fatal(err)
		}
		waitCached(t, inf, key, d)
		before := counter.Snapshot()
		if err := r.EnsureCreated(ctx, owner); err != nil {
			t.Fatal(err)
		}
		if got := counter.Snapshot().Sub(before); got.Writes != 0 {
			t.Errorf("foreign fields caused %d writes", got.Writes)
		}
	})

	t.Run("drift of an owned field is reverted", func(t *testing.T) {
		d, err := admin.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "someone-else"})
		if err != nil {
			t.Fatal(err)
		}
		waitCached(t, inf, key, d)
		plan, err := r.Plan(ctx, owner, false)
		if err != nil {
			t.Fatal(err)
		}
		got := framework.DescribeChange(mustChange(plan.UpdateChange()))
		if want := "deployment " + key + ": spec.replicas 5 → 2"; strings.Join(got, "\n") != want {
			t.Errorf("plan = %q, want %q", got, want)
		}
		before := counter.Snapshot()
		if err := r.EnsureCreated(ctx, owner); err != nil {
			t.Fatal(err)
		}
		if got := counter.Snapshot().Sub(before); got.Writes != 1 || got.Total != 1 {
			t.Errorf("drift: %d writes, %d requests, want 1 and 1", got.Writes, got.Total)
		}
		d, err = admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 2 || d.Spec.MinReadySeconds != 5 || d.Labels["team"] != "a" {
			t.Errorf("after revert: replicas %d, minReadySeconds %d, labels %v; want 2, 5 and team kept", *d.Spec.Replicas, d.Spec.MinReadySeconds, d.Labels)
		}
		// The answer went into the mutation cache: the next reconciliation
		// does not write again, even before the watch delivers the change.
		before = counter.Snapshot()
		if err := r.EnsureCreated(ctx, owner); err != nil {
			t.Fatal(err)
		}
		if got := counter.Snapshot().Sub(before); got.Writes != 0 {
			t.Errorf("reconciliation right after the revert wrote %d times", got.Writes)
		}
		waitCached(t, inf, key, d)
	})

	t.Run("a desired change is one apply", func(t *testing.T) {
		image = "nginx:2"
		before := counter.Snapshot()
		if err := r.EnsureCreated(ctx, owner); err != nil {
			t.Fatal(err)
		}
		if got := counter.Snapshot().Sub(before); got.Writes != 1 {
			t.Errorf("image change: %d writes, want 1", got.Writes)
		}
		d, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Spec.Template.Spec.Containers[0].Image != "nginx:2" || len(d.Spec.Template.Spec.Containers[0].Env) != 1 {
			t.Errorf("containers = %+v", d.Spec.Template.Spec.Containers)
		}
		waitCached(t, inf, key, d)
	})

	t.Run("owner deletion deletes the child with its UID", func(t *testing.T) {
		gone := owner.DeepCopy()
		gone.DeletionTimestamp = &metav1.Time{}
		before := counter.Snapshot()
		if err := r.EnsureDeleted(ctx, gone); err != nil {
			t.Fatal(err)
		}
		if got := counter.Snapshot().Sub(before); got.ByVerb[requestcount.VerbDelete] != 1 {
			t.Errorf("deletes = %v", got.ByVerb)
		}
		if _, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("deployment after delete: %v", err)
		}
	})
}

func mustChange(c any, ok bool) any {
	if !ok {
		return nil
	}
	return c
}

// TestChildDeleteUIDPrecondition: a delete change computed for one object
// does not delete another object of the same name created since.
func TestChildDeleteUIDPrecondition(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kc := kubeClient(t)
	inf := childInformer(t, kc.CoreV1().RESTClient(), corev1.SchemeGroupVersion.WithResource("configmaps"), &corev1.ConfigMap{}, ns, true)
	owner := childOwner(t, kc, ns)
	ops, err := child.NewOps(child.Config[*corev1.Secret, *corev1.ConfigMap]{
		Name: "configmap", Client: child.Typed(kc.CoreV1().ConfigMaps), Cache: inf, FieldManager: childManager,
		Desired: func(context.Context, *corev1.Secret) (*corev1.ConfigMap, error) {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1"}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := crud.New(crud.Config{Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := r.EnsureCreated(ctx, owner); err != nil {
		t.Fatal(err)
	}
	first, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitCached(t, inf, ns+"/cm", first)
	gone := owner.DeepCopy()
	gone.DeletionTimestamp = &metav1.Time{}
	// The resource finds an owner's children through an index its event
	// handler on the informer keeps, which sees a new object a moment after
	// the informer's store does: wait for the planned delete, not only for
	// the store.
	var del any
	poll(t, "the delete of cm to be planned", func(ctx context.Context) (bool, error) {
		patch, err := r.Plan(ctx, gone, true)
		if err != nil {
			return false, err
		}
		var ok bool
		del, ok = patch.DeleteChange()
		return ok, nil
	})
	// Replace the object: same name, labels and owner, another UID.
	if err := kc.CoreV1().ConfigMaps(ns).Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	second := first.DeepCopy()
	second.ResourceVersion, second.UID = "", ""
	if second, err = kc.CoreV1().ConfigMaps(ns).Create(ctx, second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ops.ApplyDeleteChange(ctx, gone, del); err != nil {
		t.Fatalf("stale delete: %v, want nil (the object it was for is gone)", err)
	}
	got, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{})
	if err != nil || got.UID != second.UID {
		t.Fatalf("the replacement was deleted: %v", err)
	}
	// Gone already: success.
	if err := kc.CoreV1().ConfigMaps(ns).Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ops.ApplyDeleteChange(ctx, gone, del); err != nil {
		t.Fatalf("delete of a missing child: %v", err)
	}
}

// TestChildDesiredSetRemoval: children the desired set no longer names are
// deleted; objects without the managed-by label, or of another owner, are
// not.
func TestChildDesiredSetRemoval(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kc := kubeClient(t)
	// Unfiltered on purpose: the label check, not the informer's selector,
	// must keep the unlabelled ConfigMap.
	inf := childInformer(t, kc.CoreV1().RESTClient(), corev1.SchemeGroupVersion.WithResource("configmaps"), &corev1.ConfigMap{}, ns, false)
	owner := childOwner(t, kc, ns)
	names := []string{"a", "b", "c"}
	r, err := child.New(child.Config[*corev1.Secret, *corev1.ConfigMap]{
		Name: "configmaps", Client: child.Typed(kc.CoreV1().ConfigMaps), Cache: inf, FieldManager: childManager,
		DesiredSet: func(_ context.Context, w *corev1.Secret) ([]*corev1.ConfigMap, error) {
			var cms []*corev1.ConfigMap
			for _, n := range names {
				cms = append(cms, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-" + n}, Data: map[string]string{"name": n}})
			}
			return cms, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := r.EnsureCreated(ctx, owner); err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: owner.Name, UID: owner.UID, Controller: ptr(true)}
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled", OwnerReferences: []metav1.OwnerReference{ref}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other-owner", Labels: map[string]string{child.LabelManagedBy: childManager},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "x", UID: "x", Controller: ptr(true)}}}},
	} {
		if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, "five ConfigMaps cached", func(context.Context) (bool, error) { return len(inf.List()) >= 5, nil })

	names = []string{"a", "c"}
	if err := r.EnsureCreated(ctx, owner); err != nil {
		t.Fatal(err)
	}
	list, err := kc.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cm := range list.Items {
		if cm.Name != "kube-root-ca.crt" {
			got = append(got, cm.Name)
		}
	}
	if want := "other-owner,unlabelled,web-a,web-c"; strings.Join(got, ",") != want {
		t.Errorf("ConfigMaps = %v, want %s", got, want)
	}
}

// recordingResource records whether it ran.
type recordingResource struct{ runs int }

func (r *recordingResource) Name() string                             { return "after" }
func (r *recordingResource) EnsureCreated(context.Context, any) error { r.runs++; return nil }
func (r *recordingResource) EnsureDeleted(context.Context, any) error { return nil }

// TestChildWaitsForDeployment: a Deployment that is not available stops the
// chain as waiting (no error, a requeue, the Reconciling condition); once its
// status says available, the chain goes on. testenv runs no controllers, so
// the test writes the status itself.
func TestChildWaitsForDeployment(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kc := kubeClient(t)
	inf := childInformer(t, kc.AppsV1().RESTClient(), appsv1.SchemeGroupVersion.WithResource("deployments"), &appsv1.Deployment{}, ns, true)
	owner := childOwner(t, kc, ns)
	r := deploymentResource(t, kc, inf, func() *appsv1.Deployment { return childDeployment(2, "nginx:1") }, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
		c.ReadyWhen = child.Ready[*appsv1.Deployment]
	})
	after := &recordingResource{}
	chain := []resource.Interface{r, after}

	run := func() (context.Context, error) {
		ctx := requeuecontext.NewContext(t.Context())
		ctx = conditioncontext.NewContext(ctx)
		return ctx, framework.ProcessUpdate(ctx, owner, chain)
	}
	ctx, err := run()
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	assertChildWait(t, ctx, after, "deployment "+ns+"/web not ready: generation 1 not observed yet (observed 0)")

	d, err := kc.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitCached(t, inf, ns+"/web", d)
	ctx, err = run()
	if err != nil {
		t.Fatal(err)
	}
	assertChildWait(t, ctx, after, "generation 1 not observed yet")

	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1}
	if d, err = kc.AppsV1().Deployments(ns).UpdateStatus(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCached(t, inf, ns+"/web", d)
	ctx, err = run()
	if err != nil {
		t.Fatal(err)
	}
	assertChildWait(t, ctx, after, "1 of 2 replicas available")
	// The plan says what the chain waits for, and plans nothing after it.
	plans, err := framework.Plan(t.Context(), owner, chain)
	want := fmt.Sprintf("deployment %s/web not ready: 1 of 2 replicas available (again in %s)", ns, child.DefaultWaitDelay)
	if err != nil || len(plans) != 1 || plans[0].Waits != want || plans[0].Changes() {
		t.Fatalf("Plan() = %+v, %v; want only the deployment, waiting: %q", plans, err, want)
	}
	if after.runs != 0 {
		t.Fatal("a plan ran the resource after the waiting child")
	}

	d.Status.ReadyReplicas, d.Status.AvailableReplicas = 2, 2
	if d, err = kc.AppsV1().Deployments(ns).UpdateStatus(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCached(t, inf, ns+"/web", d)
	ctx, err = run()
	if err != nil {
		t.Fatal(err)
	}
	if after.runs != 1 {
		t.Errorf("resource after the ready child ran %d times, want 1", after.runs)
	}
	if _, ok := requeuecontext.RequeueAfter(ctx); ok {
		t.Error("ready child still asks for a requeue")
	}
}

func assertChildWait(t *testing.T, ctx context.Context, after *recordingResource, reason string) {
	t.Helper()
	if after.runs != 0 {
		t.Errorf("resource after a child that is not ready ran")
	}
	if d, ok := requeuecontext.RequeueAfter(ctx); !ok || d != child.DefaultWaitDelay {
		t.Errorf("requeue = %v %v, want %v", d, ok, child.DefaultWaitDelay)
	}
	c, ok := conditioncontext.Get(ctx, conditioncontext.Reconciling)
	if !ok || c.Reason != child.ReasonWaitingForChild || !strings.Contains(c.Message, reason) {
		t.Errorf("Reconciling = %+v, want reason %s and %q", c, child.ReasonWaitingForChild, reason)
	}
}

// TestChildBadInput: a child in another namespace, without a name, or of a
// kind the server does not serve is a permanent error naming owner and
// child, and nothing is written.
func TestChildBadInput(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kc := kubeClient(t)
	inf := childInformer(t, kc.AppsV1().RESTClient(), appsv1.SchemeGroupVersion.WithResource("deployments"), &appsv1.Deployment{}, ns, true)
	owner := childOwner(t, kc, ns)
	tests := []struct {
		name string
		mod  func(*appsv1.Deployment)
		gvk  schema.GroupVersionKind
		want string
	}{
		{name: "other namespace", mod: func(d *appsv1.Deployment) { d.Namespace = "default" }, want: "deployment default/web of secret " + ns + "/web is not in the owner's namespace " + ns},
		{name: "empty name", mod: func(d *appsv1.Deployment) { d.Name = "" }, want: "deployment (no name) of secret " + ns + "/web has an empty name"},
		{name: "kind not served", gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deploymnt"}, want: "create deploymnt " + ns + "/web of secret " + ns + "/web"},
		{name: "invalid object", mod: func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"other": "x"} }, want: "create deployment " + ns + "/web of secret " + ns + "/web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := deploymentResource(t, kc, inf, func() *appsv1.Deployment {
				d := childDeployment(1, "nginx")
				if tt.mod != nil {
					tt.mod(d)
				}
				return d
			}, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) { c.GVK = tt.gvk })
			err := r.EnsureCreated(t.Context(), owner)
			if !errors.Is(err, child.ErrInvalidChild) || !retry.IsPermanent(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want a permanent ErrInvalidChild containing %q", err, tt.want)
			}
			t.Logf("error: %v", err)
			if _, err := kc.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("bad input wrote a deployment (%v)", err)
			}
		})
	}
}

// TestChildWaitUnderConditions: under a Framework with Config.Conditions,
// a child that is not ready makes the owner Reconciling (reason
// WaitingForChild, the message saying what it waits for) and not Ready, and
// the resources after it wait; once the child is ready, the owner is Ready
// and Reconciling is gone.
func TestChildWaitUnderConditions(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kc := kubeClient(t)
	inf := childInformer(t, kc.AppsV1().RESTClient(), appsv1.SchemeGroupVersion.WithResource("deployments"), &appsv1.Deployment{}, ns, true)
	deployment, err := child.New(child.Config[*unstructured.Unstructured, *appsv1.Deployment]{
		Name:         "deployment",
		Client:       child.Typed(kc.AppsV1().Deployments),
		Cache:        inf,
		FieldManager: childManager,
		ReadyWhen:    child.Ready[*appsv1.Deployment],
		WaitDelay:    200 * time.Millisecond,
		Desired: func(context.Context, *unstructured.Unstructured) (*appsv1.Deployment, error) {
			return childDeployment(2, "nginx:1"), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var after atomic.Int64
	next := &statusResource{name: "after", create: func(context.Context, *unstructured.Unstructured) error {
		after.Add(1)
		return nil
	}}
	startStatusFramework(t, ns, statusOptions{backOff: constantBackOff(50 * time.Millisecond)}, resourceSet(t, "", deployment, next))
	rc := widgetClient(t, ns)
	createWidget(t, newWidget(ns, "w1", "", nil))

	s := waitStatus(t, rc, "w1", "Reconciling True, waiting for the Deployment", func(s widgetStatus) bool {
		c, r := s.condition(conditioncontext.Reconciling), s.condition(conditioncontext.Ready)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == child.ReasonWaitingForChild &&
			r != nil && r.Status == metav1.ConditionFalse
	})
	if c := s.condition(conditioncontext.Reconciling); !strings.Contains(c.Message, "deployment "+ns+"/web not ready") {
		t.Errorf("Reconciling message = %q, want it to name the Deployment", c.Message)
	}
	if n := after.Load(); n != 0 {
		t.Fatalf("the resource after the child ran %d times while the child was not ready", n)
	}

	d, err := kc.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	if _, err := kc.AppsV1().Deployments(ns).UpdateStatus(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, rc, "w1", "Ready True without Reconciling", func(s widgetStatus) bool {
		return isTrue(s, conditioncontext.Ready) && s.condition(conditioncontext.Reconciling) == nil
	})
	if after.Load() == 0 {
		t.Error("the resource after the child never ran")
	}
}

// TestChildTerminatingNotDeletedAgain: a child the desired set stopped
// naming, whose delete a finalizer of someone else holds (it is
// terminating), is not sent a DELETE again by every later reconciliation of
// its owner, nor by the owner's delete chain.
func TestChildTerminatingNotDeletedAgain(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	admin := kubeClient(t)
	kc, counter := countedClient(t)
	inf := childInformer(t, admin.CoreV1().RESTClient(), corev1.SchemeGroupVersion.WithResource("configmaps"), &corev1.ConfigMap{}, ns, true)
	owner := childOwner(t, admin, ns)
	var want atomic.Bool
	want.Store(true)
	r, err := child.New(child.Config[*corev1.Secret, *corev1.ConfigMap]{
		Name: "configmap", Client: child.Typed(kc.CoreV1().ConfigMaps), Cache: inf, FieldManager: childManager,
		Desired: func(context.Context, *corev1.Secret) (*corev1.ConfigMap, error) {
			if !want.Load() {
				return nil, nil
			}
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1"}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := ns + "/cm"
	if err := r.EnsureCreated(ctx, owner); err != nil {
		t.Fatal(err)
	}
	// Someone else's finalizer holds the child's delete.
	const hold = "example.com/hold"
	held, err := admin.CoreV1().ConfigMaps(ns).Patch(ctx, "cm", types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+hold+`"]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, err := admin.CoreV1().ConfigMaps(ns).Patch(context.Background(), "cm", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("release the child: %v", err)
		}
	})
	waitCached(t, inf, key, held)

	want.Store(false)
	before := counter.Snapshot()
	if err := r.EnsureCreated(ctx, owner); err != nil {
		t.Fatal(err)
	}
	if got := counter.Snapshot().Sub(before); got.ByVerb[requestcount.VerbDelete] != 1 {
		t.Fatalf("the child the owner stopped wanting: %v requests, want one DELETE", got.ByVerb)
	}
	poll(t, "the child terminating in the cache", func(context.Context) (bool, error) {
		x, ok, _ := inf.Get(key)
		return ok && x.(metav1.Object).GetDeletionTimestamp() != nil, nil
	})

	before = counter.Snapshot()
	for range 3 {
		if err := r.EnsureCreated(ctx, owner); err != nil {
			t.Fatal(err)
		}
	}
	if got := counter.Snapshot().Sub(before); got.Total != 0 {
		t.Errorf("3 reconciliations of the owner of a terminating child sent %v, want no request", got.ByVerb)
	}
	// Nor does the owner's delete chain.
	gone := owner.DeepCopy()
	gone.DeletionTimestamp = &metav1.Time{}
	before = counter.Snapshot()
	if err := r.EnsureDeleted(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if got := counter.Snapshot().Sub(before); got.Total != 0 {
		t.Errorf("the owner's delete chain sent %v for its terminating child, want no request", got.ByVerb)
	}

	// Let go, it is gone, and nothing is sent either.
	if _, err := admin.CoreV1().ConfigMaps(ns).Patch(ctx, "cm", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCached(t, inf, key, nil)
	before = counter.Snapshot()
	if err := r.EnsureCreated(ctx, owner); err != nil {
		t.Fatal(err)
	}
	if got := counter.Snapshot().Sub(before); got.Total != 0 {
		t.Errorf("reconciliation after the child went sent %v, want no request", got.ByVerb)
	}
}
