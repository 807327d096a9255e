package child_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/informer/informertest"
	operatorkitresource "github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/trace"
)

// fakeClient is an in-memory Client: an apply stores the body decoded into
// a T (with a UID and a growing resourceVersion), a delete removes it.
type fakeClient[T any, PT interface {
	*T
	metav1.Object
}] struct {
	mu      sync.Mutex
	objs    map[string]PT
	applies []string
	deletes []string
	// deleteCalls counts every Delete, those that find nothing too.
	deleteCalls int
	rv          int
	err         error
	// defaults, when set, changes each object applied before it is stored
	// and answered, as the API server's defaulting does.
	defaults func(PT)
	// bodies holds the last apply body of each key.
	bodies map[string][]byte
}

func newFakeClient[T any, PT interface {
	*T
	metav1.Object
}]() *fakeClient[T, PT] {
	return &fakeClient[T, PT]{objs: map[string]PT{}}
}

func (f *fakeClient[T, PT]) For(ns string) child.Client[PT] { return &nsClient[T, PT]{f, ns} }

type nsClient[T any, PT interface {
	*T
	metav1.Object
}] struct {
	f  *fakeClient[T, PT]
	ns string
}

func (c *nsClient[T, PT]) Patch(_ context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, _ ...string) (PT, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if c.f.err != nil {
		return nil, c.f.err
	}
	if pt != types.ApplyPatchType || opts.Force == nil || !*opts.Force || opts.FieldManager == "" {
		return nil, fmt.Errorf("not a forced apply: %s %+v", pt, opts)
	}
	obj := PT(new(T))
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, err
	}
	key := c.ns + "/" + name
	c.f.rv++
	obj.SetResourceVersion(fmt.Sprint(c.f.rv))
	if old, ok := c.f.objs[key]; ok {
		obj.SetUID(old.GetUID())
		// An apply does not undo a delete: finalizers still hold it (the
		// applier sets none: other managers' stay).
		obj.SetDeletionTimestamp(old.GetDeletionTimestamp())
		if len(obj.GetFinalizers()) == 0 {
			obj.SetFinalizers(old.GetFinalizers())
		}
	} else {
		obj.SetUID(types.UID("uid-" + name))
	}
	if c.f.defaults != nil {
		c.f.defaults(obj)
	}
	c.f.objs[key] = obj
	c.f.applies = append(c.f.applies, key)
	if c.f.bodies == nil {
		c.f.bodies = map[string][]byte{}
	}
	c.f.bodies[key] = data
	return obj, nil
}

func (c *nsClient[T, PT]) Delete(_ context.Context, name string, opts metav1.DeleteOptions) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.deleteCalls++
	key := c.ns + "/" + name
	old, ok := c.f.objs[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "x"}, name)
	}
	if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != old.GetUID() {
		return fmt.Errorf("delete of %s without its UID precondition", key)
	}
	delete(c.f.objs, key)
	c.f.deletes = append(c.f.deletes, key)
	return nil
}

// owner is the owner of the tests: a Secret (a kind client-go's scheme
// knows, so OwnerGVK defaults).
func owner() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", UID: "owner-uid"}}
}

func desiredDeployment(replicas int32, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: image,
					Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
				}}},
			},
		},
	}
}

// defaulted returns the API server's version of applied: defaults and
// foreign fields added.
func defaulted(applied *appsv1.Deployment) *appsv1.Deployment {
	d := applied.DeepCopy()
	d.Generation = 1
	d.Labels["foreign"] = "yes"
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	d.Spec.RevisionHistoryLimit = new(int32(10))
	c := &d.Spec.Template.Spec.Containers[0]
	c.TerminationMessagePath = "/dev/termination-log"
	c.ImagePullPolicy = corev1.PullIfNotPresent
	c.Ports[0].Protocol = corev1.ProtocolTCP
	c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("67108864") // same quantity, other form
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "istio"})
	d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2}
	return d
}

type fixture struct {
	client   *fakeClient[appsv1.Deployment, *appsv1.Deployment]
	cache    *informertest.Informer
	resource *crud.Resource
	replicas int32
	image    string
}

func newFixture(t *testing.T, mod func(*child.Config[*corev1.Secret, *appsv1.Deployment])) *fixture {
	t.Helper()
	f := &fixture{client: newFakeClient[appsv1.Deployment](), cache: informertest.New(), replicas: 2, image: "nginx:1"}
	cfg := child.Config[*corev1.Secret, *appsv1.Deployment]{
		Name:   "deployment",
		Client: f.client.For,
		Cache:  f.cache,
		Desired: func(_ context.Context, _ *corev1.Secret) (*appsv1.Deployment, error) {
			return desiredDeployment(f.replicas, f.image), nil
		},
		FieldManager: "test-operator",
	}
	if mod != nil {
		mod(&cfg)
	}
	r, err := child.New(cfg)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	f.resource = r
	return f
}

// sync copies the fake server's objects into the cache, as a watch would,
// after passing them through server (defaults).
func (f *fixture) sync(t *testing.T, server func(*appsv1.Deployment) *appsv1.Deployment) {
	t.Helper()
	for _, o := range f.client.objs {
		if server != nil {
			o = server(o)
		}
		if _, ok, _ := f.cache.Get(o.Namespace + "/" + o.Name); ok {
			_ = f.cache.Update(o)
		} else {
			_ = f.cache.Add(o)
		}
	}
}

func reconcileCtx() context.Context {
	ctx := requeuecontext.NewContext(context.Background())
	ctx = reconciliationcanceledcontext.NewContext(ctx)
	return conditioncontext.NewContext(ctx)
}

