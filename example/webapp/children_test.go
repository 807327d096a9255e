package webapp

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

func testWebApp() *v1alpha1.WebApp {
	n := int32(2)
	return &v1alpha1.WebApp{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "ns", UID: types.UID("uid-1"), Generation: 3, ResourceVersion: "41"},
		Spec:       v1alpha1.WebAppSpec{Image: "nginx:1.27", Replicas: &n, Content: "<h1>hi</h1>"},
	}
}

// testOperator is the operator's real wiring on an API server that is
// never called: the children's caches are filled by hand, and plans show
// what a reconciliation would do.
type testOperator struct {
	*Operator
	caches map[string]*operator.SharedInformer // by resource
}

func newTestOperator(t testing.TB) *testOperator {
	t.Helper()
	op, err := operator.New(operator.Config{RESTConfig: &rest.Config{Host: "http://127.0.0.1:1"}, Name: DefaultName})
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{Operator: op})
	if err != nil {
		t.Fatal(err)
	}
	caches := map[string]*operator.SharedInformer{}
	for _, gvr := range []string{"configmaps", "deployments", "services"} {
		gv := corev1.SchemeGroupVersion
		if gvr == "deployments" {
			gv = appsv1.SchemeGroupVersion
		}
		// The same key as New's: the shared informer New created.
		if caches[gvr], err = op.Informer(informer.Config{GVR: gv.WithResource(gvr), LabelSelector: LabelManagedBy + "=" + ManagedBy}); err != nil {
			t.Fatal(err)
		}
	}
	return &testOperator{Operator: w, caches: caches}
}

// served returns obj as the API server would hold it after the operator
// applied it for w: with the managed-by label and the owner reference.
func served[T interface {
	runtime.Object
	metav1.Object
}](w *v1alpha1.WebApp, obj T) T {
	obj.SetNamespace(w.Namespace)
	obj.SetUID(types.UID("child-of-" + w.Name))
	labels := obj.GetLabels()
	labels[LabelManagedBy] = ManagedBy
	yes := true
	obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind, Name: w.Name, UID: w.UID, Controller: &yes, BlockOwnerDeletion: &yes}})
	return obj
}

func (o *testOperator) add(t *testing.T, resource string, obj runtime.Object) {
	t.Helper()
	if err := o.caches[resource].SharedIndexInformer().GetIndexer().Add(obj); err != nil {
		t.Fatal(err)
	}
}

// plan returns the plan of the resource named resource for w under
// release, as lines of its changes, "create: ..." or "update: ..." or
// "delete: ...".
func (o *testOperator) plan(t *testing.T, w *v1alpha1.WebApp, release, resource string) []string {
	t.Helper()
	p, err := o.Framework().Plan(context.Background(), w, "release-"+release)
	if err != nil {
		t.Fatalf("Plan() error = %v", err)
	}
	var lines []string
	for _, r := range p.Resources {
		if r.Resource != resource {
			continue
		}
		for _, part := range []struct {
			name   string
			change any
		}{{"create", r.Create}, {"update", r.Update}, {"delete", r.Delete}} {
			if part.change != nil {
				for _, l := range framework.DescribeChange(part.change) {
					lines = append(lines, part.name+": "+l)
				}
			}
		}
	}
	return lines
}

