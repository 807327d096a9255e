package webapp

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/resource/crud"
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

// parts returns the patch parts as actions, "" for an unset part.
func parts(p *crud.Patch) (create, update, del *ChildChange) {
	if c, ok := p.CreateChange(); ok {
		create = c.(*ChildChange)
	}
	if c, ok := p.UpdateChange(); ok {
		update = c.(*ChildChange)
	}
	if c, ok := p.DeleteChange(); ok {
		del = c.(*ChildChange)
	}
	return create, update, del
}

func paths(c *ChildChange) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, f := range c.Fields {
		out = append(out, f.Path)
	}
	return out
}

func TestConfigMapPatch(t *testing.T) {
	ctx := context.Background()
	w := testWebApp()
	ops := &configMapOps{}
	desired := DesiredConfigMap(w)
	drifted := desired.DeepCopy()
	drifted.Data[ContentKey] = "old"
	drifted.Labels["extra"] = "kept" // somebody else's label: not compared
	orphan := desired.DeepCopy()
	orphan.OwnerReferences = nil

	tests := []struct {
		name       string
		current    *corev1.ConfigMap
		wantCreate bool
		wantUpdate []string
	}{
		{name: "missing: create", current: nil, wantCreate: true},
		{name: "equal: nothing", current: desired.DeepCopy()},
		{name: "content drifted: update", current: drifted, wantUpdate: []string{`data["index.html"]`}},
		{name: "no owner: update", current: orphan, wantUpdate: []string{"metadata.ownerReferences"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ops.NewUpdatePatch(ctx, w, tt.current, desired)
			if err != nil {
				t.Fatal(err)
			}
			create, update, del := parts(p)
			if (create != nil) != tt.wantCreate || del != nil {
				t.Fatalf("create = %v, delete = %v; want create %v, no delete", create, del, tt.wantCreate)
			}
			if got := strings.Join(paths(update), ","); got != strings.Join(tt.wantUpdate, ",") {
				t.Fatalf("update fields = %q, want %q", got, strings.Join(tt.wantUpdate, ","))
			}
			if create != nil && (create.Action != ActionCreate || create.Name != "site" || create.object == nil) {
				t.Fatalf("create change = %+v", create)
			}
		})
	}

	t.Run("delete patch", func(t *testing.T) {
		current := desired.DeepCopy()
		current.UID = "child-uid"
		p, err := ops.NewDeletePatch(ctx, w, current, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _, del := parts(p)
		if del == nil || del.uid != "child-uid" || del.Action != ActionDelete {
			t.Fatalf("delete change = %+v", del)
		}
		if opts := deleteOptions(del); opts.Preconditions == nil || *opts.Preconditions.UID != "child-uid" {
			t.Fatalf("delete options = %+v, want a UID precondition", opts)
		}
	})
	t.Run("delete patch leaves unmanaged objects alone", func(t *testing.T) {
		current := desired.DeepCopy()
		delete(current.Labels, LabelManagedBy)
		p, err := ops.NewDeletePatch(ctx, w, current, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, del := parts(p); del != nil {
			t.Fatalf("delete change of an unmanaged ConfigMap = %+v", del)
		}
	})
	t.Run("nothing to delete", func(t *testing.T) {
		p, err := ops.NewDeletePatch(ctx, w, (*corev1.ConfigMap)(nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		if c, u, d := parts(p); c != nil || u != nil || d != nil {
			t.Fatal("patch for a missing ConfigMap is not empty")
		}
	})
	t.Run("wrong state type", func(t *testing.T) {
		if _, err := ops.NewUpdatePatch(ctx, w, &appsv1.Deployment{}, desired); err == nil {
			t.Fatal("no error for a Deployment as the current ConfigMap")
		}
	})
}

func TestDeploymentPatch(t *testing.T) {
	ctx := context.Background()
	w := testWebApp()
	ops := &deploymentOps{}
	r1 := DesiredDeployment(w, Release1)
	r2 := DesiredDeployment(w, Release2)

	// What the API server returns has defaults and fields of other writers.
	served := func(d *appsv1.Deployment) *appsv1.Deployment {
		c := d.DeepCopy()
		c.UID = "dep-uid"
		c.Spec.Template.Labels["pod-template-hash"] = "abc"
		c.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
		c.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
		c.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		c.Spec.Template.Spec.Containers = append(c.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "envoy"})
		return c
	}
	scaled := served(r1)
	three := int32(3)
	scaled.Spec.Replicas = &three
	newImage := served(r1)
	newImage.Spec.Template.Spec.Containers[0].Image = "nginx:1.26"

	tests := []struct {
		name       string
		current    *appsv1.Deployment
		desired    *appsv1.Deployment
		wantCreate bool
		wantUpdate []string
	}{
		{name: "missing: create", desired: r1, wantCreate: true},
		{name: "served with defaults: nothing", current: served(r1), desired: r1},
		{name: "scaled by someone: update", current: scaled, desired: r1, wantUpdate: []string{"spec.replicas"}},
		{name: "other image: update", current: newImage, desired: r1, wantUpdate: []string{"spec.template.spec.containers[web].image"}},
		{name: "release 1 to 2", current: served(r1), desired: r2, wantUpdate: []string{
			`spec.template.metadata.labels["example.operatorkit.io/release"]`,
			`spec.template.metadata.annotations["example.operatorkit.io/service"]`,
		}},
		{name: "release 2 to 1", current: served(r2), desired: r1, wantUpdate: []string{
			`spec.template.metadata.labels["example.operatorkit.io/release"]`,
			`spec.template.metadata.annotations["example.operatorkit.io/service"]`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ops.NewUpdatePatch(ctx, w, tt.current, tt.desired)
			if err != nil {
				t.Fatal(err)
			}
			create, update, del := parts(p)
			if (create != nil) != tt.wantCreate || del != nil {
				t.Fatalf("create = %v, delete = %v; want create %v, no delete", create, del, tt.wantCreate)
			}
			if got := strings.Join(paths(update), ","); got != strings.Join(tt.wantUpdate, ",") {
				t.Fatalf("update fields = %q, want %q", got, strings.Join(tt.wantUpdate, ","))
			}
		})
	}
}

func TestDesiredDeployment(t *testing.T) {
	w := testWebApp()
	w.Spec.Replicas = nil
	d := DesiredDeployment(w, Release1)
	if *d.Spec.Replicas != 1 {
		t.Fatalf("replicas = %d, want the default 1", *d.Spec.Replicas)
	}
	if _, ok := d.Spec.Template.Labels[LabelRelease]; ok {
		t.Fatal("release 1 pod template has the release label")
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Fatalf("selector %s=%s does not match the pod template", k, v)
		}
	}
	d2 := DesiredDeployment(w, Release2)
	if d2.Spec.Template.Labels[LabelRelease] != Release2 || d2.Spec.Template.Annotations[AnnotationService] != w.Name {
		t.Fatalf("release 2 pod template = %v %v", d2.Spec.Template.Labels, d2.Spec.Template.Annotations)
	}
	if ref := d.OwnerReferences[0]; ref.UID != w.UID || ref.Controller == nil || !*ref.Controller || ref.BlockOwnerDeletion != nil {
		t.Fatalf("owner reference = %+v", ref)
	}
}

func TestServicePatch(t *testing.T) {
	ctx := context.Background()
	w := testWebApp()
	desired := DesiredService(w)
	served := desired.DeepCopy()
	served.UID = "svc-uid"
	served.Spec.ClusterIP = "10.0.0.7"
	served.Spec.SessionAffinity = corev1.ServiceAffinityNone
	otherPort := served.DeepCopy()
	otherPort.Spec.Ports[0].Port = 8080

	enabled, disabled := &serviceOps{enabled: true}, &serviceOps{}
	tests := []struct {
		name       string
		ops        *serviceOps
		current    *corev1.Service
		wantCreate bool
		wantUpdate []string
		wantDelete bool
	}{
		{name: "release 2, missing: create", ops: enabled, wantCreate: true},
		{name: "release 2, served: nothing", ops: enabled, current: served},
		{name: "release 2, port changed: update", ops: enabled, current: otherPort, wantUpdate: []string{"spec.ports[http]"}},
		{name: "release 1, none: nothing", ops: disabled},
		{name: "release 1, left over from release 2: delete", ops: disabled, current: served, wantDelete: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := tt.ops.GetDesiredState(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			p, err := tt.ops.NewUpdatePatch(ctx, w, tt.current, want)
			if err != nil {
				t.Fatal(err)
			}
			create, update, del := parts(p)
			if (create != nil) != tt.wantCreate || (del != nil) != tt.wantDelete {
				t.Fatalf("create = %v, delete = %v; want %v, %v", create, del, tt.wantCreate, tt.wantDelete)
			}
			if got := strings.Join(paths(update), ","); got != strings.Join(tt.wantUpdate, ",") {
				t.Fatalf("update fields = %q, want %q", got, strings.Join(tt.wantUpdate, ","))
			}
		})
	}
}

func TestDesiredStateOfInvalidAndDeletedObjects(t *testing.T) {
	ctx := context.Background()
	bad := testWebApp()
	bad.Spec.Image = "Not An Image"
	for _, ops := range []crud.Ops{&configMapOps{}, &deploymentOps{}, &serviceOps{enabled: true}} {
		_, err := ops.GetDesiredState(ctx, bad)
		if !errors.Is(err, ErrInvalidSpec) || !retry.IsPermanent(err) {
			t.Fatalf("%s: desired state of an invalid spec: err = %v, want a permanent ErrInvalidSpec", ops.Name(), err)
		}
		if reason, _ := conditioncontext.ReasonOf(err); reason != ReasonInvalidSpec {
			t.Fatalf("%s: condition reason of an invalid spec = %q, want %s", ops.Name(), reason, ReasonInvalidSpec)
		}
		// Deleting an object with an invalid spec must still work.
		deleted := bad.DeepCopy()
		now := metav1.Now()
		deleted.DeletionTimestamp = &now
		if _, err := ops.GetDesiredState(ctx, deleted); err != nil {
			t.Fatalf("%s: desired state of a deleted object with an invalid spec: %v", ops.Name(), err)
		}
	}
}

func TestChildChangeDescribe(t *testing.T) {
	w := testWebApp()
	ops := &deploymentOps{}
	p, err := ops.NewUpdatePatch(context.Background(), w, DesiredDeployment(w, Release1), DesiredDeployment(w, Release2))
	if err != nil {
		t.Fatal(err)
	}
	_, update, _ := parts(p)
	got := strings.Join(update.Describe(), "\n")
	want := `~ update Deployment ns/site
    spec.template.metadata.labels["example.operatorkit.io/release"]: (none) -> "2"
    spec.template.metadata.annotations["example.operatorkit.io/service"]: (none) -> "site"`
	if got != want {
		t.Fatalf("Describe() =\n%s\nwant\n%s", got, want)
	}
	if s := show(strings.Repeat("x", 100)); !strings.Contains(s, "(100 bytes)") {
		t.Fatalf("show(long string) = %s", s)
	}
}

func TestApplyPayload(t *testing.T) {
	body, err := applyPayload(DesiredDeployment(testWebApp(), Release1), deploymentGVK)
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	for _, want := range []string{`"apiVersion":"apps/v1"`, `"kind":"Deployment"`, `"image":"nginx:1.27"`} {
		if !strings.Contains(s, want) {
			t.Fatalf("apply body lacks %s: %s", want, s)
		}
	}
	for _, unwanted := range []string{"creationTimestamp", `"status"`, `"strategy"`} {
		if strings.Contains(s, unwanted) {
			t.Fatalf("apply body has %s, which the operator does not own: %s", unwanted, s)
		}
	}
}

func TestOwnerKey(t *testing.T) {
	w := testWebApp()
	cm := DesiredConfigMap(w)
	if key, ok := ownerKey(cm); !ok || key != "ns/site" {
		t.Fatalf("ownerKey(child) = %q, %v", key, ok)
	}
	cm.OwnerReferences = nil
	if key, ok := ownerKey(cm); !ok || key != "ns/site" {
		t.Fatalf("ownerKey(child by label) = %q, %v", key, ok)
	}
	cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", Controller: ptr(true)}}
	if _, ok := ownerKey(cm); ok {
		t.Fatal("a child of a ReplicaSet maps to a WebApp")
	}
	if _, ok := ownerKey(&corev1.ConfigMap{}); ok {
		t.Fatal("an unlabelled ConfigMap maps to a WebApp")
	}
}

func ptr[T any](v T) *T { return &v }
