package child_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
)

// TestTwoResourcesOfOneKindInOneSet: two child resources that keep
// Deployments of one owner under the same ManagedBy would each delete the
// other's Deployment (not in its desired state) in every reconciliation;
// the resource set refuses them, naming both and the way out, and takes
// them with a ManagedBy each.
func TestTwoResourcesOfOneKindInOneSet(t *testing.T) {
	client := newFakeClient[appsv1.Deployment]()
	cache := informertest.New()
	deployment := func(name, managedBy string) resource.Interface {
		r, err := child.New(child.Config[*corev1.Secret, *appsv1.Deployment]{
			Name: name, Client: client.For, Cache: cache, FieldManager: "op", ManagedBy: managedBy,
			Desired: func(context.Context, *corev1.Secret) (*appsv1.Deployment, error) {
				d := desiredDeployment(1, "nginx")
				d.Name = name
				return d, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	handles := func(any) bool { return true }
	wrappedWorker, err := retry.New(retry.Config{Resource: deployment("worker", "")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = router.NewResourceSet(router.ResourceSetConfig{Handles: handles, Resources: []resource.Interface{deployment("web", ""), wrappedWorker}})
	want := "Resources[0] (web) and Resources[1] (worker) both keep apps/Deployment children labelled app.kubernetes.io/managed-by=op"
	if !errors.Is(err, router.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
		t.Fatalf("NewResourceSet() error = %v, want ErrInvalidConfig with %q", err, want)
	}
	if _, err := router.NewResourceSet(router.ResourceSetConfig{Handles: handles, Resources: []resource.Interface{deployment("web", "op-web"), deployment("worker", "op-worker")}}); err != nil {
		t.Errorf("NewResourceSet() with a ManagedBy each = %v, want no error", err)
	}
}

// TestSecretValuesHidden: a Change of a Secret child names the data fields
// that differ but not their values, which plans, the debug endpoint and
// logs show.
func TestSecretValuesHidden(t *testing.T) {
	client := newFakeClient[corev1.Secret]()
	ops, err := child.NewOps(child.Config[*corev1.Secret, *corev1.Secret]{
		Name: "secret", Client: client.For, Cache: informertest.New(), FieldManager: "op",
		Desired: func(context.Context, *corev1.Secret) (*corev1.Secret, error) {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{"password": "hunter2-SECRET"}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cur, err := ops.GetCurrentState(ctx, owner())
	if err != nil {
		t.Fatal(err)
	}
	des, err := ops.GetDesiredState(ctx, owner())
	if err != nil {
		t.Fatal(err)
	}
	patch, err := ops.NewUpdatePatch(ctx, owner(), cur, des)
	if err != nil {
		t.Fatal(err)
	}
	create, _ := patch.CreateChange()
	lines := strings.Join(create.(child.Changes).Describe(), "\n")
	if strings.Contains(lines, "hunter2") || !strings.Contains(lines, "stringData[password]") {
		t.Errorf("the create of a Secret describes itself as\n%s\nwant the field named and its value hidden", lines)
	}
}

// TestSecretStringDataIsNoDrift: a Secret whose desired state sets
// stringData is compared with the data the API server made of it: no write
// while data holds those values, a write when one of them differs.
func TestSecretStringDataIsNoDrift(t *testing.T) {
	client := newFakeClient[corev1.Secret]()
	cache := informertest.New()
	r, err := child.New(child.Config[*corev1.Secret, *corev1.Secret]{
		Name: "secret", Client: client.For, Cache: cache, FieldManager: "op",
		Desired: func(context.Context, *corev1.Secret) (*corev1.Secret, error) {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
				StringData: map[string]string{"password": "hunter2", "user": "admin"},
				Data:       map[string][]byte{"user": []byte("overridden"), "token": []byte("t")}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	// The API server's conversion: stringData merged into data, over it.
	stored := client.objs["demo/creds"].DeepCopy()
	for k, v := range stored.StringData {
		stored.Data[k] = []byte(v)
	}
	stored.StringData = nil
	stored.Type = corev1.SecretTypeOpaque
	_ = cache.Add(stored)
	if patch, err := r.Plan(ctx, owner(), false); err != nil || patch != nil {
		t.Fatalf("Plan() of the stored secret = %v, %v; want no patch", patch, err)
	}
	drifted := stored.DeepCopy()
	drifted.Data["password"] = []byte("other")
	_ = cache.Update(drifted)
	patch, err := r.Plan(ctx, owner(), false)
	if err != nil {
		t.Fatal(err)
	}
	update, ok := patch.UpdateChange()
	if !ok {
		t.Fatalf("Plan() of a changed password = %v, want an update", patch)
	}
	if lines := strings.Join(update.(child.Changes).Describe(), "\n"); strings.Contains(lines, "hunter2") || strings.Contains(lines, "other") || !strings.Contains(lines, "password") {
		t.Errorf("the update describes itself as\n%s\nwant the password named and its values hidden", lines)
	}
}