func desired[T any](t *testing.T, f func(context.Context, *v1alpha1.WebApp) (T, error), w *v1alpha1.WebApp) T {
	t.Helper()
	obj, err := f(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestConfigMapPlan(t *testing.T) {
	w := testWebApp()
	o := newTestOperator(t)
	if got := o.plan(t, w, Release1, ConfigMapName); len(got) == 0 || !strings.HasPrefix(got[0], "create: ") {
		t.Fatalf("missing ConfigMap: plan %q, want a create", got)
	}
	cm := served(w, desired(t, DesiredConfigMap, w))
	cm.Labels["extra"] = "kept" // somebody else's label: not compared
	o.add(t, "configmaps", cm)
	if got := o.plan(t, w, Release1, ConfigMapName); len(got) != 0 {
		t.Fatalf("ConfigMap as applied: plan %q, want none", got)
	}
	drifted := cm.DeepCopy()
	drifted.Data[ContentKey] = "old"
	o.add(t, "configmaps", drifted)
	want := `update: configmap ns/site: data["index.html"] "old" → "<h1>hi</h1>"`
	if got := o.plan(t, w, Release1, ConfigMapName); strings.Join(got, "\n") != want {
		t.Fatalf("drifted ConfigMap: plan %q, want %q", got, want)
	}
}

func TestDeploymentPlan(t *testing.T) {
	w := testWebApp()
	// What the API server returns has defaults and fields of other writers.
	serve := func(release string) *appsv1.Deployment {
		d := served(w, desired(t, DesiredDeployment(release), w))
		d.Spec.Template.Labels["pod-template-hash"] = "abc"
		c := &d.Spec.Template.Spec.Containers[0]
		c.ImagePullPolicy, c.TerminationMessagePath = corev1.PullIfNotPresent, "/dev/termination-log"
		d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "envoy"})
		return d
	}
	scaled := serve(Release1)
	three := int32(3)
	scaled.Spec.Replicas = &three
	newImage := serve(Release1)
	newImage.Spec.Template.Spec.Containers[0].Image = "nginx:1.26"
	tests := []struct {
		name    string
		current *appsv1.Deployment
		release string
		want    []string // substrings of the plan's lines, in order
	}{
		{name: "missing: create", release: Release1, want: []string{"create: deployment ns/site: "}},
		{name: "served with defaults: nothing", current: serve(Release1), release: Release1},
		{name: "scaled by someone: update", current: scaled, release: Release1, want: []string{"update: deployment ns/site: spec.replicas 3 → 2"}},
		{name: "other image: update", current: newImage, release: Release1, want: []string{`spec.template.spec.containers[web].image "nginx:1.26" → "nginx:1.27"`}},
		{name: "release 1 to 2", current: serve(Release1), release: Release2, want: []string{
			`spec.template.metadata.annotations["example.operatorkit.io/service"] (none) → "site"`,
			`spec.template.metadata.labels["example.operatorkit.io/release"] "1" → "2"`,
		}},
		// The apply of release 1 then drops the annotation too (server-side
		// apply removes the fields its manager stops applying).
		{name: "release 2 to 1", current: serve(Release2), release: Release1, want: []string{
			`spec.template.metadata.labels["example.operatorkit.io/release"] "2" → "1"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newTestOperator(t)
			if tt.current != nil {
				o.add(t, "deployments", tt.current)
			}
			got := o.plan(t, w, tt.release, DeploymentName)
			if len(tt.want) == 0 && len(got) != 0 || len(tt.want) > 0 && len(got) == 0 {
				t.Fatalf("plan %q, want %q", got, tt.want)
			}
			if len(tt.want) > 1 && len(got) != len(tt.want) {
				t.Fatalf("plan %q, want %q", got, tt.want)
			}
			for i, want := range tt.want {
				if !strings.Contains(got[i], want) {
					t.Fatalf("plan %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestDesiredDeployment(t *testing.T) {
	w := testWebApp()
	w.Spec.Replicas = nil
	d := desired(t, DesiredDeployment(Release1), w)
	if *d.Spec.Replicas != 1 {
		t.Fatalf("replicas = %d, want the default 1", *d.Spec.Replicas)
	}
	if d.Spec.Template.Labels[LabelRelease] != Release1 || d.Spec.Template.Annotations != nil {
		t.Fatalf("release 1 pod template = %v %v, want release label 1 and no annotation", d.Spec.Template.Labels, d.Spec.Template.Annotations)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Fatalf("selector %s=%s does not match the pod template", k, v)
		}
	}
	d2 := desired(t, DesiredDeployment(Release2), w)
	if d2.Spec.Template.Labels[LabelRelease] != Release2 || d2.Spec.Template.Annotations[AnnotationService] != w.Name {
		t.Fatalf("release 2 pod template = %v %v", d2.Spec.Template.Labels, d2.Spec.Template.Annotations)
	}
}

func TestServicePlan(t *testing.T) {
	w := testWebApp()
	svc := served(w, desired(t, DesiredService(Release2), w))
	svc.Spec.ClusterIP = "10.0.0.7"
	svc.Spec.SessionAffinity = corev1.ServiceAffinityNone
	otherPort := svc.DeepCopy()
	otherPort.Spec.Ports[0].Port = 8080
	tests := []struct {
		name    string
		release string
		current *corev1.Service
		want    string // prefix of the first line; "" for no change
	}{
		{name: "release 2, missing: create", release: Release2, want: "create: service ns/site: "},
		{name: "release 2, served: nothing", release: Release2, current: svc},
		{name: "release 2, port changed: update", release: Release2, current: otherPort, want: "update: service ns/site: spec.ports[80]"},
		{name: "release 1, none: nothing", release: Release1},
		{name: "release 1, left over from release 2: delete", release: Release1, current: svc, want: "delete: service ns/site: delete (uid child-of-site)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newTestOperator(t)
			if tt.current != nil {
				o.add(t, "services", tt.current)
			}
			got := o.plan(t, w, tt.release, ServiceName)
			if tt.want == "" && len(got) != 0 || tt.want != "" && (len(got) == 0 || !strings.HasPrefix(got[0], tt.want)) {
				t.Fatalf("plan %q, want a first line starting with %q", got, tt.want)
			}
		})
	}
}

func TestDesiredOfInvalidAndDeletedObjects(t *testing.T) {
	bad := testWebApp()
	bad.Spec.Image = "Not An Image"
	for name, f := range map[string]func() error{
		ConfigMapName:  func() error { _, err := DesiredConfigMap(context.Background(), bad); return err },
		DeploymentName: func() error { _, err := DesiredDeployment(Release1)(context.Background(), bad); return err },
		ServiceName:    func() error { _, err := DesiredService(Release2)(context.Background(), bad); return err },
	} {
		err := f()
		if !errors.Is(err, ErrInvalidSpec) || !retry.IsPermanent(err) {
			t.Fatalf("%s: desired state of an invalid spec: err = %v, want a permanent ErrInvalidSpec", name, err)
		}
		if reason, _ := conditioncontext.ReasonOf(err); reason != ReasonInvalidSpec {
			t.Fatalf("%s: condition reason of an invalid spec = %q, want %s", name, reason, ReasonInvalidSpec)
		}
	}
	// Deleting an object with an invalid spec must still work: its
	// children are deleted.
	o := newTestOperator(t)
	o.add(t, "configmaps", served(bad, desired(t, DesiredConfigMap, testWebApp())))
	deleted := bad.DeepCopy()
	now := metav1.Now()
	deleted.DeletionTimestamp = &now
	deleted.Finalizers = append(deleted.Finalizers, o.Framework().Finalizer()) // else its delete chain ran already
	p, err := o.Framework().Plan(context.Background(), deleted, "")
	if err != nil || len(p.Resources) != 3 || p.Resources[0].Delete == nil {
		t.Fatalf("plan of a deleted object with an invalid spec = %+v, %v; want the ConfigMap's delete", p, err)
	}
}