func TestCreateSteadyDrift(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()

	patch, err := f.resource.Plan(ctx, owner(), false)
	if err != nil {
		t.Fatal(err)
	}
	create, ok := patch.CreateChange()
	if !ok {
		t.Fatalf("plan of a missing child has no create part: %+v", patch)
	}
	lines := strings.Join(create.(child.Changes).Describe(), "\n")
	for _, want := range []string{
		`deployment demo/web: spec.replicas (none) → 2`,
		`deployment demo/web: spec.template.spec.containers[web].image (none) → "nginx:1"`,
		`deployment demo/web: metadata.labels["app.kubernetes.io/managed-by"] (none) → "test-operator"`,
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("create description lacks %q:\n%s", want, lines)
		}
	}

	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatalf("EnsureCreated() error = %v", err)
	}
	if len(f.client.applies) != 1 {
		t.Fatalf("applies = %v, want 1", f.client.applies)
	}
	applied := f.client.objs["demo/web"]
	if ref := metav1.GetControllerOf(applied); ref == nil || ref.UID != "owner-uid" || ref.Kind != "Secret" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("owner reference = %+v", applied.OwnerReferences)
	}
	if applied.Labels[child.LabelManagedBy] != "test-operator" || applied.Namespace != "demo" {
		t.Errorf("applied metadata = %+v", applied.ObjectMeta)
	}

	// Steady: the server's defaults and foreign fields are no drift.
	f.sync(t, defaulted)
	for range 3 {
		if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.client.applies) != 1 {
		t.Fatalf("steady resync wrote: applies = %v", f.client.applies)
	}

	// Drift of an owned field.
	cur, _, _ := f.cache.Get("demo/web")
	drifted := cur.(*appsv1.Deployment).DeepCopy()
	drifted.Spec.Replicas = new(int32(5))
	drifted.Spec.Template.Spec.Containers[0].Image = "evil"
	_ = f.cache.Update(drifted)
	patch, err = f.resource.Plan(ctx, owner(), false)
	if err != nil {
		t.Fatal(err)
	}
	update, ok := patch.UpdateChange()
	if !ok {
		t.Fatal("drift gives no update")
	}
	got := update.(child.Changes).Describe()
	want := []string{
		`deployment demo/web: spec.replicas 5 → 2`,
		`deployment demo/web: spec.template.spec.containers[web].image "evil" → "nginx:1"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("update description = %q, want %q", got, want)
	}
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	if len(f.client.applies) != 2 {
		t.Fatalf("drift not reverted: applies = %v", f.client.applies)
	}
}

func TestCreateBodyHoldsOnlySetFields(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.resource.EnsureCreated(context.Background(), owner()); err != nil {
		t.Fatal(err)
	}
	d := f.client.objs["demo/web"]
	if d.APIVersion != "apps/v1" || d.Kind != "Deployment" {
		t.Errorf("apply body type = %s %s", d.APIVersion, d.Kind)
	}
	if d.Spec.Strategy.Type != "" || d.Status.Replicas != 0 || !d.CreationTimestamp.IsZero() {
		t.Errorf("apply body has fields not set: %+v", d)
	}
}

// deploymentsNamed is a DesiredSet of a desiredDeployment for each name in
// *names, as it is at the call (a test changes it between reconciliations).
func deploymentsNamed(names *[]string) func(context.Context, *corev1.Secret) ([]*appsv1.Deployment, error) {
	return func(context.Context, *corev1.Secret) ([]*appsv1.Deployment, error) {
		var ds []*appsv1.Deployment
		for _, n := range *names {
			d := desiredDeployment(1, "nginx")
			d.Name = n
			ds = append(ds, d)
		}
		return ds, nil
	}
}

func TestDesiredSetDeletesOnlyOwnedChildren(t *testing.T) {
	names := []string{"a", "b", "c"}
	f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
		c.Desired, c.DesiredSet = nil, deploymentsNamed(&names)
	})
	ctx := context.Background()
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	f.sync(t, nil)
	// A child of another owner, and one without the label.
	other := desiredDeployment(1, "x")
	other.Namespace, other.Name, other.UID = "demo", "other", "other-uid"
	other.Labels[child.LabelManagedBy] = "test-operator"
	other.OwnerReferences = []metav1.OwnerReference{{Kind: "Secret", Name: "x", UID: "x-uid", Controller: new(true)}}
	foreign := desiredDeployment(1, "x")
	foreign.Namespace, foreign.Name, foreign.UID = "demo", "foreign", "foreign-uid"
	foreign.OwnerReferences = []metav1.OwnerReference{{Kind: "Secret", Name: "web", UID: "owner-uid", Controller: new(true)}}
	_ = f.cache.Add(other)
	_ = f.cache.Add(foreign)

	names = []string{"a", "c"}
	patch, err := f.resource.Plan(ctx, owner(), false)
	if err != nil {
		t.Fatal(err)
	}
	del, ok := patch.DeleteChange()
	if !ok || len(del.(child.Changes)) != 1 {
		t.Fatalf("delete part = %v, want b only", del)
	}
	if got := del.(child.Changes).Describe(); got[0] != "deployment demo/b: delete (uid uid-b)" {
		t.Errorf("delete description = %q", got)
	}
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.client.deletes, ",") != "demo/b" || len(f.client.applies) != 3 {
		t.Errorf("deletes = %v applies = %v, want [demo/b] and 3", f.client.deletes, f.client.applies)
	}
}

func TestDeletePatchOnOwnerDeletion(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	f.sync(t, nil)
	gone := owner()
	gone.DeletionTimestamp = &metav1.Time{}
	if err := f.resource.EnsureDeleted(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.client.deletes, ",") != "demo/web" {
		t.Errorf("deletes = %v", f.client.deletes)
	}
	// Deleted already (NotFound): success.
	if err := f.resource.EnsureDeleted(ctx, gone); err != nil {
		t.Fatalf("second EnsureDeleted() error = %v", err)
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name    string
		desired func(*appsv1.Deployment)
		obj     any
		want    string
		wantErr error
	}{
		{name: "other namespace", desired: func(d *appsv1.Deployment) { d.Namespace = "kube-system" }, want: "deployment kube-system/web of secret demo/web is not in the owner's namespace demo", wantErr: child.ErrInvalidChild},
		{name: "empty name", desired: func(d *appsv1.Deployment) { d.Name = "" }, want: "has an empty name", wantErr: child.ErrInvalidChild},
		{name: "other kind", desired: func(d *appsv1.Deployment) { d.APIVersion, d.Kind = "apps/v1", "StatefulSet" }, want: "is a apps/v1, Kind=StatefulSet, but the resource writes apps/v1, Kind=Deployment", wantErr: child.ErrInvalidChild},
		{name: "other controller", desired: func(d *appsv1.Deployment) {
			d.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: new(true)}}
		}, want: "names another controller, ReplicaSet rs", wantErr: child.ErrInvalidChild},
		{name: "wrong owner type", obj: &corev1.ConfigMap{}, want: "reconciles *v1.Secret, got *v1.ConfigMap", wantErr: child.ErrWrongType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
				c.Desired = func(context.Context, *corev1.Secret) (*appsv1.Deployment, error) {
					d := desiredDeployment(1, "x")
					if tt.desired != nil {
						tt.desired(d)
					}
					return d, nil
				}
			})
			obj := tt.obj
			if obj == nil {
				obj = owner()
			}
			err := f.resource.EnsureCreated(context.Background(), obj)
			if !errors.Is(err, tt.wantErr) || !retry.IsPermanent(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("EnsureCreated() error = %v, want a permanent %v containing %q", err, tt.wantErr, tt.want)
			}
			if len(f.client.applies) != 0 {
				t.Errorf("bad input wrote %v", f.client.applies)
			}
		})
	}
}

func TestControlledByAnother(t *testing.T) {
	f := newFixture(t, nil)
	taken := desiredDeployment(1, "x")
	taken.Namespace, taken.UID = "demo", "taken"
	taken.OwnerReferences = []metav1.OwnerReference{{Kind: "Secret", Name: "other", UID: "other", Controller: new(true)}}
	_ = f.cache.Add(taken)
	err := f.resource.EnsureCreated(context.Background(), owner())
	if !errors.Is(err, child.ErrInvalidChild) || !strings.Contains(err.Error(), "is controlled by Secret other") {
		t.Fatalf("error = %v", err)
	}
}

// TestChildControlledByAnotherBeingDeletedWaits: the object of the desired
// child's name is another controller's and is being deleted (finalizers
// hold it): its name will be free when they let it go, so the resource
// waits for it, naming its controller, and writes nothing; it creates the
// child once the Cache shows it gone. It failed with a permanent
// ErrInvalidChild, and the owner stayed failed until something else woke
// it.
func TestChildControlledByAnotherBeingDeletedWaits(t *testing.T) {
	f := newFixture(t, nil)
	taken := desiredDeployment(1, "x")
	taken.Namespace, taken.UID = "demo", "taken"
	taken.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "other-uid", Controller: new(true)}}
	taken.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	taken.Finalizers = []string{"example.com/hold"}
	_ = f.cache.Add(taken)
	ctx := reconcileCtx()
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatalf("error = %v, want a wait for the other controller's object to go", err)
	}
	assertMessage(t, ctx, "deployment demo/web not ready: being deleted (finalizers: example.com/hold), controlled by ConfigMap other (uid other-uid)")
	if after, ok := requeuecontext.RequeueAfter(ctx); !ok || after != child.DefaultWaitDelay {
		t.Errorf("requeue after %v %v, want %v: its delete event wakes its controller, not this owner", after, ok, child.DefaultWaitDelay)
	}
	if len(f.client.applies) != 0 {
		t.Fatalf("applies = %v, want none", f.client.applies)
	}
	_ = f.cache.Delete(taken)
	if err := f.resource.EnsureCreated(reconcileCtx(), owner()); err != nil {
		t.Fatal(err)
	}
	if len(f.client.applies) != 1 {
		t.Fatalf("applies = %v, want the child's create", f.client.applies)
	}
}

// TestChildOfAPreviousOwner: a child whose controller is an owner of the
// same kind and name with another UID (deleted and created again; the
// cache has not shown the old child's delete yet) is no bad input: the
// error is retried, and the child is created once the cache shows it gone.
// One of another kind of that name is another controller's.
func TestChildOfAPreviousOwner(t *testing.T) {
	f := newFixture(t, nil)
	old := desiredDeployment(1, "x")
	old.Namespace, old.UID = "demo", "old-child"
	old.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "web", UID: "previous-owner-uid", Controller: new(true)}}
	_ = f.cache.Add(old)
	ctx := context.Background()
	err := f.resource.EnsureCreated(ctx, owner())
	if err == nil || errors.Is(err, child.ErrInvalidChild) || retry.IsPermanent(err) || !strings.Contains(err.Error(), "previous Secret of that name (uid previous-owner-uid)") {
		t.Fatalf("error = %v, want a retried error naming the previous owner", err)
	}
	if len(f.client.applies) != 0 {
		t.Fatalf("applies = %v, want none", f.client.applies)
	}
	_ = f.cache.Delete(old)
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	if len(f.client.applies) != 1 {
		t.Fatalf("applies = %v, want the child's create", f.client.applies)
	}

	other := newFixture(t, nil)
	cm := old.DeepCopy()
	cm.OwnerReferences[0].Kind = "ConfigMap"
	_ = other.cache.Add(cm)
	if err := other.resource.EnsureCreated(ctx, owner()); !errors.Is(err, child.ErrInvalidChild) || !retry.IsPermanent(err) {
		t.Fatalf("child of a ConfigMap of the owner's name: error = %v, want a permanent ErrInvalidChild", err)
	}
}

// TestErrorsNameEachThingOnce: the errors of a child resource name the
// resource (crud's wrap, with the step), the child and its owner once each.
// The child resource named itself again ("deployment: new update patch:
// invalid child: resource deployment: deployment demo/web of ...").
func TestErrorsNameEachThingOnce(t *testing.T) {
	ctx := context.Background()
	controlled := newFixture(t, nil)
	taken := desiredDeployment(1, "x")
	taken.Namespace, taken.UID = "demo", "taken"
	taken.OwnerReferences = []metav1.OwnerReference{{Kind: "ConfigMap", Name: "other", UID: "other-uid", Controller: new(true)}}
	_ = controlled.cache.Add(taken)
	previous := newFixture(t, nil)
	old := taken.DeepCopy()
	old.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "web", UID: "previous-uid", Controller: new(true)}}
	_ = previous.cache.Add(old)
	invalid := newFixture(t, nil)
	invalid.client.err = apierrors.NewBadRequest("spec.replicas: must be positive")
	unavailable := newFixture(t, nil)
	unavailable.client.err = apierrors.NewServiceUnavailable("later")
	for _, tc := range []struct {
		name string
		f    *fixture
		obj  any
		want string
	}{
		{"controlled by another", controlled, owner(), "deployment: new update patch: invalid child: deployment demo/web of secret demo/web exists and is controlled by ConfigMap other (uid other-uid)"},
		{"child of a previous owner", previous, owner(), "deployment: new update patch: deployment demo/web of secret demo/web is still the child of the previous Secret of that name (uid previous-uid), deleted since: waiting for it to go"},
		{"invalid", invalid, owner(), "deployment: apply create change: invalid child: create deployment demo/web of secret demo/web: spec.replicas: must be positive"},
		{"unavailable", unavailable, owner(), "deployment: apply create change: create deployment demo/web of secret demo/web: later"},
		{"wrong type", controlled, &corev1.ConfigMap{}, "deployment: get current state: wrong object type: the resource reconciles *v1.Secret, got *v1.ConfigMap"},
	} {
		if err := tc.f.resource.EnsureCreated(ctx, tc.obj); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error = %v\nwant %s", tc.name, err, tc.want)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	f := newFixture(t, nil)
	f.client.err = apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", nil)
	err := f.resource.EnsureCreated(context.Background(), owner())
	if !errors.Is(err, child.ErrInvalidChild) || !retry.IsPermanent(err) || !strings.Contains(err.Error(), "create deployment demo/web of secret demo/web") {
		t.Errorf("invalid: error = %v", err)
	}
	f.client.err = apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, "")
	if err := f.resource.EnsureCreated(context.Background(), owner()); !retry.IsPermanent(err) || !strings.Contains(err.Error(), "does not write") {
		t.Errorf("not found: error = %v", err)
	}
	f.client.err = apierrors.NewServiceUnavailable("later")
	if err := f.resource.EnsureCreated(context.Background(), owner()); err == nil || retry.IsPermanent(err) {
		t.Errorf("unavailable: error = %v, want a transient error", err)
	}
}

// TestCreateInANamespaceBeingDeleted: the API server refuses to create
// anything in a Namespace being deleted (403, cause NamespaceTerminating),
// which the owner's reconciliation may not know yet: its own deletion, or
// the Namespace's, not in the cache yet. The child is waited for, as one
// being deleted, not failed: no error, no backoff, no error log or Warning
// event while the Namespace goes. Another 403 is still an error.
func TestCreateInANamespaceBeingDeleted(t *testing.T) {
	f := newFixture(t, nil)
	terminating := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web",
		errors.New("unable to create new content in namespace demo because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace demo is being terminated", Field: "metadata.namespace"}}
	f.client.err = terminating
	ctx := reconcileCtx()
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatalf("create in a Namespace being deleted: error = %v, want a wait", err)
	}
	assertWaiting(t, ctx, "deployment demo/web not created: namespace demo is being deleted")

	f.client.err = apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("RBAC says no"))
	ctx = reconcileCtx()
	if err := f.resource.EnsureCreated(ctx, owner()); !apierrors.IsForbidden(err) || reconciliationcanceledcontext.IsCanceled(ctx) {
		t.Errorf("another 403: error = %v, canceled %v; want the error", err, reconciliationcanceledcontext.IsCanceled(ctx))
	}
}

// TestNamespacedChildWithoutNamespaceOfAClusterScopedOwner: a cluster-scoped
// owner gives its children no namespace, so a namespaced child whose
// Desired sets none is applied at the cluster scope, which the API server
// answers 404. The permanent error said only that the API server "does not
// write" the kind "here"; it now says the child needs a namespace.
func TestNamespacedChildWithoutNamespaceOfAClusterScopedOwner(t *testing.T) {
	client := newFakeClient[corev1.ConfigMap]()
	client.err = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
		Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"}}
	r, err := child.New(child.Config[*corev1.Namespace, *corev1.ConfigMap]{
		Name: "configmap", Client: client.For, Cache: informertest.New(),
		Desired: func(context.Context, *corev1.Namespace) (*corev1.ConfigMap, error) {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tenant := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", UID: "u"}}
	err = r.EnsureCreated(context.Background(), tenant)
	if !errors.Is(err, child.ErrInvalidChild) || !retry.IsPermanent(err) || !strings.Contains(err.Error(), "Desired must set the namespace") {
		t.Errorf("error = %v, want a permanent ErrInvalidChild saying that Desired must set the namespace", err)
	}
}

func TestWaitsForReadiness(t *testing.T) {
	f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
		c.ReadyWhen = child.Ready[*appsv1.Deployment]
	})
	tr := trace.New("demo/web", time.Now())
	ctx := trace.NewContext(reconcileCtx(), tr)
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	assertWaiting(t, ctx, "deployment demo/web not ready: 0 of 2 replicas updated")

	f.sync(t, defaulted) // observed, but 0 of 2 replicas updated
	ctx = trace.NewContext(reconcileCtx(), tr)
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	assertWaiting(t, ctx, "deployment demo/web not ready: 0 of 2 replicas updated")
	if len(f.client.applies) != 1 {
		t.Errorf("waiting wrote: %v", f.client.applies)
	}
	found := false
	for _, s := range tr.Snapshot().Steps {
		if strings.HasPrefix(s.Step, "wait: deployment demo/web not ready") {
			found = true
		}
	}
	if !found {
		t.Errorf("trace has no wait step: %+v", tr.Snapshot().Steps)
	}

	f.sync(t, func(d *appsv1.Deployment) *appsv1.Deployment {
		d = defaulted(d)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
		return d
	})
	ctx = reconcileCtx()
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	if reconciliationcanceledcontext.IsCanceled(ctx) {
		t.Error("ready child still waits")
	}
}

// TestDesiredChildBeingDeletedWaits: a desired child that the Cache shows
// being deleted (finalizers hold it: a Namespace, or a Deployment deleted
// in the foreground) is not in place, whether or not the resource checks
// readiness: the resource writes nothing to it and waits for it to go,
// instead of reporting the owner done (Ready) while the child goes away,
// and letting the next resources of the chain fail (a ResourceQuota in a
// Namespace being deleted is refused). Its delete event wakes the owner,
// which creates it again.
func TestDesiredChildBeingDeletedWaits(t *testing.T) {
	for _, readyWhen := range []bool{false, true} {
		f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
			if readyWhen {
				c.ReadyWhen = func(*appsv1.Deployment) bool { return true }
			}
		})
		if err := f.resource.EnsureCreated(reconcileCtx(), owner()); err != nil {
			t.Fatal(err)
		}
		f.sync(t, func(d *appsv1.Deployment) *appsv1.Deployment {
			d = defaulted(d)
			d.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			d.Finalizers = []string{"foregroundDeletion"}
			return d
		})
		ctx := reconcileCtx()
		if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
			t.Fatal(err)
		}
		assertMessage(t, ctx, "deployment demo/web not ready: being deleted (finalizers: foregroundDeletion)")
		f.image = "nginx:2" // drift: still nothing written while it goes
		ctx = reconcileCtx()
		if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
			t.Fatal(err)
		}
		assertMessage(t, ctx, "deployment demo/web not ready: being deleted (finalizers: foregroundDeletion)")
		if len(f.client.applies) != 1 {
			t.Errorf("ReadyWhen %v: %d applies, want only the first one's", readyWhen, len(f.client.applies))
		}
	}
	if ready, reason := child.ReadinessOf(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}}); ready || reason != "being deleted" {
		t.Errorf("ReadinessOf(a ConfigMap being deleted) = %v %q, want false \"being deleted\"", ready, reason)
	}
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}, Finalizers: []string{"example.com/a", "example.com/b"}}}
	if ready, reason := child.ReadinessOf(held); ready || reason != "being deleted (finalizers: example.com/a, example.com/b)" {
		t.Errorf("ReadinessOf(a ConfigMap that finalizers hold) = %v %q, want false and the finalizers named", ready, reason)
	}
}

// TestChildOfAPreviousOwnerBeingDeletedWaits: an owner deleted and created
// again while the previous one's child is being deleted (its delete chain
// deleted it, finalizers hold it: a Tenant's Namespace Terminating) waits
// for it to go, as for its own child being deleted: no error retried with
// backoff (a Warning event each time) for as long as the finalizers hold
// it, and nothing written to it.
func TestChildOfAPreviousOwnerBeingDeletedWaits(t *testing.T) {
	f := newFixture(t, nil)
	old := desiredDeployment(1, "x")
	old.Namespace, old.UID = "demo", "old-child"
	old.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "web", UID: "previous-owner-uid", Controller: new(true)}}
	old.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	old.Finalizers = []string{"example.com/hold"}
	_ = f.cache.Add(old)
	ctx := reconcileCtx()
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatalf("error = %v, want a wait for the previous owner's child to go", err)
	}
	assertMessage(t, ctx, "deployment demo/web not ready: being deleted (finalizers: example.com/hold)")
	if len(f.client.applies) != 0 {
		t.Fatalf("applies = %v, want none", f.client.applies)
	}
	_ = f.cache.Delete(old)
	if err := f.resource.EnsureCreated(reconcileCtx(), owner()); err != nil {
		t.Fatal(err)
	}
	if len(f.client.applies) != 1 {
		t.Fatalf("applies = %v, want the child's create", f.client.applies)
	}
}

// TestPlanOfWritesThenAWait: a DesiredSet with a child being deleted and
// another to create creates that one and then waits, the chain stopping
// there: the plan says so too (the create, and Waits), and plans no later
// resource, instead of showing the create alone and going on as if the
// chain went on.
func TestPlanOfWritesThenAWait(t *testing.T) {
	names := []string{"a"}
	f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
		c.Desired, c.DesiredSet = nil, deploymentsNamed(&names)
	})
	if err := f.resource.EnsureCreated(reconcileCtx(), owner()); err != nil {
		t.Fatal(err)
	}
	f.sync(t, func(d *appsv1.Deployment) *appsv1.Deployment {
		d = defaulted(d)
		d.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		d.Finalizers = []string{"example.com/hold"}
		return d
	})
	names = []string{"a", "b"}
	const waits = "deployment demo/a not ready: being deleted (finalizers: example.com/hold)"
	plans, err := framework.Plan(context.Background(), owner(), []operatorkitresource.Interface{f.resource, f.resource})
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 1 || plans[0].Create == nil || plans[0].Waits != waits+" (again in 5s)" {
		t.Fatalf("plans = %+v, want one: the create of b, then Waits %q", plans, waits)
	}
	var b strings.Builder
	framework.FormatPlans(&b, plans)
	if text := b.String(); !strings.Contains(text, "+ create") || !strings.Contains(text, "deployment demo/b") || !strings.HasSuffix(text, "… waits: "+waits+" (again in 5s)\n") {
		t.Errorf("FormatPlans:\n%s\nwant the create of b, then the wait", text)
	}
	if len(f.client.applies) != 1 {
		t.Fatalf("the plan applied: %d applies, want the first one's", len(f.client.applies))
	}
	ctx := reconcileCtx()
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	assertMessage(t, ctx, waits)
	if len(f.client.applies) != 2 {
		t.Fatalf("%d applies, want b's create", len(f.client.applies))
	}
}

// TestWrittenChildBeingDeletedWaits: a desired child that the Cache does
// not hold but exists, being deleted (a user's object, without the label,
// that finalizers hold: a Namespace Terminating), is adopted by the apply,
// whose answer shows it being deleted: the resource waits for it to go
// then and there, whatever Readiness says, instead of reporting it in
// place and letting the next resources run against it (and fail) until a
// later reconciliation finds it in the Cache.
func TestWrittenChildBeingDeletedWaits(t *testing.T) {
	for _, readyWhen := range []bool{false, true} {
		f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
			if readyWhen {
				c.ReadyWhen = func(*appsv1.Deployment) bool { return true }
			}
		})
		users := desiredDeployment(1, "x")
		users.Namespace, users.UID = "demo", "users-uid"
		users.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		users.Finalizers = []string{"example.com/hold"}
		f.client.objs["demo/web"] = users
		ctx := reconcileCtx()
		if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
			t.Fatal(err)
		}
		if len(f.client.applies) != 1 {
			t.Fatalf("ReadyWhen %v: %d applies, want the adopting one", readyWhen, len(f.client.applies))
		}
		assertMessage(t, ctx, "deployment demo/web not ready: being deleted (finalizers: example.com/hold)")
	}
}

// TestReadinessReason: Config.Readiness's reason is the Reconciling
// message's ("deployment demo/web not ready: <reason>"), also for a child
// just written; a check of one's own falls back to ReadinessOf; a ready
// child does not wait.
func TestReadinessReason(t *testing.T) {
	ready, reason := false, "no successful run yet"
	f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
		c.Readiness = func(d *appsv1.Deployment) (bool, string) {
			if d.Annotations["paused"] == "yes" {
				return false, "paused by its owner"
			}
			if ready && reason == "" {
				return child.ReadinessOf(d) // the kstatus rules
			}
			return ready, reason
		}
	})
	tr := trace.New("demo/web", time.Now())
	ctx := trace.NewContext(reconcileCtx(), tr)
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil { // the create's answer
		t.Fatal(err)
	}
	assertMessage(t, ctx, "deployment demo/web not ready: no successful run yet")
	f.sync(t, defaulted)
	ctx = trace.NewContext(reconcileCtx(), tr)
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil { // no write
		t.Fatal(err)
	}
	assertMessage(t, ctx, "deployment demo/web not ready: no successful run yet")
	if len(f.client.applies) != 1 {
		t.Errorf("waiting wrote: %v", f.client.applies)
	}
	if !slices.ContainsFunc(tr.Snapshot().Steps, func(s trace.Step) bool {
		return s.Step == "wait: deployment demo/web not ready: no successful run yet"
	}) {
		t.Errorf("trace has no wait step with the reason: %+v", tr.Snapshot().Steps)
	}
	plans, err := framework.Plan(context.Background(), owner(), []operatorkitresource.Interface{f.resource})
	if err != nil || len(plans) != 1 || plans[0].Waits != "deployment demo/web not ready: no successful run yet (again in 5s)" {
		t.Errorf("Plan() = %+v, %v; want it to wait with the reason", plans, err)
	}

	// Falling back to the kstatus rules, and their reason.
	ready, reason = true, ""
	ctx = reconcileCtx()
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	assertMessage(t, ctx, "deployment demo/web not ready: 0 of 2 replicas updated")

	ready, reason = true, "ignored when ready"
	ctx = reconcileCtx()
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	if reconciliationcanceledcontext.IsCanceled(ctx) {
		t.Error("ready child still waits")
	}
	if _, ok := conditioncontext.Get(ctx, conditioncontext.Reconciling); ok {
		t.Error("ready child set Reconciling")
	}
}

// TestNotReadyWithoutReason: a child not ready with no reason reads
// "<kind> <namespace/name> not ready", from Readiness with an empty reason
// and from a ReadyWhen false that the kstatus rules find ready: no Go
// field name ("ReadyWhen is false" before) in a cluster user's condition.
func TestNotReadyWithoutReason(t *testing.T) {
	readyByKstatus := func(d *appsv1.Deployment) *appsv1.Deployment {
		d = defaulted(d)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
		return d
	}
	for name, mod := range map[string]func(*child.Config[*corev1.Secret, *appsv1.Deployment]){
		"Readiness": func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
			c.Readiness = func(*appsv1.Deployment) (bool, string) { return false, "" }
		},
		"Readiness with white space": func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
			c.Readiness = func(*appsv1.Deployment) (bool, string) { return false, " \n\t" }
		},
		"ReadyWhen": func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
			c.ReadyWhen = func(*appsv1.Deployment) bool { return false }
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, mod)
			if err := f.resource.EnsureCreated(reconcileCtx(), owner()); err != nil {
				t.Fatal(err)
			}
			f.sync(t, readyByKstatus)
			ctx := reconcileCtx()
			if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
				t.Fatal(err)
			}
			assertMessage(t, ctx, "deployment demo/web not ready")
		})
	}
}

// TestReadinessReasonMadeOneLine: the author's reason is one line of at
// most 1024 bytes of valid UTF-8 in the message, whatever it holds, and
// the condition stays valid.
func TestReadinessReasonMadeOneLine(t *testing.T) {
	tests := []struct{ reason, want string }{
		{"2 of 3 replicas available", "2 of 3 replicas available"},
		{"  last run failed:\n\texit 1\r\n", "last run failed: exit 1"},
		{"red \x1b[31malert\x1b[0m", `red \x1b[31malert\x1b[0m`},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"para\u2029graph\u00a0nbsp", "para graph nbsp"},
		{strings.Repeat("é", 600), strings.Repeat("é", 510) + "..."},
		{strings.Repeat("x\n", 2000), strings.Repeat("x ", 511)[:1021] + "..."},
	}
	for _, tt := range tests {
		f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
			c.Readiness = func(*appsv1.Deployment) (bool, string) { return false, tt.reason }
		})
		ctx := reconcileCtx()
		if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
			t.Fatal(err)
		}
		c, _ := conditioncontext.Get(ctx, conditioncontext.Reconciling)
		if want := "deployment demo/web not ready: " + tt.want; c.Message != want {
			t.Errorf("reason %q: message %q, want %q", tt.reason, c.Message, want)
		}
		if err := conditioncontext.Validate(c); err != nil {
			t.Errorf("reason %q: %v", tt.reason, err)
		}
	}
}

// TestReadinessPanics: a panic in Readiness goes on, as one in Desired
// does, for the Framework to recover (framework.Plan returns it as a
// *framework.PanicError naming the resource, as a reconciliation does);
// the write before it is settled with Writes.
func TestReadinessPanics(t *testing.T) {
	writes := &balancedWrites{}
	f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
		c.Readiness = func(*appsv1.Deployment) (bool, string) { panic("readiness") }
		c.Writes = writes
		c.Resource = schema.GroupResource{Group: "apps", Resource: "deployments"}
	})
	panicked := func() (v any) {
		defer func() { v = recover() }()
		_ = f.resource.EnsureCreated(reconcileCtx(), owner())
		return nil
	}
	if v := panicked(); v != "readiness" {
		t.Fatalf("EnsureCreated (a create) panicked with %v, want readiness", v)
	}
	if len(f.client.applies) != 1 || writes.begun != 1 || writes.settled != 1 {
		t.Errorf("applies %v, writes begun %d settled %d; want 1, 1, 1", f.client.applies, writes.begun, writes.settled)
	}
	f.sync(t, defaulted)
	if v := panicked(); v != "readiness" {
		t.Fatalf("EnsureCreated (no write) panicked with %v, want readiness", v)
	}
	_, err := framework.Plan(context.Background(), owner(), []operatorkitresource.Interface{f.resource})
	var pe *framework.PanicError
	if !errors.As(err, &pe) || pe.Resource != "deployment" || pe.Value != "readiness" {
		t.Errorf("Plan() error = %v, want a *framework.PanicError of deployment", err)
	}
}

// assertMessage is assertWaiting with the whole message.
func assertMessage(t *testing.T, ctx context.Context, msg string) {
	t.Helper()
	assertWaiting(t, ctx, msg)
	if c, _ := conditioncontext.Get(ctx, conditioncontext.Reconciling); c.Message != msg {
		t.Errorf("Reconciling message %q, want %q", c.Message, msg)
	}
}

// TestWaitMessageFitsACondition: the message of the Reconciling condition
// of a DesiredSet whose many children are not ready is cut to what a
// condition holds (32 KiB); whole, it made the condition invalid, and the
// reconciliation a permanent error instead of a wait.
func TestWaitMessageFitsACondition(t *testing.T) {
	f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
		c.Desired = nil
		c.DesiredSet = func(context.Context, *corev1.Secret) ([]*appsv1.Deployment, error) {
			var ds []*appsv1.Deployment
			for i := range 150 {
				d := desiredDeployment(2, "nginx")
				d.Name = fmt.Sprintf("%s-%03d", strings.Repeat("web", 60), i)
				ds = append(ds, d)
			}
			return ds, nil
		}
		c.ReadyWhen = child.Ready[*appsv1.Deployment]
	})
	ctx := reconcileCtx()
	if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	assertWaiting(t, ctx, "deployment demo/webweb")
	c, _ := conditioncontext.Get(ctx, conditioncontext.Reconciling)
	if err := conditioncontext.Validate(c); err != nil {
		t.Fatalf("Reconciling condition of %d bytes: %v", len(c.Message), err)
	}
	if !strings.HasSuffix(c.Message, "...") {
		t.Errorf("message not cut: %q", c.Message[len(c.Message)-40:])
	}
}

func assertWaiting(t *testing.T, ctx context.Context, reason string) {
	t.Helper()
	if !reconciliationcanceledcontext.IsCanceled(ctx) {
		t.Error("chain not stopped")
	}
	if d, ok := requeuecontext.RequeueAfter(ctx); !ok || d != child.DefaultWaitDelay {
		t.Errorf("requeue = %v %v, want %v", d, ok, child.DefaultWaitDelay)
	}
	c, ok := conditioncontext.Get(ctx, conditioncontext.Reconciling)
	if !ok || c.Status != metav1.ConditionTrue || c.Reason != child.ReasonWaitingForChild || !strings.HasPrefix(c.Message, reason) {
		t.Errorf("Reconciling = %+v, want reason %s message %q", c, child.ReasonWaitingForChild, reason)
	}
}

func TestNewValidates(t *testing.T) {
	client := newFakeClient[appsv1.Deployment]()
	desired := func(context.Context, *corev1.Secret) (*appsv1.Deployment, error) { return nil, nil }
	tests := []struct {
		name   string
		config child.Config[*corev1.Secret, *appsv1.Deployment]
		want   string
	}{
		{"name", child.Config[*corev1.Secret, *appsv1.Deployment]{Client: client.For, Cache: informertest.New(), Desired: desired}, ".Name must not be empty"},
		{"client", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Cache: informertest.New(), Desired: desired}, ".Client must not be empty"},
		{"cache", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Desired: desired}, ".Cache must not be empty"},
		{"nil pointer cache", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: (*informer.Informer)(nil), Desired: desired}, ".Cache is a nil *informer.Informer"},
		{"nil pointer writes", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, Writes: (*countingWrites)(nil), Resource: schema.GroupResource{Group: "apps", Resource: "deployments"}}, ".Writes is a nil *child_test.countingWrites"},
		{"nil pointer logger", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, Logger: (*nilLogger)(nil)}, ".Logger is a nil *child_test.nilLogger"},
		{"desired", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New()}, ".Desired must not be empty"},
		{"ready when and readiness", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, ReadyWhen: child.Ready[*appsv1.Deployment], Readiness: child.ReadinessOf[*appsv1.Deployment]}, ".ReadyWhen and Readiness exclude each other"},
		{"writes", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, Writes: nopWrites{}}, ".Resource must not be empty"},
		{"writes resource without a resource", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, Writes: nopWrites{}, Resource: schema.GroupResource{Group: "apps"}}, `.Resource ".apps" needs a resource`},
		{"writes resource not the cache's", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: gvrCache{informertest.New(), deploymentsGVR}, Desired: desired, Writes: nopWrites{}, Resource: schema.GroupResource{Group: "apps", Resource: "Deployment"}}, `.Resource "Deployment.apps" is not the resource of Cache, "deployments.apps"`},
		{"wait delay of nanoseconds", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, WaitDelay: 5}, ".WaitDelay 5ns must be 0 (DefaultWaitDelay) or at least 1ms (MinWaitDelay)"},
		{"managed by no label value", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, ManagedBy: "my operator"}, ".ManagedBy \"my operator\" is not a label value"},
		{"field manager no label value", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, FieldManager: "example.com/operator"}, ".FieldManager (the default of ManagedBy) \"example.com/operator\" is not a label value"},
		{"gvk without kind", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, GVK: schema.GroupVersionKind{Group: "apps", Version: "v1"}}, ".GVK \"apps/v1, Kind=\" needs a version and a kind"},
		{"owner gvk without version", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, OwnerGVK: schema.GroupVersionKind{Kind: "Secret"}}, ".OwnerGVK \"/, Kind=Secret\" needs a version and a kind"},
		{"delete propagation", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, DeletePropagation: "background"}, ".DeletePropagation \"background\" must be"},
		{"field manager not printable", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, FieldManager: "operator\n", ManagedBy: "operator"}, ".FieldManager \"operator\\n\" must be at most 128 bytes of printable UTF-8"},
		{"field manager not UTF-8", child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, FieldManager: "operator\xff", ManagedBy: "operator"}, ".FieldManager \"operator\\xff\" must be at most 128 bytes of printable UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := child.New(tt.config)
			if !errors.Is(err, child.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New() error = %v, want %q", err, tt.want)
			}
			if ops, err := child.NewOps(tt.config); ops != nil || !errors.Is(err, child.ErrInvalidConfig) {
				t.Fatalf("NewOps() = %#v, %v; want nil and ErrInvalidConfig", ops, err)
			}
		})
	}
	// A Resource that is the Cache's is fine.
	if _, err := child.New(child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: gvrCache{informertest.New(), deploymentsGVR}, Desired: desired, Writes: nopWrites{}, Resource: deploymentsGVR.GroupResource()}); err != nil {
		t.Fatalf("New(Resource the Cache's) = %v", err)
	}
	// A field manager that is no label value is fine with a ManagedBy.
	if _, err := child.New(child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(), Desired: desired, FieldManager: "example.com/operator", ManagedBy: "operator"}); err != nil {
		t.Fatalf("New(FieldManager example.com/operator, ManagedBy operator) = %v", err)
	}
}

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

type nopWrites struct{}

// nilLogger is a logger whose nil pointer panics at its first line.
type nilLogger struct{ lines int }

func (l *nilLogger) Log(...any) error { l.lines++; return nil }

// countingWrites counts the applies it is told of; its nil pointer panics.
type countingWrites struct{ n int }

func (w *countingWrites) Begin(schema.GroupResource, string, string) func(metav1.Object, error) {
	w.n++
	return func(metav1.Object, error) {}
}

func (nopWrites) Begin(schema.GroupResource, string, string) func(metav1.Object, error) {
	return func(metav1.Object, error) {}
}

func TestServiceDefaultsAreNoDrift(t *testing.T) {
	client := newFakeClient[corev1.Service]()
	cache := informertest.New()
	r, err := child.New(child.Config[*corev1.Secret, *corev1.Service]{
		Name: "service", Client: client.For, Cache: cache,
		Desired: func(context.Context, *corev1.Secret) (*corev1.Service, error) {
			return &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: corev1.ServiceSpec{
					Selector: map[string]string{"app": "web"},
					Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
				},
			}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	s := client.objs["demo/web"].DeepCopy()
	s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.Type = "10.0.0.1", []string{"10.0.0.1"}, corev1.ServiceTypeClusterIP
	s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	s.Spec.Ports[0].Protocol = corev1.ProtocolTCP
	_ = cache.Add(s)
	if err := r.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	if len(client.applies) != 1 {
		t.Errorf("defaults were drift: applies = %v", client.applies)
	}
	s = s.DeepCopy()
	s.Spec.Ports[0].TargetPort = intstr.FromInt32(8080)
	_ = cache.Update(s)
	patch, err := r.Plan(ctx, owner(), false)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := patch.UpdateChange()
	if got := fmt.Sprint(u.(child.Changes).Describe()); !strings.Contains(got, `spec.ports[80].targetPort 8080 → "http"`) {
		t.Errorf("description = %s", got)
	}
}

// selectingCache is a cache that says what it selects, as informer.Informer
// does.
type selectingCache struct {
	*informertest.Informer
	namespace string
	selector  labels.Selector
}

func (c selectingCache) Selection() (string, labels.Selector) { return c.namespace, c.selector }

// newSelecting returns the child.New of a Deployment resource whose Cache
// holds namespace (all when "") and the objects sel selects.
func newSelecting(client *fakeClient[appsv1.Deployment, *appsv1.Deployment], namespace string, sel labels.Selector) (*crud.Resource, error) {
	return child.New(child.Config[*corev1.Secret, *appsv1.Deployment]{
		Name: "deployment", Client: client.For,
		Cache:        selectingCache{Informer: informertest.New(), namespace: namespace, selector: sel},
		FieldManager: "test-operator",
		Desired: func(context.Context, *corev1.Secret) (*appsv1.Deployment, error) {
			return desiredDeployment(1, "nginx"), nil
		},
	})
}

// TestCacheThatNeverHoldsTheChildren: a Cache whose label selector excludes
// the children's managed-by label fails New (the resource would apply them
// in every reconciliation and never see them); selectors that allow it, or
// say nothing about it, pass.
func TestCacheThatNeverHoldsTheChildren(t *testing.T) {
	for _, tc := range []struct {
		selector string
		wantErr  bool
	}{
		{selector: ""},
		{selector: "app=web"},
		{selector: "app.kubernetes.io/managed-by=test-operator"},
		{selector: "app.kubernetes.io/managed-by in (other,test-operator)"},
		{selector: "app.kubernetes.io/managed-by"},
		{selector: "app.kubernetes.io/managed-by=test-operatr", wantErr: true},
		{selector: "app=web,app.kubernetes.io/managed-by!=test-operator", wantErr: true},
		{selector: "!app.kubernetes.io/managed-by", wantErr: true},
	} {
		t.Run(tc.selector, func(t *testing.T) {
			sel, err := labels.Parse(tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			_, err = newSelecting(newFakeClient[appsv1.Deployment](), "", sel)
			switch {
			case tc.wantErr && (!errors.Is(err, child.ErrInvalidConfig) || !strings.Contains(err.Error(), "Cache selects") || !strings.Contains(err.Error(), "app.kubernetes.io/managed-by=test-operator")):
				t.Errorf("New() error = %v, want ErrInvalidConfig naming the Cache's selector and the children's label", err)
			case !tc.wantErr && err != nil:
				t.Errorf("New() error = %v, want none", err)
			}
		})
	}
}

// TestChildOutsideCacheNamespace: a child in a namespace the Cache does not
// hold is a permanent error of the step, and nothing is applied.
func TestChildOutsideCacheNamespace(t *testing.T) {
	client := newFakeClient[appsv1.Deployment]()
	r, err := newSelecting(client, "elsewhere", labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	err = r.EnsureCreated(reconcileCtx(), owner()) // the owner, and so the child, is in namespace demo
	if !errors.Is(err, child.ErrInvalidChild) || !retry.IsPermanent(err) || !strings.Contains(err.Error(), `namespace "demo"`) || !strings.Contains(err.Error(), "elsewhere") {
		t.Fatalf("EnsureCreated() error = %v, want a permanent ErrInvalidChild naming both namespaces", err)
	}
	if len(client.applies) != 0 {
		t.Errorf("applied %v, want nothing", client.applies)
	}

	// The Cache's own namespace is fine.
	r, err = newSelecting(client, "demo", labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.EnsureCreated(reconcileCtx(), owner()); err != nil {
		t.Fatalf("EnsureCreated() in the Cache's namespace: %v", err)
	}
	if len(client.applies) != 1 {
		t.Errorf("applies = %v, want one", client.applies)
	}
}

// TestManagedByLabel: the label LabelManagedBy and the controller
// reference are written with every apply, their absence or another value on
// the cached child is drift, a Desired that sets the label to another value
// causes no endless writes, and the labels map and owner references that
// Desired returns (here shared between calls) are never changed.
func TestManagedByLabel(t *testing.T) {
	shared := map[string]string{"app": "web"}
	sharedRefs := make([]metav1.OwnerReference, 1, 4) // room to append in place
	sharedRefs[0] = metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "other-uid"}
	var desiredLabel *string
	f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
		c.Desired = func(context.Context, *corev1.Secret) (*appsv1.Deployment, error) {
			d := desiredDeployment(2, "nginx:1")
			d.Labels = shared
			d.OwnerReferences = sharedRefs
			if desiredLabel != nil {
				d.Labels = map[string]string{"app": "web", child.LabelManagedBy: *desiredLabel}
			}
			return d, nil
		}
	})
	ctx := context.Background()
	checkShared := func(when string) {
		t.Helper()
		if len(shared) != 1 || shared["app"] != "web" {
			t.Fatalf("%s: the labels map Desired returned was changed: %v", when, shared)
		}
		if len(sharedRefs) != 1 || sharedRefs[0].UID != "other-uid" || sharedRefs[:2][1].UID != "" {
			t.Fatalf("%s: the owner references Desired returned were changed: %v", when, sharedRefs[:2])
		}
	}
	apply := func(when string, want int) {
		t.Helper()
		if err := f.resource.EnsureCreated(ctx, owner()); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if len(f.client.applies) != want {
			t.Fatalf("%s: applies = %d, want %d", when, len(f.client.applies), want)
		}
		applied := f.client.objs["demo/web"]
		if got := applied.Labels[child.LabelManagedBy]; got != "test-operator" {
			t.Fatalf("%s: applied label %s = %q, want test-operator", when, child.LabelManagedBy, got)
		}
		if ref := metav1.GetControllerOf(applied); len(applied.OwnerReferences) != 2 || applied.OwnerReferences[0].UID != "other-uid" ||
			ref == nil || ref.UID != "owner-uid" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Fatalf("%s: applied owner references = %+v", when, applied.OwnerReferences)
		}
		f.sync(t, defaulted)
	}
	apply("create", 1)
	checkShared("after the create")
	apply("steady", 1)
	checkShared("after a no-op")

	for _, c := range []struct {
		name, want string
		drift      func(*appsv1.Deployment)
	}{
		{"label removed", `metadata.labels["app.kubernetes.io/managed-by"] (none) → "test-operator"`,
			func(d *appsv1.Deployment) { delete(d.Labels, child.LabelManagedBy) }},
		{"label changed", `metadata.labels["app.kubernetes.io/managed-by"] "someone-else" → "test-operator"`,
			func(d *appsv1.Deployment) { d.Labels[child.LabelManagedBy] = "someone-else" }},
		{"controller reference removed", `metadata.ownerReferences[owner-uid].`, // one line per field
			func(d *appsv1.Deployment) { d.OwnerReferences = d.OwnerReferences[:1] }},
		{"blockOwnerDeletion cleared", `metadata.ownerReferences[owner-uid].blockOwnerDeletion false → true`,
			func(d *appsv1.Deployment) { d.OwnerReferences[1].BlockOwnerDeletion = new(false) }},
	} {
		cur, _, _ := f.cache.Get("demo/web")
		drifted := cur.(*appsv1.Deployment).DeepCopy()
		c.drift(drifted)
		_ = f.cache.Update(drifted)
		patch, err := f.resource.Plan(ctx, owner(), false)
		if err != nil {
			t.Fatal(err)
		}
		update, ok := patch.UpdateChange()
		if !ok {
			t.Fatalf("%s: no update", c.name)
		}
		want := `deployment demo/web: ` + c.want
		lines := update.(child.Changes).Describe()
		if len(lines) == 0 {
			t.Errorf("%s: update describes no field", c.name)
		}
		for _, line := range lines {
			if !strings.HasPrefix(line, want) {
				t.Errorf("%s: update description has %q, want only lines starting %q", c.name, line, want)
			}
		}
		apply(c.name, len(f.client.applies)+1)
		checkShared(c.name)
	}

	other := "not-the-manager"
	desiredLabel = &other
	n := len(f.client.applies)
	apply("Desired sets another value", n)
	apply("again", n)
}

// widget is an owner type that client-go's scheme does not know, with its
// TypeMeta as a typed object carries it.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// TestOwnerReferenceFromOwnersKind: without Config.OwnerGVK (the owner's
// type is not in client-go's scheme), the controller reference names the
// kind each owner's own apiVersion and kind say, also when owners of
// another apiVersion or kind come in between, and an owner that says
// neither is a permanent error that names Config.OwnerGVK. For typed owners
// (their TypeMeta) and unstructured ones.
func TestOwnerReferenceFromOwnersKind(t *testing.T) {
	t.Run("typed", func(t *testing.T) {
		testOwnerKinds(t, func(apiVersion, kind, name string) *widget {
			return &widget{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
				ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, UID: types.UID("uid-owner-" + name)}}
		})
	})
	t.Run("unstructured", func(t *testing.T) {
		testOwnerKinds(t, func(apiVersion, kind, name string) *unstructured.Unstructured {
			w := &unstructured.Unstructured{}
			if apiVersion != "" {
				w.SetAPIVersion(apiVersion)
			}
			if kind != "" {
				w.SetKind(kind)
			}
			w.SetNamespace("demo")
			w.SetName(name)
			w.SetUID(types.UID("uid-owner-" + name))
			return w
		})
	})
}

func testOwnerKinds[O child.Object](t *testing.T, newOwner func(apiVersion, kind, name string) O) {
	client := newFakeClient[corev1.ConfigMap]()
	r, err := child.New(child.Config[O, *corev1.ConfigMap]{
		Name:   "configmap",
		Client: client.For,
		Cache:  informertest.New(),
		Desired: func(_ context.Context, w O) (*corev1.ConfigMap, error) {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.GetName()}}, nil
		},
		FieldManager: "test-operator",
	})
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	owners := []struct{ apiVersion, kind, name string }{
		{"example.io/v1", "Widget", "a"},
		{"example.io/v1", "Widget", "b"},
		{"example.io/v2", "Widget", "c"},
		{"example.io/v2", "Gadget", "d"},
		{"v1", "Secret", "e"},
		{"example.io/v1", "Widget", "f"},
	}
	for _, o := range owners {
		w := newOwner(o.apiVersion, o.kind, o.name)
		if err := r.EnsureCreated(reconcileCtx(), w); err != nil {
			t.Fatalf("EnsureCreated(%s %s) error = %v", o.kind, o.name, err)
		}
		cm := client.objs["demo/"+o.name]
		if cm == nil {
			t.Fatalf("no ConfigMap for owner %s", o.name)
		}
		ref := metav1.GetControllerOf(cm)
		if ref == nil || ref.APIVersion != o.apiVersion || ref.Kind != o.kind || ref.Name != o.name || ref.UID != w.GetUID() {
			t.Errorf("controller reference of %s = %+v, want %s %s %s", o.name, ref, o.apiVersion, o.kind, o.name)
		}
	}

	err = r.EnsureCreated(reconcileCtx(), newOwner("", "", "bare"))
	if !errors.Is(err, child.ErrInvalidChild) || !retry.IsPermanent(err) || !strings.Contains(err.Error(), "has no apiVersion and kind: set Config.OwnerGVK") {
		t.Fatalf("EnsureCreated(owner without kind) error = %v, want a permanent ErrInvalidChild naming Config.OwnerGVK", err)
	}
	if _, ok := client.objs["demo/bare"]; ok {
		t.Error("an owner without kind got a child")
	}
}

// TestOwnerLabels: the children carry the owner's values of OwnerLabels,
// over what Desired sets; a child that has them needs no write; a child
// whose value differs from its owner's (the owner moved to another shard)
// is written again with the owner's value; a key the owner lacks is not
// set.
func TestOwnerLabels(t *testing.T) {
	const shard = "shard.operatorkit.io/ring"
	var desiredShard string // a value Desired sets for the shard label, if any
	shared := map[string]string{"app": "web"}
	f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
		c.OwnerLabels = []string{shard, "team"}
		c.Desired = func(context.Context, *corev1.Secret) (*appsv1.Deployment, error) {
			d := desiredDeployment(2, "nginx:1")
			d.Labels = shared
			if desiredShard != "" {
				d.Labels = map[string]string{"app": "web", shard: desiredShard}
			}
			return d, nil
		}
	})
	ctx := context.Background()
	w := owner()
	w.Labels = map[string]string{shard: "replica-a", "other": "not copied"}
	apply := func(when string, want int) *appsv1.Deployment {
		t.Helper()
		if err := f.resource.EnsureCreated(ctx, w); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if len(f.client.applies) != want {
			t.Fatalf("%s: applies = %d, want %d", when, len(f.client.applies), want)
		}
		if len(shared) != 1 {
			t.Fatalf("%s: the labels map Desired returned was changed: %v", when, shared)
		}
		f.sync(t, defaulted)
		return f.client.objs["demo/web"]
	}
	applied := apply("create", 1)
	if applied.Labels[shard] != "replica-a" || applied.Labels["app"] != "web" || applied.Labels[child.LabelManagedBy] != "test-operator" {
		t.Errorf("created child's labels = %v, want the owner's %s, app and the managed-by label", applied.Labels, shard)
	}
	for _, k := range []string{"team", "other"} {
		if _, ok := applied.Labels[k]; ok {
			t.Errorf("created child has label %s: %v (the owner lacks it, or OwnerLabels does not name it)", k, applied.Labels)
		}
	}
	apply("steady", 1)

	// The owner moved: its children follow it.
	w.Labels[shard] = "replica-b"
	patch, err := f.resource.Plan(ctx, w, false)
	if err != nil {
		t.Fatal(err)
	}
	update, ok := patch.UpdateChange()
	if !ok {
		t.Fatal("the owner's new shard label gives no update")
	}
	if got, want := strings.Join(update.(child.Changes).Describe(), "\n"), `deployment demo/web: metadata.labels["shard.operatorkit.io/ring"] "replica-a" → "replica-b"`; got != want {
		t.Errorf("update description = %q, want %q", got, want)
	}
	if applied = apply("moved", 2); applied.Labels[shard] != "replica-b" {
		t.Errorf("moved child's %s = %q, want replica-b", shard, applied.Labels[shard])
	}
	apply("steady after the move", 2)

	// The owner's value wins over Desired's.
	desiredShard = "elsewhere"
	apply("Desired sets the key", 2)
	if applied = f.client.objs["demo/web"]; applied.Labels[shard] != "replica-b" {
		t.Errorf("child's %s = %q, want the owner's replica-b", shard, applied.Labels[shard])
	}
}

func TestOwnerLabelsValidated(t *testing.T) {
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{"not a key"}, `OwnerLabels[0] "not a key" is not a label key`},
		{[]string{"team", child.LabelManagedBy}, `OwnerLabels[1] "app.kubernetes.io/managed-by" is LabelManagedBy`},
		{[]string{"team", "team"}, `OwnerLabels[1] "team" is given twice`},
	} {
		client := newFakeClient[appsv1.Deployment]()
		_, err := child.New(child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: informertest.New(),
			Desired:     func(context.Context, *corev1.Secret) (*appsv1.Deployment, error) { return nil, nil },
			OwnerLabels: tc.keys})
		if !errors.Is(err, child.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OwnerLabels %q: New() error = %v, want %q", tc.keys, err, tc.want)
		}
	}
}

// TestChildTheCacheWouldNotSelect: a child whose labels, as written, the
// Cache's selector does not select (a sharded Cache, and no OwnerLabels to
// copy the owner's shard label) is a permanent error naming the selector,
// and nothing is applied; with the owner's label copied it is applied.
func TestChildTheCacheWouldNotSelect(t *testing.T) {
	const shard = "shard.operatorkit.io/ring"
	sel, err := labels.Parse("app.kubernetes.io/managed-by=test-operator," + shard + "=a")
	if err != nil {
		t.Fatal(err)
	}
	w := owner()
	w.Labels = map[string]string{shard: "a"}
	for _, ownerLabels := range [][]string{nil, {shard}} {
		client := newFakeClient[appsv1.Deployment]()
		r, err := child.New(child.Config[*corev1.Secret, *appsv1.Deployment]{
			Name: "deployment", Client: client.For,
			Cache:        selectingCache{Informer: informertest.New(), selector: sel},
			FieldManager: "test-operator",
			Desired: func(context.Context, *corev1.Secret) (*appsv1.Deployment, error) {
				return desiredDeployment(1, "nginx"), nil
			},
			OwnerLabels: ownerLabels,
		})
		if err != nil {
			t.Fatal(err)
		}
		err = r.EnsureCreated(reconcileCtx(), w)
		if ownerLabels == nil {
			if !errors.Is(err, child.ErrInvalidChild) || !retry.IsPermanent(err) || !strings.Contains(err.Error(), sel.String()) || len(client.applies) != 0 {
				t.Errorf("without OwnerLabels: EnsureCreated() = %v with %d applies, want a permanent ErrInvalidChild naming the selector %q and none", err, len(client.applies), sel)
			}
			continue
		}
		if err != nil || len(client.applies) != 1 || client.objs["demo/web"].Labels[shard] != "a" {
			t.Errorf("with OwnerLabels: EnsureCreated() = %v, %d applies; want the child applied with %s=a", err, len(client.applies), shard)
		}
	}
}

// balancedWrites is a Writes and DeleteWrites that counts the writes begun
// and those whose func was called.
type balancedWrites struct{ begun, settled int }

func (w *balancedWrites) Begin(schema.GroupResource, string, string) func(metav1.Object, error) {
	w.begun++
	return func(metav1.Object, error) { w.settled++ }
}

func (w *balancedWrites) BeginDelete(types.UID) func(error) {
	w.begun++
	return func(error) { w.settled++ }
}

// panickingClient is a Client whose Patch and Delete panic.
type panickingClient struct{}

func (panickingClient) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*appsv1.Deployment, error) {
	panic("patch")
}

func (panickingClient) Delete(context.Context, string, metav1.DeleteOptions) error { panic("delete") }

// TestWritesToldOfAPanickingWrite: a write whose client panics (the
// Framework recovers the panic and retries) is still settled with Writes:
// OwnWrites would otherwise hold the child's watch events for ever, and
// wake its owner for none of them again.
func TestWritesToldOfAPanickingWrite(t *testing.T) {
	writes := &balancedWrites{}
	f := newFixture(t, func(c *child.Config[*corev1.Secret, *appsv1.Deployment]) {
		c.Client = func(string) child.Client[*appsv1.Deployment] { return panickingClient{} }
		c.Writes = writes
		c.Resource = schema.GroupResource{Group: "apps", Resource: "deployments"}
	})
	ensure := func(f func() error) (panicked bool) {
		defer func() { panicked = recover() != nil }()
		_ = f()
		return false
	}
	ctx := context.Background()
	if !ensure(func() error { return f.resource.EnsureCreated(ctx, owner()) }) {
		t.Fatal("EnsureCreated did not panic")
	}
	cur := desiredDeployment(1, "x")
	cur.Namespace, cur.UID = "demo", "child-uid"
	cur.Labels[child.LabelManagedBy] = "test-operator"
	cur.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "web", UID: "owner-uid", Controller: new(true)}}
	_ = f.cache.Add(cur)
	gone := owner()
	gone.DeletionTimestamp = &metav1.Time{}
	if !ensure(func() error { return f.resource.EnsureDeleted(ctx, gone) }) {
		t.Fatal("EnsureDeleted did not panic")
	}
	if writes.begun != 2 || writes.settled != 2 {
		t.Fatalf("writes begun %d, settled %d; want 2 and 2", writes.begun, writes.settled)
	}
}

// gvrCache is a cache that names the resource it holds, as
// informer.Informer does.
type gvrCache struct {
	*informertest.Informer
	gvr schema.GroupVersionResource
}

func (c gvrCache) GVR() schema.GroupVersionResource { return c.gvr }

// TestCacheOfAnotherGroup: a Cache of another API group than the children's
// kind (an informer of "cronjobs" in the core group, for a CronJob of group
// batch) fails New naming both, instead of a resource that applies its
// child in every reconciliation, never sees it, and never deletes it; a
// Cache of the children's group passes.
func TestCacheOfAnotherGroup(t *testing.T) {
	for _, tc := range []struct {
		gvr     schema.GroupVersionResource
		wantErr bool
	}{
		{gvr: appsv1.SchemeGroupVersion.WithResource("deployments")},
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1beta2", Resource: "deployments"}},
		{gvr: corev1.SchemeGroupVersion.WithResource("deployments"), wantErr: true},
		{gvr: corev1.SchemeGroupVersion.WithResource("configmaps"), wantErr: true},
	} {
		t.Run(tc.gvr.String(), func(t *testing.T) {
			_, err := child.New(child.Config[*corev1.Secret, *appsv1.Deployment]{
				Name: "deployment", Client: newFakeClient[appsv1.Deployment]().For,
				Cache: gvrCache{Informer: informertest.New(), gvr: tc.gvr},
				Desired: func(context.Context, *corev1.Secret) (*appsv1.Deployment, error) {
					return desiredDeployment(1, "nginx"), nil
				},
			})
			switch {
			case tc.wantErr && (!errors.Is(err, child.ErrInvalidConfig) || !strings.Contains(err.Error(), `Cache holds "`+tc.gvr.Resource+`" of group ""`) || !strings.Contains(err.Error(), `Deployment of group "apps"`)):
				t.Errorf("New() error = %v, want ErrInvalidConfig naming the Cache's resource and group and the children's", err)
			case !tc.wantErr && err != nil:
				t.Errorf("New() error = %v, want none", err)
			}
		})
	}
}
